#include "serve/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "common/error.h"
#include "serve/batching.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "spec/yaml_reader.h"

namespace calc::serve {

namespace {

constexpr std::array<const char*, coefficients::size> kKeys = {"gemm_compute",
                                                               "gemm_memory",
                                                               "moe_compute",
                                                               "moe_memory",
                                                               "attention_compute",
                                                               "attention_memory",
                                                               "comm_bandwidth",
                                                               "collective_latency_us",
                                                               "step_overhead_ms",
                                                               "request_overhead_us",
                                                               "request_latency_ms",
                                                               "burst_share",
                                                               "gemm_half_rows",
                                                               "cohort_share",
                                                               "layer_latency_us",
                                                               "moe_layer_latency_us",
                                                               "prefill_layer_latency_us",
                                                               "mla_prefill_layer_latency_us",
                                                               "mla_layer_latency_us"};

std::vector<std::string> text_list(const YAML::Node& n, const std::string& path,
                                   const std::string& file) {
  if (!n.IsSequence()) throw spec_error(location_of(n, file), path, "expected a list of names");
  std::vector<std::string> out;
  for (const YAML::Node& item : n) {
    if (!item.IsScalar()) throw spec_error(location_of(item, file), path, "expected a name");
    out.push_back(item.Scalar());
  }
  return out;
}

/// A list of distinct non-empty names; with `gpus`, each a GPU of the catalogue (a misspelt
/// one would read as a GPU never measured).
std::vector<std::string> name_set(const YAML::Node& n, const std::string& path,
                                  const std::string& file, bool gpus) {
  std::vector<std::string> out = text_list(n, path, file);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const YAML::Node item = n[i];
    if (out[i].empty()) throw spec_error(location_of(item, file), path, "an empty name");
    if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), out[i]) !=
        out.begin() + static_cast<std::ptrdiff_t>(i))
      throw spec_error(location_of(item, file), path, fmt::format("'{}' is listed twice", out[i]));
    if (gpus) {
      // The catalogue's own spelling: answers compare names as they are written.
      std::string name;
      try {
        if (out[i].find('/') == std::string::npos) name = find_gpu(out[i]).name;
      } catch (const spec_error& x) {
        throw spec_error(location_of(item, file), path, x.message());
      }
      if (name != out[i])
        throw spec_error(location_of(item, file), path,
                         fmt::format("'{}' is not a GPU of the catalogue as `calc gpus` names it{}",
                                     out[i], name.empty() ? "" : " ('" + name + "')"));
    }
  }
  return out;
}

double read_coefficient(yaml_map& m, std::size_t i) {
  YAML::Node n = m.required(kKeys[i]);
  double v = NAN;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
  }
  bool eff = coefficients::efficiency(i);
  double most = coefficients::upper_bound(i);
  // No overhead or latency of a step or a request is a million ms (or us): a larger one is a
  // typo, and it would carry the times it adds past what a double prints.
  constexpr double kMostTime = 1e6;
  if (!std::isfinite(most)) most = kMostTime;
  bool ok = std::isfinite(v) && (eff ? v > 0 && v <= 1 : v >= 0 && v <= most);
  if (!ok)
    m.fail(kKeys[i], eff ? "a fraction must be a number in (0, 1]"
                         : fmt::format("must be a number in [0, {:g}]", most));
  return v;
}

constexpr std::array<const char*, 5> kErrorKeys = {"rows", "tpot_median_pct", "tpot_p90_pct",
                                                   "ttft_median_pct", "ttft_p90_pct"};

/// An |error| summary: rows (>= 1) and four percentages.
error_stats read_error_stats(const YAML::Node& n, const std::string& path,
                             const std::string& file) {
  yaml_map m(n, path, file);
  // Each key named when missing: required() would suggest a sibling one edit away instead.
  for (const char* key : kErrorKeys)
    if (!m.has(key)) m.fail(key, "missing (an |error| summary gives rows and four percentages)");
  error_stats s;
  s.rows = m.integer("rows", 1);
  // A million percent is no fit anyone quotes: a larger figure is a typo, printed as one.
  constexpr double kMostPercent = 1e6;
  auto percent = [&](const char* key) {
    double v = NAN;
    try {
      v = m.required(key).as<double>();
    } catch (const YAML::Exception&) {
    }
    if (!(std::isfinite(v) && v >= 0 && v <= kMostPercent))
      m.fail(key, fmt::format("an |error| must be a percentage in [0, {:g}]", kMostPercent));
    return v;
  };
  s.tpot_median = percent("tpot_median_pct");
  s.tpot_p90 = percent("tpot_p90_pct");
  s.ttft_median = percent("ttft_median_pct");
  s.ttft_p90 = percent("ttft_p90_pct");
  if (s.tpot_p90 < s.tpot_median) m.fail("tpot_p90_pct", "below tpot_median_pct");
  if (s.ttft_p90 < s.ttft_median) m.fail("ttft_p90_pct", "below ttft_median_pct");
  m.finish({kErrorKeys.begin(), kErrorKeys.end()});
  return s;
}

held_out_error read_held_out(const YAML::Node& n, const std::string& path,
                             const std::string& file) {
  yaml_map m(n, path, file);
  held_out_error h;
  h.all = read_error_stats(m.required("all"), m.path_of("all"), file);
  if (YAML::Node e = m.optional("by_engine"); e.IsDefined()) {
    if (!e.IsMap())
      throw spec_error(location_of(e, file), m.path_of("by_engine"), "expected a mapping");
    for (const auto& kv : e) {
      std::string engine = key_text(kv.first, m.path_of("by_engine"), file);
      if (std::string why = unknown_engine(engine); !why.empty())
        throw spec_error(location_of(kv.first, file), m.path_of("by_engine") + "." + engine, why);
      h.by_engine[engine] =
          read_error_stats(kv.second, m.path_of("by_engine") + "." + engine, file);
      if (h.by_engine[engine].rows > h.all.rows)
        throw spec_error(
            location_of(kv.second, file), m.path_of("by_engine") + "." + engine,
            fmt::format("{} rows, more than all's {}", h.by_engine[engine].rows, h.all.rows));
    }
  }
  m.finish({"all", "by_engine"});
  return h;
}

std::string error_stats_yaml(const error_stats& s) {
  return fmt::format(
      "{{rows: {}, tpot_median_pct: {:.4g}, tpot_p90_pct: {:.4g}, ttft_median_pct: {:.4g}, "
      "ttft_p90_pct: {:.4g}}}",
      s.rows, s.tpot_median, s.tpot_p90, s.ttft_median, s.ttft_p90);
}

}  // namespace

std::array<double, coefficients::size> coefficients::values() const {
  return {gemm_compute,
          gemm_memory,
          moe_compute,
          moe_memory,
          attention_compute,
          attention_memory,
          comm_bandwidth,
          collective_latency_us,
          step_overhead_ms,
          request_overhead_us,
          request_latency_ms,
          burst_share,
          gemm_half_rows,
          cohort_share,
          layer_latency_us,
          moe_layer_latency_us,
          prefill_layer_latency_us,
          mla_prefill_layer_latency_us,
          mla_layer_latency_us};
}

void coefficients::set(const std::array<double, size>& v) {
  gemm_compute = v[0];
  gemm_memory = v[1];
  moe_compute = v[2];
  moe_memory = v[3];
  attention_compute = v[4];
  attention_memory = v[5];
  comm_bandwidth = v[6];
  collective_latency_us = v[7];
  step_overhead_ms = v[8];
  request_overhead_us = v[9];
  request_latency_ms = v[10];
  burst_share = v[11];
  gemm_half_rows = v[12];
  cohort_share = v[13];
  layer_latency_us = v[14];
  moe_layer_latency_us = v[15];
  prefill_layer_latency_us = v[16];
  mla_prefill_layer_latency_us = v[17];
  mla_layer_latency_us = v[18];
}

const char* coefficients::key(std::size_t i) { return kKeys[i]; }

bool coefficients::efficiency(std::size_t i) { return i < 7 || i == 11 || i == 13; }

double coefficients::upper_bound(std::size_t i) {
  if (efficiency(i)) return 1;
  return std::string_view(kKeys[i]) == "gemm_half_rows" ? max_gemm_half_rows
                                                         : std::numeric_limits<double>::infinity();
}

std::string calibration::family_of(const std::string& gpu) const {
  for (const auto& [family, names] : families)
    for (const std::string& n : names)
      if (n == gpu) return family;
  return "any";
}

void calibration::set_expert_popularity(double s, std::string why) {
  expert_zipf_s = s;
  expert_zipf_source = std::move(why);
  for (calibration_entry& e : entries) e.k.expert_zipf_s = s;
  defaults.expert_zipf_s = s;
}

const held_out_error* calibration::held_out_by(const std::string& grouping) const {
  auto it = held_out.find(grouping);
  return it == held_out.end() ? nullptr : &it->second;
}

const coefficients& calibration::lookup(const std::string& family, const std::string& engine,
                                        std::string* used) const {
  const std::pair<std::string, std::string> order[] = {
      {family, engine}, {"any", engine}, {family, "any"}, {"any", "any"}};
  for (const auto& [f, e] : order)
    for (const calibration_entry& c : entries)
      if (c.family == f && c.engine == e) {
        if (used) *used = f + "/" + e;
        return c.k;
      }
  if (used) *used = "built-in defaults";
  return defaults;
}

calibration read_calibration(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  yaml_map m(root, "", path);
  calibration c;
  c.file = path;
  c.source = m.text("source");
  if (YAML::Node f = m.optional("families"); f.IsDefined()) {
    if (!f.IsMap()) throw spec_error(location_of(f, path), "families", "expected a mapping");
    for (const auto& kv : f) {
      std::string name = key_text(kv.first, "families", path);
      c.families[name] = text_list(kv.second, "families." + name, path);
    }
  }
  if (YAML::Node f = m.optional("models"); f.IsDefined()) {
    if (!f.IsMap()) throw spec_error(location_of(f, path), "models", "expected a mapping");
    for (const auto& kv : f) {
      std::string id = key_text(kv.first, "models", path);
      if (!kv.second.IsScalar())
        throw spec_error(location_of(kv.second, path), "models." + id, "expected a model name");
      c.models[id] = kv.second.Scalar();
    }
  }
  if (YAML::Node f = m.optional("systems"); f.IsDefined()) {
    if (!f.IsMap()) throw spec_error(location_of(f, path), "systems", "expected a mapping");
    for (const auto& kv : f) {
      std::string system = key_text(kv.first, "systems", path);
      if (!kv.second.IsScalar())
        throw spec_error(location_of(kv.second, path), "systems." + system,
                         "expected a GPU name of the catalogue");
      c.systems[system] = kv.second.Scalar();
    }
  }
  if (YAML::Node f = m.optional("clients"); f.IsDefined()) {
    c.clients = read_clients(f, path);
    c.clients_given = true;
  }
  YAML::Node list = m.required("entries");
  if (!list.IsSequence())
    throw spec_error(location_of(list, path), "entries", "expected a list of entries");
  std::size_t i = 0;
  for (const YAML::Node& e : list) {
    yaml_map em(e, fmt::format("entries[{}]", i++), path);
    calibration_entry entry;
    entry.family = em.text("family");
    entry.engine = em.text("engine");
    // An entry no lookup can reach would be dropped without a word.
    if (std::string why = unknown_engine(entry.engine, true); !why.empty()) em.fail("engine", why);
    if (entry.family != "any" && !c.families.count(entry.family)) {
      std::string names;
      for (const auto& [f, members] : c.families) names += f + ", ";
      em.fail("family", fmt::format("'{}' is not a family of this file's `families` (known: {}any)",
                                    entry.family, names));
    }
    entry.rows = em.optional_integer("rows", 0).value_or(0);
    entry.source = em.optional_text("source").value_or("");
    if (YAML::Node n = em.optional("in_sample"); n.IsDefined()) {
      entry.in_sample = read_error_stats(n, em.path_of("in_sample"), path);
      if (entry.rows > 0 && entry.in_sample.rows > entry.rows)
        throw spec_error(
            location_of(n, path), em.path_of("in_sample") + ".rows",
            fmt::format("{} rows, more than the entry's {}", entry.in_sample.rows, entry.rows));
    }
    std::array<double, coefficients::size> v{};
    // cohort_share and the launch floors (layer_latency_us, moe_layer_latency_us,
    // prefill_layer_latency_us and the two MLA ones) came after the first calibration files: one
    // without them takes the built-in cohort share, and 0 for the floors: a table fitted before
    // them put those launches in its other coefficients (step overhead, request latency, GEMM
    // efficiencies), and adding them again would count them twice.
    const std::size_t kLater = 13;
    for (std::size_t k = 0; k < coefficients::size; ++k) {
      bool absent = k >= kLater && !em.has(kKeys[k]);
      std::string_view key = kKeys[k];
      bool launches = key == "layer_latency_us" || key == "moe_layer_latency_us" ||
                      key == "prefill_layer_latency_us" || key == "mla_prefill_layer_latency_us" ||
                      key == "mla_layer_latency_us";
      v[k] = !absent ? read_coefficient(em, k) : launches ? 0 : coefficients{}.values()[k];
    }
    entry.k.set(v);
    if (YAML::Node n = em.optional("measured_models"); n.IsDefined())
      entry.measured_models = name_set(n, em.path_of("measured_models"), path, false);
    if (YAML::Node n = em.optional("measured_gpus"); n.IsDefined())
      entry.measured_gpus = name_set(n, em.path_of("measured_gpus"), path, true);
    std::vector<std::string> known = {"family",    "engine",          "rows",         "source",
                                      "in_sample", "measured_models", "measured_gpus"};
    for (const char* k : kKeys) known.emplace_back(k);
    em.finish(known);
    // lookup answers with the first match: a second row for the same pair would be ignored.
    for (const calibration_entry& seen : c.entries)
      if (seen.family == entry.family && seen.engine == entry.engine)
        throw spec_error(
            location_of(e, path), fmt::format("entries[{}]", i - 1),
            fmt::format("a second entry for family {} and engine {}", entry.family, entry.engine));
    c.entries.push_back(entry);
  }
  // The expert popularity came after the first calibration files: one without it takes the
  // built-in prior.
  if (YAML::Node f = m.optional("expert_popularity"); f.IsDefined()) {
    yaml_map em(f, "expert_popularity", path);
    YAML::Node n = em.required("zipf_s");
    double v = NAN;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
    }
    if (!(std::isfinite(v) && v >= 0 && v <= coefficients::max_expert_zipf_s_in_file))
      em.fail("zipf_s", fmt::format("a Zipf exponent must be a number in [0, {}]",
                                    coefficients::max_expert_zipf_s_in_file));
    c.set_expert_popularity(v, em.optional_text("source").value_or(""));
    em.finish({"zipf_s", "source"});
  }
  if (YAML::Node f = m.optional("held_out"); f.IsDefined()) {
    yaml_map hm(f, "held_out", path);
    for (const char* key : held_out_groupings)
      if (YAML::Node n = hm.optional(key); n.IsDefined())
        c.held_out[key] = read_held_out(n, hm.path_of(key), path);
    hm.finish({held_out_groupings.begin(), held_out_groupings.end()});
  }
  m.finish({"source", "families", "models", "systems", "clients", "expert_popularity", "held_out",
            "entries"});
  return c;
}

std::string unknown_engine(const std::string& engine, bool any) {
  if (any && engine == "any") return "";
  std::string names;
  for (const engine_defaults& d : engines()) {
    if (engine == d.name) return "";
    names += std::string(names.empty() ? "" : ", ") + d.name;
  }
  return fmt::format("unknown engine '{}' (known: {}{})", engine, names, any ? ", any" : "");
}

std::string default_calibration_path() { return models_dir() + "/calibration/default.yaml"; }

std::string write_calibration(const calibration& c) {
  std::string out =
      "# Time-under-load calibration (calc serve): efficiencies and overheads per GPU "
      "family and engine.\n# Written by `calc calibrate`; see "
      "docs/validation/latency.md for how it was fitted and how well it predicts.\n";
  out += fmt::format("source: {}\n", yaml_quoted(c.source));
  out += c.families.empty() ? "families: {}\n" : "families:\n";
  for (const auto& [family, names] : c.families) {
    out += fmt::format("  {}: [", family);
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    out += "]\n";
  }
  out += c.models.empty() ? "models: {}\n"
                          : "models:  # Hugging Face id -> bundled model with the same shapes\n";
  for (const auto& [id, name] : c.models) out += fmt::format("  {}: {}\n", yaml_quoted(id), name);
  if (!c.systems.empty()) out += "systems:  # a measured row's system -> the catalogue's GPU\n";
  for (const auto& [system, gpu] : c.systems)
    out += fmt::format("  {}: {}\n", yaml_quoted(system), gpu);
  out += c.clients.empty() && c.clients_given ? "clients: []\n" : write_clients(c.clients);
  out +=
      "expert_popularity:  # routed experts: the i-th most used of a layer drawn ~ i^-zipf_s\n";
  out += fmt::format("  zipf_s: {:.6g}\n", c.expert_zipf_s);
  if (!c.expert_zipf_source.empty())
    out += fmt::format("  source: {}\n", yaml_quoted(c.expert_zipf_source));
  if (!c.held_out.empty())
    out +=
        "held_out:  # |predicted / measured - 1| in percent, each row predicted by a fit "
        "without its GPU / family / model\n";
  for (const char* key : held_out_groupings) {
    const held_out_error* h = c.held_out_by(key);
    if (!h) continue;
    out += fmt::format("  {}:\n    all: {}\n", key, error_stats_yaml(h->all));
    if (!h->by_engine.empty()) out += "    by_engine:\n";
    for (const auto& [engine, st] : h->by_engine)
      out += fmt::format("      {}: {}\n", engine, error_stats_yaml(st));
  }
  out += c.entries.empty() ? "entries: []\n" : "entries:\n";
  for (const calibration_entry& e : c.entries) {
    out +=
        fmt::format("  - family: {}\n    engine: {}\n    rows: {}\n", e.family, e.engine, e.rows);
    if (!e.source.empty()) out += fmt::format("    source: {}\n", yaml_quoted(e.source));
    if (e.in_sample.rows > 0)
      out += fmt::format("    in_sample: {}\n", error_stats_yaml(e.in_sample));
    for (auto [key, names] : {std::pair{"measured_models", &e.measured_models},
                              std::pair{"measured_gpus", &e.measured_gpus}}) {
      if (names->empty()) continue;
      out += fmt::format("    {}: [", key);
      for (std::size_t i = 0; i < names->size(); ++i) out += (i ? ", " : "") + (*names)[i];
      out += "]\n";
    }
    auto v = e.k.values();
    for (std::size_t k = 0; k < coefficients::size; ++k)
      out += fmt::format("    {}: {:.6g}\n", kKeys[k], v[k]);
  }
  return out;
}

}  // namespace calc::serve
