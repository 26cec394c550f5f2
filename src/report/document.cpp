#include "report/document.h"

#include <fmt/format.h>

#include <algorithm>
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

std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + c + " |";
  return out + "\n";
}

std::string header(const std::vector<std::string>& cells) {
  std::string out = row(cells) + "|";
  for (std::size_t i = 0; i < cells.size(); ++i) out += i == 0 ? "---|" : "--:|";
  return out + "\n";
}

/// A table with one row per length and one column per model.
std::string by_length(const ojson& body, const std::string& first,
                      const std::function<std::string(const ojson& point)>& cell) {
  std::vector<std::string> head = {first};
  for (const ojson& m : body["models"]) head.push_back(m["model"].get<std::string>());
  std::string out = header(head);
  const ojson& lengths = body["lengths"];
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::vector<std::string> cells = {human_tokens(lengths[i].get<std::int64_t>())};
    for (const ojson& m : body["models"]) cells.push_back(cell(m["points"][i]));
    out += row(cells);
  }
  return out;
}

chart make_chart(const ojson& body, const std::string& id, const std::string& title,
                 const std::string& y_label, const std::function<double(const ojson&)>& y) {
  chart c{id, title, "context length (tokens)", y_label, {}, {}};
  for (const ojson& n : body["lengths"]) c.x.push_back(n.get<std::int64_t>());
  for (const ojson& m : body["models"]) {
    chart_series s{m["model"].get<std::string>(), {}};
    for (const ojson& p : m["points"]) s.y.push_back(y(p));
    c.lines.push_back(s);
  }
  return c;
}

/// The chart inline (Mermaid) and, with a plot folder, as a linked SVG.
std::string figure(const chart& c, const std::string& plot_dir, std::string& gnuplot_note) {
  std::string out = "\n" + mermaid(c);
  if (plot_dir.empty()) return out;
  if (auto why = draw_svg(c, plot_dir)) {
    if (gnuplot_note.empty()) gnuplot_note = *why;
    return out;
  }
  std::string link = (std::filesystem::path(plot_dir) / (c.id + ".svg")).string();
  return out + fmt::format("\n![{}]({})\n", c.title, link);
}

std::string model_summary(const ojson& m, const ojson& body) {
  std::string name = m["model"].get<std::string>();
  std::string out = fmt::format(
      "- **{}**: {} parameters ({} active per token), {} of weights (formats: {}). ", name,
      human_params(integer(m["total_params"])), human_params(integer(m["active_params"])),
      human_bytes(integer(m["weight_bytes"])), m["formats"].get<std::string>());
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
    out += fmt::format("the weights alone exceed one {}", gpu);
  else
    out += fmt::format("not one request fits on one {} beside the weights", gpu);
  if (last["cards"].is_null())
    out += fmt::format(", and no layout holds {} such requests ({})",
                       body["requests"].get<std::int64_t>(), last["layout"].get<std::string>());
  else
    out += fmt::format(", {} cards for {} of them", last["cards"].get<std::int64_t>(),
                       body["requests"].get<std::int64_t>());
  return out + ".\n";
}

}  // namespace

std::string report_document(const ojson& body, const std::string& plot_dir) {
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
  out += header({"model", "parameters", "active per token", "BF16", "FP8", "FP4 (NVFP4)"});
  for (const ojson& m : models) {
    std::vector<std::string> cells = {m["model"].get<std::string>(),
                                      human_params(integer(m["total_params"])),
                                      human_params(integer(m["active_params"]))};
    for (const ojson& w : m["weights"]) cells.push_back(human_bytes(integer(w["bytes"])));
    out += row(cells);
  }

  // ---- state
  out += "\n## State per request\n\n";
  out +=
      "Everything a request keeps between calls (KV, latents, windows, recurrent state), at "
      "each context length.\n\n";
  out += header({"model", "fixed part", "growth per token", "H* (fixed = growing)"});
  for (const ojson& m : models)
    out += row({m["model"].get<std::string>(), human_bytes(integer(m["fixed_bytes"])),
                bytes(m["per_token_bytes"]), tokens(m["crossover_tokens"])});
  out += "\n";
  out += by_length(body, "length", [](const ojson& p) { return bytes(p["state_bytes"]); });
  out += figure(make_chart(body, "state", "State per request", "state per request (GiB)",
                           [](const ojson& p) { return number(p["state_bytes"]) / kGiB; }),
                plot_dir, note);
  std::vector<std::size_t> cols = sample(lengths.size());
  for (const ojson& m : models) {
    out += fmt::format("\n### {}: state by component\n\n", m["model"].get<std::string>());
    std::vector<std::string> head = {"component", "class", "layers", "per token"};
    for (std::size_t c : cols) head.push_back("at " + human_tokens(lengths[c].get<std::int64_t>()));
    out += header(head);
    for (const ojson& c : m["components"]) {
      std::vector<std::string> cells = {c["name"].get<std::string>(), c["class"].get<std::string>(),
                                        std::to_string(c["layers"].get<std::int64_t>()),
                                        bytes(c["per_token_bytes"])};
      for (std::size_t k : cols) cells.push_back(bytes(c["bytes"][k]));
      out += row(cells);
    }
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
    return with_commas(p["requests_per_card"].get<std::int64_t>());
  });
  out += figure(make_chart(body, "requests", "Requests per card", "requests per card",
                           [](const ojson& p) { return number(p["requests_per_card"]); }),
                plot_dir, note);
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
  out += header({"length", "model", "prefill", "bound by", "decode step", "bound by"});
  for (std::size_t i = 0; i < lengths.size(); ++i)
    for (const ojson& m : models) {
      const ojson& p = m["points"][i];
      out +=
          row({human_tokens(lengths[i].get<std::int64_t>()), m["model"].get<std::string>(),
               p["prefill_bound_s"].is_null() ? std::string("—")
                                              : human_seconds(number(p["prefill_bound_s"])),
               p["prefill_regime"].get<std::string>(), human_seconds(number(p["decode_bound_s"])),
               p["decode_regime"].get<std::string>()});
    }
  out += figure(make_chart(body, "decode", "Decode step lower bound", "decode step (ms)",
                           [](const ojson& p) { return number(p["decode_bound_s"]) * 1e3; }),
                plot_dir, note);
  if (!note.empty()) out += "\n> " + note + ".\n";
  return out;
}

}  // namespace calc
