// The `calc report` document and its CSV, written from the exact figures of the report body.
#include "report/document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "report/chart.h"
#include "plan/placement.h"

namespace calc {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t kMaxColumns = 6;  // lengths shown side by side in a component table

/// Vendor peaks as printed: 989.4, 1978.9.
std::string decimal_tflops(double t) { return fmt::format("{:g}", t); }

/// Card memory as its basis counts it: the runtime-visible figure in GiB as the CUDA runtime
/// and engine logs print it, the figure as sold in decimal GB as vendors print it.
std::string memory_text(std::int64_t bytes, const std::string& basis) {
  return basis == "runtime" ? human_bytes(bytes) : human_decimal_bytes(bytes);
}

/// Bytes of an exact count, as read.
std::string bytes(const checked& v) { return human_bytes(v.value()); }

/// Bytes of a rate that may be fractional (an average per token).
std::string bytes(const fraction& f) {
  if (f.is_integer()) return human_bytes(f.num.value());
  double d = f.value();
  if (d < 1024) return fmt::format("{:.1f} B", d);
  return human_bytes(static_cast<std::int64_t>(d + 0.5));
}

std::string tokens(const std::optional<fraction>& v) {
  if (!v) return "—";
  if (v->is_integer()) return human_tokens(v->num.value());
  return with_commas(static_cast<std::int64_t>(v->value() + 0.5));
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
std::string by_length(const report_data& r, const std::string& first,
                      const std::function<std::string(const report_point& point)>& cell) {
  std::vector<std::string> head = {first};
  for (const report_model& m : r.models) head.push_back(m.name);
  table_rows rows;
  for (std::size_t i = 0; i < r.lengths.size(); ++i) {
    std::vector<std::string> cells = {human_tokens(r.lengths[i])};
    for (const report_model& m : r.models) cells.push_back(cell(m.points[i]));
    rows.push_back(cells);
  }
  return aligned_table(head, rows, {align::left});
}

/// The formats the figures assume: one phrase when the models share them, else per model.
std::string formats_of(const report_data& r) {
  std::vector<std::string> each;
  for (const report_model& m : r.models)
    each.push_back(fmt::format("{} weights, {} KV", m.formats.weights, m.formats.kv));
  if (std::all_of(each.begin(), each.end(), [&](const std::string& e) { return e == each[0]; }))
    return each.empty() ? "" : each[0];
  std::string out;
  for (std::size_t i = 0; i < each.size(); ++i)
    out += fmt::format("{}{}: {}", i ? "; " : "", r.models[i].name, each[i]);
  return out;
}

/// A model's deployment in words: "tp 2 x pp 1 (2 x h100-sxm)", or why there is none.
std::string deployment_of(const report_model& m, const report_data& r) {
  if (!m.deployable)
    return fmt::format("no deployment of up to {} cards holds one {}-token request", m.searched_up_to,
                       human_tokens(r.lengths.back()));
  return fmt::format("{} ({} x {})", layout_name(m.lay), m.lay.cards(), r.gpu.name);
}

/// The deployment the figures are for: one phrase when the models share it, else per model.
std::string layout_of(const report_data& r) {
  std::vector<std::string> each;
  for (const report_model& m : r.models)
    each.push_back(m.deployable ? layout_name(m.lay) : std::string("one card (does not fit)"));
  if (std::all_of(each.begin(), each.end(), [&](const std::string& e) { return e == each[0]; }))
    return each.empty() ? "" : each[0];
  std::string out;
  for (std::size_t i = 0; i < each.size(); ++i)
    out += fmt::format("{}{}: {}", i ? "; " : "", r.models[i].name, each[i]);
  return out;
}

chart make_chart(const report_data& r, const std::string& id, const std::string& title,
                 const std::string& y_label, const std::function<double(const report_point&)>& y,
                 const std::string& stem) {
  chart c{stem + "-" + id, title,        "context length (tokens)", y_label, {}, {},
          r.gpu.display,   formats_of(r), layout_of(r)};
  for (std::int64_t n : r.lengths) c.x.push_back(n);
  for (const report_model& m : r.models) {
    chart_series s{m.name, {}, {}};
    for (const report_point& p : m.points) s.y.push_back(y(p));
    c.lines.push_back(s);
  }
  return c;
}

/// The chart inline (Mermaid) and, with a plot folder, as a linked SVG; the link is relative to
/// the folder the document is written to.
/// The link to a drawn SVG, relative to the folder the document is written to.
std::string svg_link(const std::string& id, const std::string& title, const report_files& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path svg = fs::absolute(fs::path(files.plot_dir) / (id + ".svg"), ec).lexically_normal();
  fs::path base =
      files.output.empty() ? fs::current_path(ec) : fs::absolute(files.output, ec).parent_path();
  fs::path link = svg.lexically_relative(base.lexically_normal());
  if (link.empty()) link = svg;  // no relative path (another drive): the absolute one
  return fmt::format("\n![{}]({})\n", title, link.generic_string());
}

std::string figure(const chart& c, const report_files& files, std::string& gnuplot_note) {
  std::string out = "\n" + mermaid(c);
  if (files.plot_dir.empty()) return out;
  if (auto why = draw_svg(c, files.plot_dir)) {
    if (gnuplot_note.empty()) gnuplot_note = *why;
    return out;
  }
  return out + svg_link(c.id, full_title(c), files);
}

/// An x-y chart: an SVG with a plot folder (Mermaid draws no x-y curves; the table beside it
/// has the points).
std::string figure(const xy_chart& c, const report_files& files, std::string& gnuplot_note) {
  if (files.plot_dir.empty()) return "";
  if (auto why = draw_svg(c, files.plot_dir)) {
    if (gnuplot_note.empty()) gnuplot_note = *why;
    return "";
  }
  return svg_link(c.id, full_title(c), files);
}

/// The throughput section: per model, tokens/s per GPU against per user over concurrency.
std::string load_section(const report_data& r, const report_files& files, std::string& note,
                         const std::string& formats, const std::string& layouts) {
  const load_request& w = *r.load;
  std::string out = "\n## Throughput per GPU against throughput per user\n\n";
  out += fmt::format(
      "`calc serve`'s steady state on each model's deployment ({}, ISL {} and OSL {} tokens per "
      "request, calibration {}): closed-loop clients 1, 2, 4, ... up to the requests the engine "
      "runs at once (max-num-seqs {}, or the KV pool), counted per attention group as `calc "
      "serve --concurrency` takes them (a layout with DP attention runs dp such groups, dp times "
      "the clients per instance). Each point is one concurrency; only the "
      "points no other beats on both axes are kept (the Pareto frontier). Left to right, each "
      "user gets tokens faster and each GPU serves fewer.{}\n\n",
      w.engine, with_commas(w.cfg.isl), with_commas(w.cfg.osl), w.calibration,
      with_commas(w.cfg.max_num_seqs),
      w.accuracy.empty() ? "" : "\n\nAccuracy, as the calibration file records it: " + w.accuracy);
  table_rows rows;
  std::string notes;  // why a model has no curve
  xy_chart c{files.stem + "-throughput",
             "Throughput per GPU against per user",
             "output tokens/s per user (1000 / TPOT)",
             "output tokens/s per GPU",
             {},
             r.gpu.display,
             formats,
             layouts};
  for (const report_model& m : r.models) {
    xy_series s{m.name, {}, {}, m.load_note};
    for (const load_point& p : m.load) {
      rows.push_back({m.name, with_commas(p.concurrency),
                      fmt::format("{:.1f}", p.tokens_per_s_per_user),
                      fmt::format("{:.0f}", p.tokens_per_s_per_gpu),
                      fmt::format("{:.1f}", p.ttft_ms), fmt::format("{:.2f}", p.tpot_ms)});
      s.x.push_back(p.tokens_per_s_per_user);
      s.y.push_back(p.tokens_per_s_per_gpu);
    }
    if (m.load.empty()) {
      rows.push_back({m.name, "—", "—", "—", "—", "—"});
      notes += fmt::format("- {}: no curve: {}.\n", m.name, m.load_note);
    }
    c.lines.push_back(s);
  }
  out += aligned_table({"model", "clients per attention group", "tok/s per user", "tok/s per GPU",
                        "TTFT ms", "TPOT ms"},
                       rows, {align::left});
  if (!notes.empty()) out += "\n" + notes;
  out += figure(c, files, note);
  return out;
}

std::string model_summary(const report_model& m, const report_data& r) {
  std::string out = fmt::format(
      "- **{}**: {} ({} active per token), {} of weights (formats: {}), {} KV cache. ", m.name,
      human_params(m.total_params.value()), human_params(m.active_params.value()),
      bytes(m.weight_bytes), m.formats.summary, m.formats.kv);
  std::int64_t fixed = m.fixed_bytes.value();
  bool grows = !m.per_token.is_zero();
  if (grows && fixed > 0)
    out += fmt::format("Its state per request is {} fixed plus about {} per token",
                       human_bytes(fixed), bytes(m.per_token));
  else if (grows)
    out += fmt::format("Its state per request grows about {} per token", bytes(m.per_token));
  else
    out += fmt::format("Its state per request is a fixed {}", human_bytes(fixed));
  if (m.crossover_tokens)
    out += fmt::format(", and the growing part passes the fixed one at H* = {} tokens",
                       tokens(m.crossover_tokens));
  out += ". ";
  const report_point& last = m.points.back();
  std::string at = human_tokens(last.length);
  out += fmt::format("At {}: {} per request, ", at, bytes(last.state_bytes));
  if (!m.deployable)
    out += fmt::format("it does not fit: no deployment of up to {} {} cards holds one request",
                       m.searched_up_to, r.gpu.name);
  else if (last.requests > 0)
    out += fmt::format("{} {} on {}", with_commas(last.requests),
                       last.requests == 1 ? "request" : "requests", deployment_of(m, r));
  else if (m.weight_bytes >= checked(r.gpu.memory) * m.lay.cards())
    out += fmt::format("it does not fit on {}: the weights alone exceed its memory",
                       deployment_of(m, r));
  else
    out += fmt::format("it does not fit on {}: not one request fits beside the weights",
                       deployment_of(m, r));
  if (!last.cards)
    out += fmt::format(", and no layout holds {} such requests (none of up to {} cards)",
                       r.requests, last.searched_up_to);
  else
    out += fmt::format(", {} cards for {} of them", last.cards->cards(), r.requests);
  return out + ".\n";
}

/// Why a model has no requests value at some lengths, in words, for the legend.
std::string fit_note(const report_model& m, const report_data& r) {
  if (!m.deployable)
    return fmt::format("does not fit: no deployment of up to {} cards holds one {}-token request",
                       m.searched_up_to, human_tokens(r.lengths.back()));
  checked memory = checked(r.gpu.memory) * m.lay.cards();
  if (m.weight_bytes >= memory)
    return fmt::format("does not fit on {}: its weights ({}) exceed its {} of memory",
                       layout_name(m.lay), bytes(m.weight_bytes),
                       memory_text(memory.value(), r.memory_basis));
  for (const report_point& p : m.points)
    if (p.requests == 0)
      return fmt::format("does not fit on {} from {} on: not one request beside the weights",
                         layout_name(m.lay), human_tokens(p.length));
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

std::string report_document(const report_data& r, const report_files& files) {
  const std::vector<report_model>& models = r.models;
  std::vector<std::string> names;
  for (const report_model& m : models) names.push_back(m.name);
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  const std::vector<std::int64_t>& lengths = r.lengths;
  std::string span = lengths.size() == 1
                         ? "a context length of " + human_tokens(lengths.front())
                         : fmt::format("context lengths {} to {}", human_tokens(lengths.front()),
                                       human_tokens(lengths.back()));
  const std::string& gpu = r.gpu.display;
  const std::string& stem = files.stem;
  std::string note;  // why there are no SVGs, said once

  std::string out = fmt::format("# Serving report: {} on {}\n\n", list, gpu);
  std::string memory = memory_text(r.gpu.memory, r.memory_basis) +
                       (r.memory_basis == "runtime" ? " of memory as the CUDA runtime reports it"
                                                    : " of memory as sold");
  out += fmt::format(
      "What {} need{} on {} ({}, {}, {} dense BF16 TFLOPs per card) at {}, on {}: weights, "
      "state per request, where the fixed state and the growing cache cross, requests per "
      "deployment, the cards {} requests need, and lower bounds on prefill and decode time on "
      "the deployment. Figures are rounded for reading; `--format json` gives every count "
      "exactly.\n\n",
      list, names.size() == 1 ? "s" : "", gpu, memory, human_rate(r.gpu.bandwidth),
      decimal_tflops(r.gpu.bf16_tflops), span,
      r.lay ? "the layout " + layout_name(*r.lay)
            : std::string("the smallest layout engines run that holds one request at the "
                          "longest length"),
      r.requests);
  for (const report_model& m : models) out += model_summary(m, r);

  // ---- weights
  out += "\n## Parameters and weights\n\n";
  out +=
      "Weight bytes with the matrices stored in each format (embeddings, norms and the head "
      "keep the model's own formats).\n\n";
  table_rows weights;
  for (const report_model& m : models) {
    std::vector<std::string> cells = {m.name, human_params(m.total_params.value()),
                                      human_params(m.active_params.value())};
    for (const auto& w : m.weights) cells.push_back(bytes(w.second));
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
  for (const report_model& m : models)
    state.push_back(
        {m.name, bytes(m.fixed_bytes), bytes(m.per_token), tokens(m.crossover_tokens)});
  out += aligned_table({"model", "fixed part", "growth per token", "H* (fixed = growing)"}, state,
                       {align::left});
  out += "\n";
  out += by_length(r, "length", [](const report_point& p) { return bytes(p.state_bytes); });
  out += figure(make_chart(
                    r, "state", "State per request", "state per request (GiB)",
                    [](const report_point& p) { return p.state_bytes.to_double() / kGiB; }, stem),
                files, note);
  std::vector<std::size_t> cols = sample(lengths.size());
  for (const report_model& m : models) {
    out += fmt::format("\n### {}: state by component\n\n", m.name);
    std::vector<std::string> head = {"component", "class", "layers", "per token"};
    for (std::size_t c : cols) head.push_back("at " + human_tokens(lengths[c]));
    table_rows rows;
    for (const report_component& c : m.components) {
      std::vector<std::string> cells = {c.name, state_class_name(c.kind),
                                        std::to_string(c.layers), bytes(c.per_token)};
      for (std::size_t k : cols) cells.push_back(bytes(c.bytes[k]));
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
  out += by_length(r, "length", [](const report_point& p) {
    return p.batch_read_crossover ? with_commas(*p.batch_read_crossover) : std::string("—");
  });

  // ---- capacity
  out += fmt::format("\n## Requests per deployment and cards for {} requests\n\n", r.requests);
  std::string deployments;
  for (const report_model& m : models)
    deployments += fmt::format("\n- {}: {}", m.name, deployment_of(m, r));
  if (r.engine.empty())
    out += fmt::format(
        "Requests of each length that fit on each model's deployment beside the weights and a "
        "{} workspace per card (whole requests, {}):\n{}\n\n",
        bytes(r.workspace_bytes),
        r.memory_basis == "runtime" ? "runtime-visible memory" : "memory as sold", deployments);
  else
    out += fmt::format(
        "Requests of each length (as max_model_len) that {} holds at once on one instance of "
        "each model's deployment, by its rules: the KV budget of each rank (the card's "
        "runtime-visible memory x the engine's memory fraction, less the weights and the "
        "engine's own reservations) in whole blocks:\n{}\n\n",
        r.engine, deployments);
  out += by_length(r, "length", [](const report_point& p) {
    return p.requests == 0 ? std::string("does not fit") : with_commas(p.requests);
  });
  chart requests = make_chart(
      r, "requests", "Requests per deployment", "requests per deployment",
      [](const report_point& p) {
        // Not a zero line: the legend says why.
        return p.requests == 0 ? NAN : static_cast<double>(p.requests);
      },
      stem);
  for (std::size_t i = 0; i < models.size(); ++i) requests.lines[i].note = fit_note(models[i], r);
  out += figure(requests, files, note);
  out += fmt::format(
      "\nThe fewest cards, and their layout, that hold {} concurrent requests of "
      "each length.\n\n",
      r.requests);
  out += by_length(r, "length", [](const report_point& p) {
    if (!p.cards) return fmt::format("none of up to {} cards", p.searched_up_to);
    return fmt::format("{}: {}", p.cards->cards(), deployment_name(*p.cards));
  });

  // ---- roofline
  out += "\n## Time lower bounds (roofline)\n\n";
  out +=
      "One request on its deployment (the tp cards of a stage, their peaks and bandwidth "
      "added; stages one after another): a prefill of the whole context, then one decode step "
      "at that context. Neither can beat max(FLOPs / peak, bytes / bandwidth).\n\n";
  std::vector<double> times;  // the table prints them all in one unit
  for (const report_model& m : models)
    for (const report_point& p : m.points) {
      if (p.prefill) times.push_back(p.prefill->bound_s);
      times.push_back(p.decode.bound_s);
    }
  std::string unit = time_unit(times);
  table_rows bounds;
  for (std::size_t i = 0; i < lengths.size(); ++i)
    for (const report_model& m : models) {
      const report_point& p = m.points[i];
      bounds.push_back({human_tokens(lengths[i]), m.name,
                        p.prefill ? seconds_in(p.prefill->bound_s, unit) : std::string("—"),
                        p.prefill ? p.prefill->regime : std::string("beyond 64-bit FLOPs"),
                        seconds_in(p.decode.bound_s, unit), p.decode.regime});
    }
  out += aligned_table(
      {"length", "model", "prefill", "bound by", "decode step", "bound by"}, bounds,
      {align::left, align::left, align::right, align::left, align::right, align::left});
  out += figure(make_chart(
                    r, "decode", "Decode step lower bound", "decode step (ms)",
                    [](const report_point& p) { return p.decode.bound_s * 1e3; }, stem),
                files, note);
  if (r.load) out += load_section(r, files, note, formats_of(r), layout_of(r));
  if (!note.empty()) out += "\n> " + note + ".\n";
  return out;
}

namespace {

std::string line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out + "\n";
}

/// An exact count as its integer (the JSON value's text: past 64 bits, still exact).
std::string cell(const checked& v) {
  ojson e = exact(v);
  return e.is_string() ? e.get<std::string>() : e.dump();
}
std::string cell(std::int64_t v) { return std::to_string(v); }
std::string cell(double v) { return ojson(v).dump(); }
std::string cell(const std::string& v) { return csv_escape(v); }
std::string cell(const fraction& f) {
  return f.is_integer() ? cell(f.num) : cell(f.value());  // as the JSON writes it
}
std::string cell(const std::optional<fraction>& f) { return f ? cell(*f) : ""; }
std::string cell(bool v) { return v ? "true" : "false"; }

}  // namespace

std::string report_csv(const std::vector<report_data>& reports) {
  // Section 1: one row per GPU, model and length; the deployment's values on each row.
  std::string out =
      "# points\n" +
      line({"model", "length", "state_bytes", "decode_read_bytes", "batch_read_crossover",
            "requests", "layout", "gpus", "cards_for_requests", "cards", "cards_layout",
            "prefill_flops", "prefill_bound_s", "prefill_regime", "decode_bytes",
            "decode_bound_s", "decode_regime", "gpu", "memory_bytes", "memory_basis",
            "bandwidth_bytes", "bf16_tflops", "workspace_bytes"});
  for (const report_data& r : reports)
    for (const report_model& m : r.models)
      for (const report_point& p : m.points)
        out += line(
            {cell(m.name), cell(p.length), cell(p.state_bytes), cell(p.decode_read_bytes),
             p.batch_read_crossover ? cell(*p.batch_read_crossover) : "", cell(p.requests),
             m.deployable ? cell(layout_name(m.lay)) : "",
             m.deployable ? cell(m.lay.cards()) : "", cell(r.requests),
             p.cards ? cell(p.cards->cards()) : "",
             p.cards ? cell(deployment_name(*p.cards))
                     : cell(fmt::format("none of up to {} cards", p.searched_up_to)),
             p.prefill ? cell(p.prefill->flops) : "", p.prefill ? cell(p.prefill->bound_s) : "",
             cell(p.prefill ? p.prefill->regime : std::string("beyond 64-bit FLOPs")),
             cell(p.decode.bytes), cell(p.decode.bound_s), cell(p.decode.regime),
             cell(r.gpu.name), cell(r.gpu.memory), cell(r.memory_basis), cell(r.gpu.bandwidth),
             cell(r.gpu.bf16_tflops), cell(r.workspace_bytes)});
  // Section 2: state by component, one row per model, component and length (the same on
  // every GPU: written once).
  out += "\n# components\n" +
         line({"model", "component", "class", "layers", "per_token_bytes", "length", "bytes"});
  if (!reports.empty())
    for (const report_model& m : reports.front().models)
      for (const report_component& c : m.components)
        for (std::size_t i = 0; i < c.bytes.size() && i < reports.front().lengths.size(); ++i)
          out += line({cell(m.name), cell(c.name), cell(std::string(state_class_name(c.kind))),
                       cell(c.layers), cell(c.per_token), cell(reports.front().lengths[i]),
                       cell(c.bytes[i])});
  // Section 3: one row per GPU and model; weights under each format as columns.
  std::vector<std::string> head = {"model",        "gpu",           "layers",
                                   "total_params", "active_params", "weights_format",
                                   "weight_bytes", "kv_format",     "formats",
                                   "fixed_bytes",  "per_token_bytes", "crossover_tokens",
                                   "weight_read_bytes", "deployable", "layout",
                                   "gpus",         "layout_planned"};
  std::vector<std::string> formats;
  for (const report_data& r : reports)
    for (const report_model& m : r.models)
      for (const auto& w : m.weights)
        if (std::find(formats.begin(), formats.end(), w.first) == formats.end())
          formats.push_back(w.first);
  for (const std::string& f : formats) head.push_back(f + "_weight_bytes");
  out += "\n# models\n" + line(head);
  for (const report_data& r : reports)
    for (const report_model& m : r.models) {
      std::vector<std::string> row = {
          cell(m.name),           cell(r.gpu.name),         cell(m.layers),
          cell(m.total_params),   cell(m.active_params),    cell(m.formats.weights),
          cell(m.weight_bytes),   cell(m.formats.kv),       cell(m.formats.summary),
          cell(m.fixed_bytes),    cell(m.per_token),        cell(m.crossover_tokens),
          cell(m.weight_read_bytes), cell(m.deployable),
          m.deployable ? cell(layout_name(m.lay)) : "",
          m.deployable ? cell(m.lay.cards()) : "", cell(m.planned)};
      for (const std::string& f : formats) {
        std::string c;
        for (const auto& w : m.weights)
          if (w.first == f) c = cell(w.second);
        row.push_back(c);
      }
      out += line(row);
    }
  // Section 4: the throughput chart's points, one row per GPU, model and concurrency kept.
  out += "\n# load\n" +
         line({"model", "gpu", "concurrency", "output_tokens_per_s_per_user",
               "output_tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "engine", "isl", "osl"});
  for (const report_data& r : reports) {
    if (!r.load) continue;
    for (const report_model& m : r.models)
      for (const load_point& p : m.load)
        out += line({cell(m.name), cell(r.gpu.name), cell(p.concurrency),
                     cell(p.tokens_per_s_per_user), cell(p.tokens_per_s_per_gpu), cell(p.ttft_ms),
                     cell(p.tpot_ms), cell(r.load->engine), cell(r.load->cfg.isl),
                     cell(r.load->cfg.osl)});
  }
  return out;
}

}  // namespace calc
