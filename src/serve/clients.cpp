#include "serve/clients.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/limits.h"
#include "serve/calibration.h"
#include "spec/yaml_reader.h"

namespace calc::serve {

namespace {

/// A fraction in (0, 1] where given (a located error saying `what` it is a fraction of).
std::optional<double> optional_fraction(yaml_map& m, const std::string& key, const char* what) {
  YAML::Node n = m.optional(key);
  if (!n.IsDefined()) return std::nullopt;
  double v = NAN;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
  }
  if (!(std::isfinite(v) && v > 0 && v <= 1))
    m.fail(key, fmt::format("must be a fraction in (0, 1]{}", what));
  return v;
}

std::int64_t at_most(yaml_map& m, const std::string& key, std::int64_t v, std::int64_t most) {
  if (v > most) m.fail(key, fmt::format("{} is more than the limit of {}", v, most));
  return v;
}

std::string non_empty_text(yaml_map& m, const std::string& key) {
  std::string s = m.text(key);
  if (s.empty()) m.fail(key, "must not be empty");
  return s;
}

benchmark_launch read_launch(const YAML::Node& n, const std::string& path,
                             const std::string& file) {
  yaml_map m(n, path, file);
  benchmark_launch l;
  l.engine = m.text("engine");
  if (std::string why = unknown_engine(l.engine); !why.empty()) m.fail("engine", why);
  l.model_path = non_empty_text(m, "model_path");
  l.isl = at_most(m, "isl", m.optional_integer("isl", 1).value_or(0), limits::tokens);
  l.osl = at_most(m, "osl", m.optional_integer("osl", 1).value_or(0), limits::tokens);
  l.tp_below = at_most(m, "tp_below", m.optional_integer("tp_below", 2).value_or(0), limits::cards);
  l.attention_dp = m.boolean("attention_dp", false);
  if (m.has("system")) l.system = non_empty_text(m, "system");
  if (m.has("gemm_quant_mode")) l.gemm_quant = non_empty_text(m, "gemm_quant_mode");
  l.concurrency_at_least =
      at_most(m, "concurrency_at_least", m.optional_integer("concurrency_at_least", 1).value_or(0),
              limits::requests);
  l.concurrency_below =
      at_most(m, "concurrency_below", m.optional_integer("concurrency_below", 2).value_or(0),
              limits::requests);
  if (l.concurrency_below && l.concurrency_below <= l.concurrency_at_least)
    m.fail("concurrency_below",
           fmt::format("must be above concurrency_at_least ({})", l.concurrency_at_least));
  // The band reads the row's batch_size, the clients of one attention-DP group, where a script's
  // CONC counts every group's: without attention DP they are the same number.
  if (l.attention_dp && (l.concurrency_at_least || l.concurrency_below))
    m.fail(l.concurrency_at_least ? "concurrency_at_least" : "concurrency_below",
           "a band of clients is read from batch_size, one attention-DP group's clients: give it "
           "only without attention DP (attention_dp: false)");
  // The engine's own names (TensorRT-LLM's batching and attention_dp_config options). Either
  // of the batch wait's pair at 0 releases a prompt at once: it holds only with both above 0.
  auto iters = m.optional_integer("batch_wait_timeout_iters", 1);
  auto ratio = optional_fraction(m, "batch_wait_max_tokens_ratio", " of the step's token budget");
  if (ratio && !iters)
    m.fail("batch_wait_max_tokens_ratio", "give batch_wait_timeout_iters (1 or more) with it");
  if (iters) {
    if (!ratio)
      m.fail("batch_wait_max_tokens_ratio",
             "give a fraction in (0, 1] with batch_wait_timeout_iters: either at 0 holds nothing");
    // The engine holds prompts so only without attention DP; the balance holds them with it.
    if (l.attention_dp)
      m.fail("batch_wait_timeout_iters",
             "TensorRT-LLM holds prompts so only without attention DP (attention_dp: false); "
             "its ranks are held by attention_dp_balance");
    l.holds.batch_wait_iters = at_most(m, "batch_wait_timeout_iters", *iters, limits::requests);
    l.holds.batch_wait_tokens_ratio = *ratio;
  }
  if (YAML::Node b = m.optional("attention_dp_balance"); b.IsDefined()) {
    yaml_map bm(b, m.path_of("attention_dp_balance"), file);
    l.holds.adp_balance = true;
    if (auto t = bm.optional_integer("timeout_iters", 0))
      l.holds.adp_balance_timeout_iters = at_most(bm, "timeout_iters", *t, limits::requests);
    if (auto w = bm.optional_integer("batching_wait_iters", 0))
      l.holds.adp_balance_batching_iters = at_most(bm, "batching_wait_iters", *w, limits::requests);
    bm.finish({"timeout_iters", "batching_wait_iters"});
    // The balance holds prompts across attention-DP ranks: without them it has nothing to hold.
    if (!l.attention_dp)
      m.fail("attention_dp_balance", "balances attention-DP ranks: give attention_dp: true");
  }
  l.source = non_empty_text(m, "source");
  m.finish({"engine", "model_path", "isl", "osl", "tp_below", "attention_dp", "system",
            "gemm_quant_mode", "concurrency_at_least", "concurrency_below",
            "batch_wait_timeout_iters", "batch_wait_max_tokens_ratio", "attention_dp_balance",
            "source"});
  if (l.holds.batch_wait_iters == 0 && !l.holds.adp_balance)
    throw spec_error(location_of(n, file), path,
                     "sets no launch option (batch_wait_timeout_iters or attention_dp_balance)");
  // Both are TensorRT-LLM's scheduler options, which `calc serve` refuses on other engines.
  if (l.engine != "trtllm")
    m.fail("engine",
           fmt::format("'{}' has no {}: it is TensorRT-LLM's (engine: trtllm)", l.engine,
                       l.holds.adp_balance ? "attention_dp_balance" : "batch_wait_timeout_iters"));
  return l;
}

benchmark_client read_client(const YAML::Node& n, const std::string& path,
                             const std::string& file) {
  yaml_map m(n, path, file);
  benchmark_client c;
  c.name = non_empty_text(m, "name");
  YAML::Node prefixes = m.required("source_prefixes");
  if (!prefixes.IsSequence() || prefixes.size() == 0)
    throw spec_error(location_of(prefixes, file), m.path_of("source_prefixes"),
                     "expected a list of data-source prefixes");
  for (const YAML::Node& p : prefixes) {
    if (!p.IsScalar() || p.Scalar().empty())
      throw spec_error(location_of(p, file), m.path_of("source_prefixes"),
                       "expected a non-empty prefix");
    c.source_prefixes.push_back(p.Scalar());
  }
  // A share of 0 would draw empty prompts, which no client sends.
  c.length_low = optional_fraction(m, "length_low", "").value_or(1);
  c.source = non_empty_text(m, "source");
  if (YAML::Node list = m.optional("launches"); list.IsDefined()) {
    if (!list.IsSequence())
      throw spec_error(location_of(list, file), m.path_of("launches"),
                       "expected a list of launch options");
    std::size_t i = 0;
    for (const YAML::Node& l : list)
      c.launches.push_back(read_launch(l, fmt::format("{}[{}]", m.path_of("launches"), i++), file));
  }
  m.finish({"name", "source_prefixes", "length_low", "source", "launches"});
  return c;
}

}  // namespace

const benchmark_client* client_of(const std::vector<benchmark_client>& clients,
                                  const std::string& data_source) {
  for (const benchmark_client& c : clients)
    for (const std::string& prefix : c.source_prefixes)
      if (data_source.starts_with(prefix)) return &c;
  return nullptr;
}

const benchmark_launch* launch_of(const benchmark_client& client, const launch_row& row) {
  for (const benchmark_launch& l : client.launches)
    if (row.engine == l.engine && row.model_path == l.model_path &&
        (l.system.empty() || row.system == l.system) &&
        (l.gemm_quant.empty() || row.gemm_quant == l.gemm_quant) &&
        (l.isl == 0 || row.isl == l.isl) && (l.osl == 0 || row.osl == l.osl) &&
        (l.tp_below == 0 || row.tp < l.tp_below) && l.attention_dp == (row.dp > 1) &&
        row.concurrency >= l.concurrency_at_least &&
        (l.concurrency_below == 0 || row.concurrency < l.concurrency_below))
      return &l;
  return nullptr;
}

std::vector<benchmark_client> read_clients(const YAML::Node& list, const std::string& file) {
  if (!list.IsSequence())
    throw spec_error(location_of(list, file), "clients", "expected a list of benchmark clients");
  std::vector<benchmark_client> out;
  std::size_t i = 0;
  for (const YAML::Node& n : list) {
    std::string path = fmt::format("clients[{}]", i++);
    benchmark_client c = read_client(n, path, file);
    for (const benchmark_client& seen : out) {
      if (seen.name == c.name)
        throw spec_error(location_of(n["name"], file), path + ".name",
                         fmt::format("a second client named '{}'", c.name));
      // client_of answers with the first match: a later client a prefix shadows would never be.
      for (const std::string& a : seen.source_prefixes)
        for (std::size_t k = 0; k < c.source_prefixes.size(); ++k)
          if (c.source_prefixes[k].starts_with(a))
            throw spec_error(location_of(n["source_prefixes"][k], file), path + ".source_prefixes",
                             fmt::format("'{}' starts with '{}' of client '{}', which would "
                                         "take its rows",
                                         c.source_prefixes[k], a, seen.name));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte < 0x20 || byte == 0x7f) {
      // A raw control character would not read back as itself (a newline folds to a space).
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string write_clients(const std::vector<benchmark_client>& clients) {
  if (clients.empty()) return "";
  std::string out =
      "clients:  # the benchmark clients a row's silicon_data_source names: how they drew "
      "lengths and launched the engine\n";
  for (const benchmark_client& c : clients) {
    out += fmt::format("  - name: {}\n    source_prefixes: [", yaml_quoted(c.name));
    for (std::size_t i = 0; i < c.source_prefixes.size(); ++i)
      out += (i ? ", " : "") + yaml_quoted(c.source_prefixes[i]);
    out +=
        fmt::format("]\n    length_low: {}\n    source: {}\n", c.length_low, yaml_quoted(c.source));
    if (!c.launches.empty()) out += "    launches:\n";
    for (const benchmark_launch& l : c.launches) {
      out += fmt::format("      - engine: {}\n        model_path: {}\n", l.engine,
                         yaml_quoted(l.model_path));
      if (!l.system.empty()) out += fmt::format("        system: {}\n", yaml_quoted(l.system));
      if (l.isl) out += fmt::format("        isl: {}\n", l.isl);
      if (l.osl) out += fmt::format("        osl: {}\n", l.osl);
      if (l.tp_below) out += fmt::format("        tp_below: {}\n", l.tp_below);
      if (l.attention_dp) out += "        attention_dp: true\n";
      if (!l.gemm_quant.empty())
        out += fmt::format("        gemm_quant_mode: {}\n", yaml_quoted(l.gemm_quant));
      if (l.concurrency_at_least)
        out += fmt::format("        concurrency_at_least: {}\n", l.concurrency_at_least);
      if (l.concurrency_below)
        out += fmt::format("        concurrency_below: {}\n", l.concurrency_below);
      if (l.holds.batch_wait_iters)
        out += fmt::format(
            "        batch_wait_timeout_iters: {}\n        batch_wait_max_tokens_ratio: {}\n",
            l.holds.batch_wait_iters, l.holds.batch_wait_tokens_ratio);
      if (l.holds.adp_balance)
        out += fmt::format(
            "        attention_dp_balance: {{timeout_iters: {}, batching_wait_iters: {}}}\n",
            l.holds.adp_balance_timeout_iters, l.holds.adp_balance_batching_iters);
      out += fmt::format("        source: {}\n", yaml_quoted(l.source));
    }
  }
  return out;
}

}  // namespace calc::serve
