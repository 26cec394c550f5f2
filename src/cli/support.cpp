#include "cli/support.h"

#include <fmt/format.h>

#include "common/dtype.h"
#include "common/units.h"
#include "spec/model_reader.h"

namespace calc::cli {

void add_model_options(CLI::App& app, options& o) {
  app.add_option("-m,--model", o.model,
                 "Model: a bundled name (see `calc models`) or a path to a model YAML")
      ->required();
  app.add_option("--set", o.sets,
                 "Override a spec field for a what-if, key.path=value (repeatable), "
                 "e.g. layers.attention.kv_heads=4");
}

void check_count(const std::string& option, std::int64_t v, std::int64_t min) {
  if (v < min)
    throw spec_error(option, min == 0 ? fmt::format("must not be negative, got {}", v)
                                      : fmt::format("must be at least {}, got {}", min, v));
  if (v > kMaxLength)
    throw spec_error(option, fmt::format("{} is beyond the supported {} tokens", v, kMaxLength));
}

/// Execution-path options: each overrides the model's default when given.
void add_execution_options(CLI::App& app, options& o, bool all) {
  app.add_option("--storage", o.storage,
                 "State record formats: reference (BF16 records, FP32 buffers; the default) or "
                 "production (the model's production formats, e.g. FP4/FP8 records)")
      ->check(CLI::IsMember({"reference", "production"}));
  app.add_option("--mla-path", o.mla_path,
                 "MLA cache path: compact (latent + branch cached, up-projections absorbed) or "
                 "expanded (per-head K/V cached); default: the model's")
      ->check(CLI::IsMember({"compact", "expanded"}));
  if (!all) return;
  app.add_option("--pairs", o.pairs,
                 "Attention pair counting: causal (effective) or rectangular (eager, masked "
                 "afterwards); default: the model's")
      ->check(CLI::IsMember({"causal", "rectangular"}));
  app.add_option("--vocab-rows", o.vocab_rows,
                 "Rows through the vocabulary head: last (one per request) or all")
      ->check(CLI::IsMember({"last", "all"}));
  app.add_option("--linear", o.linear,
                 "Linear attention over several new tokens: chunked or recurrent; default: the "
                 "model's (a decode step is always recurrent)")
      ->check(CLI::IsMember({"chunked", "recurrent"}));
  app.add_option("--execution", o.execution,
                 "ced (encoder over the prompt, decoder tail replay, causal candidate indexing) or "
                 "reference (every layer over every position, rectangular index scores)")
      ->check(CLI::IsMember({"ced", "reference"}));
  app.add_option("--index-scan", o.index_scan,
                 "Index scores: causal (completed entries visible to each query) or rectangular "
                 "(the whole rectangle, masked afterwards)")
      ->check(CLI::IsMember({"causal", "rectangular"}));
}

void add_format_options(CLI::App& app, options& o) {
  app.add_option("--weights", o.weights,
                 "Format of the weight matrices, e.g. bf16, fp8, int8:g128, int4:g128:zero "
                 "(embeddings, head and norms keep theirs unless --embeddings)");
  app.add_option("--embeddings", o.embeddings, "Format of the embedding table and the head");
  app.add_option("--kv", o.kv,
                 "Format of cached keys and values, e.g. bf16, fp8:g128:fp32, int4:g64");
}

namespace {

dtype format_option(const std::string& option, const std::string& text) {
  try {
    return parse_dtype(text);
  } catch (const std::invalid_argument& e) {
    throw spec_error(option, e.what());
  }
}

}  // namespace

/// Reads the model, applies --set, then the execution-path options over the model's defaults.
loaded_model load(const options& o) {
  loaded_model m;
  m.spec = std::make_unique<model_spec>(read_model_file(resolve_model_path(o.model), o.sets));
  execution_spec& e = m.spec->execution;
  if (o.pairs == "causal") e.pairs = pair_counting::causal;
  if (o.pairs == "rectangular") e.pairs = pair_counting::rectangular;
  if (o.vocab_rows == "last") e.vocab_all_rows = false;
  if (o.vocab_rows == "all") e.vocab_all_rows = true;
  if (o.mla_path == "compact") e.mla = mla_path::compact;
  if (o.mla_path == "expanded") e.mla = mla_path::expanded;
  if (o.linear == "chunked") e.linear = linear_prefill::chunked;
  if (o.linear == "recurrent") e.linear = linear_prefill::recurrent;
  if (o.execution == "reference") {
    e.ced = false;
    e.index_scan = pair_counting::rectangular;
  }
  if (o.execution == "ced") {
    if (!m.spec->ced)
      throw spec_error("--execution",
                       fmt::format("{} has no CED split (no ced block)", m.spec->name));
    e.ced = true;
    e.index_scan = pair_counting::causal;
  }
  if (o.index_scan == "causal") e.index_scan = pair_counting::causal;
  if (o.index_scan == "rectangular") e.index_scan = pair_counting::rectangular;
  if (o.storage == "production") {
    precision_spec& p = m.spec->precision;
    if (p.production.empty())
      throw spec_error("--storage", fmt::format("{} declares no production formats", m.spec->name));
    for (const auto& [role, format] : p.production) {
      *p.state_role(role) = format;  // the reader accepted only known roles
    }
  }
  if (!o.weights.empty()) m.spec->precision.weights = format_option("--weights", o.weights);
  if (!o.embeddings.empty()) {
    m.spec->precision.embedding = format_option("--embeddings", o.embeddings);
    m.spec->precision.head = m.spec->precision.embedding;
  }
  if (!o.kv.empty()) m.spec->precision.kv = format_option("--kv", o.kv);
  m.g = build_graph(*m.spec);
  return m;
}

const char* mla_path_name(const execution_spec& e) {
  return e.mla == mla_path::compact ? "compact" : "expanded";
}

std::int64_t parse_size_option(const std::string& option, const std::string& text) {
  auto bytes = parse_bytes(text);
  if (!bytes)
    throw spec_error(option, fmt::format("'{}' is not a size such as 2GiB or 512MiB", text));
  return *bytes;
}

void check_limit(const std::string& option, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& unit) {
  if (v < min) throw spec_error(option, fmt::format("must be at least {}, got {}", min, v));
  if (v > max)
    throw spec_error(option, fmt::format("{} is more than the limit of {} {}", v, max, unit));
}

ojson fraction_json(const fraction& f) {
  if (f.is_integer()) return exact(f.num);
  return f.value();
}

ojson ratio_json(const std::optional<fraction>& r) {
  if (!r) return nullptr;
  return fraction_json(*r);
}

const char* class_name(state_class k) {
  switch (k) {
    case state_class::history:
      return "history";
    case state_class::window:
      return "window";
    case state_class::fixed:
      return "fixed";
    case state_class::token_history:
      return "token history";
  }
  return "history";
}

}  // namespace calc::cli
