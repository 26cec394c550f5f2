// The `calc report` document and its CSV, written from the exact figures of the report body.
#include "report/document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>

#include "report/chart.h"

namespace calc {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t kMaxColumns = 6;  // lengths shown side by side in a component table

/// Vendor peaks as printed: 989.4, 1978.9.
std::string decimal_tflops(double t) { return fmt::format("{:g}", t); }

std::int64_t integer(const ojson& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number()) return static_cast<std::int64_t>(v.get<double>());
  return std::stoll(v.get<std::string>());  // exact() past 2^63: only in absurd cases
}

double number(const ojson& v) {
  if (v.is_string()) return std::stod(v.get<std::string>());
  return v.get<double>();
}

std::string bytes(const ojson& v) {
  if (v.is_number_integer() || v.is_string()) return human_bytes(integer(v));
  double d = v.get<double>();  // a fractional average per token
  if (d < 1024) return fmt::format("{:.1f} B", d);
  return human_bytes(static_cast<std::int64_t>(d + 0.5));
}

std::string tokens(const ojson& v) {
  if (v.is_null()) return "—";
  if (v.is_number_integer()) return human_tokens(v.get<std::int64_t>());
  return with_commas(static_cast<std::int64_t>(v.get<double>() + 0.5));
}

/// Indices of at most kMaxColumns lengths, first and last always included.
std::vector<std::size_t> sample(std::size_t n) {
  std::vector<std::size_t> out;
  if (n <= kMaxColumns) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t k = 0; k < kMaxColumns; ++k) out.push_back(k * (n - 1) / (kMaxColumns - 1));
  return out;
}

using table_rows = std::vector<std::vector<std::string>>;

/// A table with one row per length and one column per model.
std::string by_length(const ojson& body, const std::string& first,
                      const std::function<std::string(const ojson& point)>& cell) {
  std::vector<std::string> head = {first};
  for (const ojson& m : body["models"]) head.push_back(m["model"].get<std::string>());
  table_rows rows;
  const ojson& lengths = body["lengths"];
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::vector<std::string> cells = {human_tokens(lengths[i].get<std::int64_t>())};
    for (const ojson& m : body["models"]) cells.push_back(cell(m["points"][i]));
    rows.push_back(cells);
  }
  return aligned_table(head, rows, {align::left});
}

/// The formats the figures assume: one phrase when the models share them, else per model.
std::string formats_of(const ojson& body) {
  std::vector<std::string> each;
  for (const ojson& m : body["models"])
    each.push_back(fmt::format("{} weights, {} KV", m["weights_format"].get<std::string>(),
                               m["kv_format"].get<std::string>()));
  if (std::all_of(each.begin(), each.end(), [&](const std::string& e) { return e == each[0]; }))
    return each.empty() ? "" : each[0];
  std::string out;
  for (std::size_t i = 0; i < each.size(); ++i)
    out += fmt::format("{}{}: {}", i ? "; " : "", body["models"][i]["model"].get<std::string>(),
                       each[i]);
  return out;
}

/// The deployment the figures are for, as the body names it.
std::string layout_of(const ojson& body) {
  if (body.contains("layout") && body["layout"].is_string())
    return body["layout"].get<std::string>();
  return "one card per model";
}

chart make_chart(const ojson& body, const std::string& stem, const std::string& id,
                 const std::string& title, const std::string& y_label,
                 const std::function<double(const ojson&)>& y) {
  chart c{stem + "-" + id,
          title,
          "context length (tokens)",
          y_label,
          {},
          {},
          body["gpu_display"].get<std::string>(),
          formats_of(body),
          layout_of(body)};
  for (const ojson& n : body["lengths"]) c.x.push_back(n.get<std::int64_t>());
  for (const ojson& m : body["models"]) {
    chart_series s{m["model"].get<std::string>(), {}, {}};
    for (const ojson& p : m["points"]) s.y.push_back(y(p));
    c.lines.push_back(s);
  }
  return c;
}

/// The chart inline (Mermaid) and, with a plot folder, as a linked SVG; the link is relative to
/// the folder the document is written to.
std::string figure(const chart& c, const report_files& files, std::string& gnuplot_note) {
  namespace fs = std::filesystem;
  std::string out = "\n" + mermaid(c);
  if (files.plot_dir.empty()) return out;
  if (auto why = draw_svg(c, files.plot_dir)) {
    if (gnuplot_note.empty()) gnuplot_note = *why;
    return out;
  }
  std::error_code ec;
  fs::path svg = fs::absolute(fs::path(files.plot_dir) / (c.id + ".svg"), ec).lexically_normal();
  fs::path base =
      files.output.empty() ? fs::current_path(ec) : fs::absolute(files.output, ec).parent_path();
  fs::path link = svg.lexically_relative(base.lexically_normal());
  if (link.empty()) link = svg;  // no relative path (another drive): the absolute one
  return out + fmt::format("\n![{}]({})\n", full_title(c), link.generic_string());
}

std::string model_summary(const ojson& m, const ojson& body) {
  std::string name = m["model"].get<std::string>();
  std::string out = fmt::format(
      "- **{}**: {} ({} active per token), {} of weights (formats: {}), {} KV cache. ", name,
      human_params(integer(m["total_params"])), human_params(integer(m["active_params"])),
      human_bytes(integer(m["weight_bytes"])), m["formats"].get<std::string>(),
      m["kv_format"].get<std::string>());
  std::int64_t fixed = integer(m["fixed_bytes"]);
  bool grows = !(m["per_token_bytes"].is_number_integer() && integer(m["per_token_bytes"]) == 0);
  if (grows && fixed > 0)
    out += fmt::format("Its state per request is {} fixed plus about {} per token",
                       human_bytes(fixed), bytes(m["per_token_bytes"]));
  else if (grows)
    out +=
        fmt::format("Its state per request grows about {} per token", bytes(m["per_token_bytes"]));
  else
    out += fmt::format("Its state per request is a fixed {}", human_bytes(fixed));
  if (!m["crossover_tokens"].is_null())
    out += fmt::format(", and the growing part passes the fixed one at H* = {} tokens",
                       tokens(m["crossover_tokens"]));
  out += ". ";
  const ojson& last = m["points"].back();
  std::string at = human_tokens(last["length"].get<std::int64_t>());
  std::int64_t per_card = last["requests_per_card"].get<std::int64_t>();
  std::string gpu = body["gpu"].get<std::string>();
  out += fmt::format("At {}: {} per request, ", at, human_bytes(integer(last["state_bytes"])));
  if (per_card > 0)
    out += fmt::format("{} requests on one {}", per_card, gpu);
  else if (integer(m["weight_bytes"]) >= integer(body["memory_bytes"]))
    out += fmt::format("it does not fit on one {}: the weights alone exceed its memory", gpu);
  else
    out += fmt::format("it does not fit on one {}: not one request fits beside the weights", gpu);
  if (last["cards"].is_null())
    out += fmt::format(", and no layout holds {} such requests ({})",
                       body["requests"].get<std::int64_t>(), last["layout"].get<std::string>());
  else
    out += fmt::format(", {} cards for {} of them", last["cards"].get<std::int64_t>(),
                       body["requests"].get<std::int64_t>());
  return out + ".\n";
}

/// Why a model has no requests-per-card value at some lengths, in words, for the legend.
std::string fit_note(const ojson& m, const ojson& body) {
  if (integer(m["weight_bytes"]) >= integer(body["memory_bytes"]))
    return fmt::format("does not fit: its weights ({}) exceed one card ({})",
                       human_bytes(integer(m["weight_bytes"])),
                       human_decimal_bytes(integer(body["memory_bytes"])));
  for (const ojson& p : m["points"])
    if (p["requests_per_card"].get<std::int64_t>() == 0)
      return fmt::format("does not fit from {} on: not one request beside the weights",
                         human_tokens(p["length"].get<std::int64_t>()));
  return "";
}

/// A string usable in a file name: letters, digits, '.', '-' and '_' kept, others as '-'.
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '-';
  return s;
}

}  // namespace

std::string chart_stem(const ojson& body, const std::string& output) {
  if (!output.empty()) {
    std::string stem = std::filesystem::path(output).stem().string();
    if (!stem.empty()) return file_safe(stem);
  }
  // FNV-1a over the exact figures: the same report keeps its names, another gets new ones.
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : body.dump()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("report-{:08x}", static_cast<std::uint32_t>(h ^ (h >> 32)));
}

std::string report_document(const ojson& body, const report_files& files) {
  const ojson& models = body["models"];
  std::vector<std::string> names;
  for (const ojson& m : models) names.push_back(m["model"].get<std::string>());
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  const ojson& lengths = body["lengths"];
  std::string span =
      lengths.size() == 1
          ? "a context length of " + human_tokens(lengths.front().get<std::int64_t>())
          : fmt::format("context lengths {} to {}",
                        human_tokens(lengths.front().get<std::int64_t>()),
                        human_tokens(lengths.back().get<std::int64_t>()));
  std::string gpu = body["gpu_display"].get<std::string>();
  std::string stem = chart_stem(body, files.output);
  std::string note;  // why there are no SVGs, said once

  std::string out = fmt::format("# Serving report: {} on {}\n\n", list, gpu);
  out += fmt::format(
      "What {} need{} on one {} ({} of memory, {}, {} dense BF16 TFLOPs) at {}: "
      "weights, state per request, where the fixed state and the growing cache cross, "
      "requests per card, the cards {} requests need, and lower bounds on prefill and decode "
      "time. Figures are rounded for reading; `--format json` gives every count exactly.\n\n",
      list, names.size() == 1 ? "s" : "", gpu, human_decimal_bytes(integer(body["memory_bytes"])),
      human_rate(integer(body["bandwidth_bytes"])), decimal_tflops(number(body["bf16_tflops"])),
      span, body["requests"].get<std::int64_t>());
  for (const ojson& m : models) out += model_summary(m, body);

  // ---- weights
  out += "\n## Parameters and weights\n\n";
  out +=
      "Weight bytes with the matrices stored in each format (embeddings, norms and the head "
      "keep the model's own formats).\n\n";
  table_rows weights;
  for (const ojson& m : models) {
    std::vector<std::string> cells = {m["model"].get<std::string>(),
                                      human_params(integer(m["total_params"])),
                                      human_params(integer(m["active_params"]))};
    for (const ojson& w : m["weights"]) cells.push_back(human_bytes(integer(w["bytes"])));
    weights.push_back(cells);
  }
  out += aligned_table({"model", "parameters", "active per token", "BF16", "FP8", "FP4 (NVFP4)"},
                       weights, {align::left});

  // ---- state
  out += "\n## State per request\n\n";
  out +=
      "Everything a request keeps between calls (KV, latents, windows, recurrent state), at "
      "each context length.\n\n";
  table_rows state;
  for (const ojson& m : models)
    state.push_back({m["model"].get<std::string>(), human_bytes(integer(m["fixed_bytes"])),
                     bytes(m["per_token_bytes"]), tokens(m["crossover_tokens"])});
  out += aligned_table({"model", "fixed part", "growth per token", "H* (fixed = growing)"}, state,
                       {align::left});
  out += "\n";
  out += by_length(body, "length", [](const ojson& p) { return bytes(p["state_bytes"]); });
  out += figure(make_chart(body, stem, "state", "State per request", "state per request (GiB)",
                           [](const ojson& p) { return number(p["state_bytes"]) / kGiB; }),
                files, note);
  std::vector<std::size_t> cols = sample(lengths.size());
  for (const ojson& m : models) {
    out += fmt::format("\n### {}: state by component\n\n", m["model"].get<std::string>());
    std::vector<std::string> head = {"component", "class", "layers", "per token"};
    for (std::size_t c : cols) head.push_back("at " + human_tokens(lengths[c].get<std::int64_t>()));
    table_rows rows;
    for (const ojson& c : m["components"]) {
      std::vector<std::string> cells = {c["name"].get<std::string>(), c["class"].get<std::string>(),
                                        std::to_string(c["layers"].get<std::int64_t>()),
                                        bytes(c["per_token_bytes"])};
      for (std::size_t k : cols) cells.push_back(bytes(c["bytes"][k]));
      rows.push_back(cells);
    }
    out += aligned_table(head, rows, {align::left, align::left});
  }

  // ---- crossovers
  out += "\n## Crossovers\n\n";
  out +=
      "H* is the context where the growing state equals the fixed state (above). The batch "
      "read crossover is the smallest batch whose decode step reads more context than "
      "weights: above it, a decode step is bound by the cache, not the weights.\n\n";
  out += by_length(body, "length", [](const ojson& p) {
    return p["batch_read_crossover"].is_null()
               ? std::string("—")
               : with_commas(p["batch_read_crossover"].get<std::int64_t>());
  });

  // ---- capacity
  out += fmt::format("\n## Requests per card and cards per deployment\n\n");
  out += fmt::format(
      "Requests of each length that fit on one {} beside the weights and a {} workspace "
      "(whole requests, memory as sold).\n\n",
      body["gpu"].get<std::string>(), human_bytes(integer(body["workspace_bytes"])));
  out += by_length(body, "length", [](const ojson& p) {
    std::int64_t n = p["requests_per_card"].get<std::int64_t>();
    return n == 0 ? std::string("does not fit") : with_commas(n);
  });
  chart requests = make_chart(
      body, stem, "requests", "Requests per card", "requests per card", [](const ojson& p) {
        std::int64_t n = p["requests_per_card"].get<std::int64_t>();
        return n == 0 ? NAN : static_cast<double>(n);  // not a zero line: the legend says why
      });
  for (std::size_t i = 0; i < models.size(); ++i)
    requests.lines[i].note = fit_note(models[i], body);
  out += figure(requests, files, note);
  out += fmt::format(
      "\nThe fewest cards, and their layout, that hold {} concurrent requests of "
      "each length.\n\n",
      body["requests"].get<std::int64_t>());
  out += by_length(body, "length", [](const ojson& p) {
    if (p["cards"].is_null()) return p["layout"].get<std::string>();
    return fmt::format("{}: {}", p["cards"].get<std::int64_t>(), p["layout"].get<std::string>());
  });

  // ---- roofline
  out += "\n## Time lower bounds (roofline)\n\n";
  out +=
      "One request: a prefill of the whole context, then one decode step at that context. "
      "Neither can beat max(FLOPs / peak, bytes / bandwidth).\n\n";
  std::vector<double> times;  // the table prints them all in one unit
  for (const ojson& m : models)
    for (const ojson& p : m["points"]) {
      if (!p["prefill_bound_s"].is_null()) times.push_back(number(p["prefill_bound_s"]));
      times.push_back(number(p["decode_bound_s"]));
    }
  std::string unit = time_unit(times);
  table_rows bounds;
  for (std::size_t i = 0; i < lengths.size(); ++i)
    for (const ojson& m : models) {
      const ojson& p = m["points"][i];
      bounds.push_back(
          {human_tokens(lengths[i].get<std::int64_t>()), m["model"].get<std::string>(),
           p["prefill_bound_s"].is_null() ? std::string("—")
                                          : seconds_in(number(p["prefill_bound_s"]), unit),
           p["prefill_regime"].get<std::string>(), seconds_in(number(p["decode_bound_s"]), unit),
           p["decode_regime"].get<std::string>()});
    }
  out += aligned_table(
      {"length", "model", "prefill", "bound by", "decode step", "bound by"}, bounds,
      {align::left, align::left, align::right, align::left, align::right, align::left});
  out += figure(make_chart(body, stem, "decode", "Decode step lower bound", "decode step (ms)",
                           [](const ojson& p) { return number(p["decode_bound_s"]) * 1e3; }),
                files, note);
  if (!note.empty()) out += "\n> " + note + ".\n";
  return out;
}

namespace {

/// A JSON value as one CSV field (plain values only).
std::string field(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_escape(v.get<std::string>());
  return v.dump();
}

std::string line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out + "\n";
}

}  // namespace

std::string report_csv(const ojson& body) {
  // Section 1: one row per model and length, the deployment's values repeated on each.
  std::vector<std::string> deployment;
  for (const auto& [k, v] : body.items())
    if (!v.is_structured()) deployment.push_back(k);
  std::vector<std::string> point_cols;
  for (const ojson& m : body["models"])
    for (const ojson& p : m["points"])
      for (const auto& [k, v] : p.items())
        if (std::find(point_cols.begin(), point_cols.end(), k) == point_cols.end())
          point_cols.push_back(k);
  std::vector<std::string> head = {"model"};
  head.insert(head.end(), point_cols.begin(), point_cols.end());
  head.insert(head.end(), deployment.begin(), deployment.end());
  std::string out = "# points\n" + line(head);
  for (const ojson& m : body["models"])
    for (const ojson& p : m["points"]) {
      std::vector<std::string> row = {field(m["model"])};
      for (const std::string& c : point_cols) row.push_back(p.contains(c) ? field(p[c]) : "");
      for (const std::string& k : deployment) row.push_back(field(body[k]));
      out += line(row);
    }
  // Section 2: state by component, one row per model, component and length.
  out += "\n# components\n" +
         line({"model", "component", "class", "layers", "per_token_bytes", "length", "bytes"});
  for (const ojson& m : body["models"])
    for (const ojson& c : m["components"])
      for (std::size_t i = 0; i < c["bytes"].size() && i < body["lengths"].size(); ++i)
        out += line({field(m["model"]), field(c["name"]), field(c["class"]), field(c["layers"]),
                     field(c["per_token_bytes"]), field(body["lengths"][i]), field(c["bytes"][i])});
  // Section 3: one row per model; weights under each format as columns.
  std::vector<std::string> model_cols;
  for (const ojson& m : body["models"])
    for (const auto& [k, v] : m.items())
      if (!v.is_structured() &&
          std::find(model_cols.begin(), model_cols.end(), k) == model_cols.end())
        model_cols.push_back(k);
  std::vector<std::string> formats;
  for (const ojson& m : body["models"])
    for (const ojson& w : m["weights"])
      if (std::find(formats.begin(), formats.end(), w["format"].get<std::string>()) ==
          formats.end())
        formats.push_back(w["format"].get<std::string>());
  head = model_cols;
  for (const std::string& f : formats) head.push_back(f + "_weight_bytes");
  out += "\n# models\n" + line(head);
  for (const ojson& m : body["models"]) {
    std::vector<std::string> row;
    for (const std::string& c : model_cols) row.push_back(m.contains(c) ? field(m[c]) : "");
    for (const std::string& f : formats) {
      std::string cell;
      for (const ojson& w : m["weights"])
        if (w["format"] == f) cell = field(w["bytes"]);
      row.push_back(cell);
    }
    out += line(row);
  }
  return out;
}

}  // namespace calc
