#include "cli/support.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "common/dtype.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/units.h"
#include "report/data.h"
#include "spec/context_limit.h"
#include "spec/model_reader.h"

namespace calc::cli {

namespace {

/// The reason an option is refused in the other mode, by "command --option": the parser is
/// rebuilt per command line, so an option's address is no key.
std::map<std::string, std::string>& refusal_reasons() {
  static std::map<std::string, std::string> reasons;
  return reasons;
}

}  // namespace

CLI::Option* only_in(CLI::Option* opt, const command& c, const char* mode, const char* why) {
  bool has_engine =
      std::find(c.groups.begin(), c.groups.end(), option_group::engine) != c.groups.end();
  if (!has_engine) return opt;
  opt->group(mode);
  if (why != nullptr) refusal_reasons()[fmt::format("{} {}", c.name, opt->get_name())] = why;
  return opt;
}

void bind_group(CLI::App& app, options& o, option_group g, const command& c) {
  switch (g) {
    case option_group::model:
    case option_group::model_list: {
      bool required = g == option_group::model;
      CLI::Option* m = app.add_option(
          "-m,--model,--models", o.model,
          required
              ? "Model: a bundled name (see `calc models`, any case) or a path to a model YAML"
              : "Models, comma-separated: bundled names or paths (default: every bundled model)");
      if (required) m->required();
      app.add_option("--set", o.sets,
                     "Override a spec field for a what-if, key.path=value (repeatable), "
                     "e.g. layers.attention.kv_heads=4");
      return;
    }
    case option_group::gpu:
      app.add_option("--gpu", o.gpu,
                     "Accelerator: a name from `calc gpus` (any case) or a path; a comma list "
                     "where the command compares several");
      return;
    case option_group::memory:
      // With --engine the engine's rules count the runtime-visible memory, always.
      only_in(app.add_option("--memory", o.memory,
                             "Card memory counted: runtime (what the CUDA runtime reports, as "
                             "engines see it; as sold where the catalogue has no runtime figure) "
                             "or as-sold (the vendor's decimal figure, as the chapter counts); "
                             "default runtime")
                  ->check(CLI::IsMember({"runtime", "as-sold"})),
              c, kPlainOnly);
      return;
    case option_group::length:
      app.add_option("-n,--length,--lengths,--max-model-len,--context-length", o.length_text,
                     "Context length per request, in tokens (128K = 131,072); a list 4K,8K or a "
                     "range 1K:1M:x2 where the command takes several");
      return;
    case option_group::workload:
      app.add_option("-p,--prompt,--tokens", o.prompt, "New tokens per request this call (P)")
          ->transform(token_suffixes());
      app.add_option("-s,--context,--cached", o.context,
                     "Tokens already cached per request (S), default 0")
          ->transform(token_suffixes());
      return;
    case option_group::batch:
      app.add_option("-b,--batch", o.batch, "Requests in the batch (B), default 1");
      return;
    case option_group::generate:
      app.add_option("-g,--generate", o.generate,
                     "Tokens returned (G), default 1; G-1 decode calls follow the prefill")
          ->transform(token_suffixes());
      return;
    case option_group::formats:
    case option_group::weight_formats:
      app.add_option("--weights", o.weights,
                     "Format of the weight matrices, e.g. bf16, fp8, int8:g128, int4:g128:zero "
                     "(embeddings, head and norms keep theirs unless --embeddings); default: the "
                     "model's published checkpoint");
      app.add_option("--embeddings", o.embeddings, "Format of the embedding table and the head");
      if (g == option_group::weight_formats) return;
      app.add_option("--kv,--kv-cache-dtype", o.kv,
                     "Format of cached keys and values: a calc format (bf16, fp8:g128:fp32, "
                     "int4:g64) or an engine spelling (auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, "
                     "float16)");
      return;
    case option_group::execution:
    case option_group::execution_all:
    case option_group::execution_work:
      // With --engine the engine's rules decide what it stores: the paths are plain-only there.
      if (g != option_group::execution_work)
        only_in(app.add_option("--storage", o.storage,
                       "State record formats: reference (BF16 records, FP32 buffers; the "
                       "default) or production (the model's production formats, e.g. FP4/FP8 "
                       "records)")
                    ->check(CLI::IsMember({"reference", "production"})),
                c, kPlainOnly);
      only_in(app.add_option("--mla-path", o.mla_path,
                             "MLA cache path: compact (latent + branch cached, up-projections "
                             "absorbed) or expanded (per-head K/V cached); default: the model's")
                  ->check(CLI::IsMember({"compact", "expanded"})),
              c, kPlainOnly);
      if (g == option_group::execution) return;
      app.add_option("--pairs", o.pairs,
                     "Attention pair counting: causal (effective) or rectangular (eager, masked "
                     "afterwards); default: the model's")
          ->check(CLI::IsMember({"causal", "rectangular"}));
      app.add_option("--vocab-rows", o.vocab_rows,
                     "Rows through the vocabulary head: last (one per request) or all")
          ->check(CLI::IsMember({"last", "all"}));
      app.add_option("--linear", o.linear,
                     "Linear attention over several new tokens: chunked or recurrent; default: "
                     "the model's (a decode step is always recurrent)")
          ->check(CLI::IsMember({"chunked", "recurrent"}));
      app.add_option("--execution", o.execution,
                     "ced (encoder over the prompt, decoder tail replay, causal candidate "
                     "indexing) or reference (every layer over every position, rectangular index "
                     "scores)")
          ->check(CLI::IsMember({"ced", "reference"}));
      app.add_option("--index-scan", o.index_scan,
                     "Index scores: causal (completed entries visible to each query) or "
                     "rectangular (the whole rectangle, masked afterwards)")
          ->check(CLI::IsMember({"causal", "rectangular"}));
      return;
    case option_group::layout:
      app.add_option("--tp,--tensor-parallel-size", o.tp,
                     "Tensor-parallel cards: heads and matrix columns split over them (default 1)");
      app.add_option("--pp,--pipeline-parallel-size", o.pp,
                     "Pipeline stages: contiguous layers per card group (default 1)");
      only_in(app.add_option("--ep,--expert-parallel-size", o.ep,
                             "Expert-parallel cards within the tp group: whole routed experts "
                             "spread over them (default 1)"),
              c, kPlainOnly,
              "not taken with --engine: calc's engine rules split experts over the "
              "tensor-parallel ranks (the same bytes per rank as vLLM's "
              "--enable-expert-parallel at data parallel 1)");
      only_in(app.add_option("--dp,--data-parallel-size", o.dp,
                             "Attention data parallel within the tp group: each of dp groups runs "
                             "attention for its own requests (SGLang's DP attention; default 1). "
                             "vLLM counts cards otherwise: its --tensor-parallel-size 1 "
                             "--data-parallel-size 8 is calc's --tp 8 --dp 8 (serve and plan print "
                             "launch_flags in the engine's terms)"),
              c, kPlainOnly);
      return;
    case option_group::workspace:
      only_in(app.add_option("--workspace", o.workspace,
                             "Reserved bytes per card (activations, buffers), e.g. 2GiB (default "
                             "2GiB); with --engine the engine's own budget replaces it"),
              c, kPlainOnly,
              "not taken with --engine: the engine reserves its own activation and non-torch "
              "memory; give --activation-memory (vLLM) or --kv-memory");
      return;
    case option_group::search:
      app.add_option(
          "--node-gpus", o.node_gpus,
          "Cards per server; beyond one server, whole servers (default: the card's server_gpus in "
          "`calc gpus`, 8 for most, 1 for GH200)");
      app.add_option(
          "--max-gpus", o.max_gpus,
          fmt::format("Largest card count to try (default {})", limits::default_max_gpus));
      return;
    case option_group::engine:
      {
        // Every engine knob but --engine itself is read only with --engine.
        std::size_t before = app.get_options().size();
        add_engine_options(app, o, c.name == std::string("report"));
        std::vector<CLI::Option*> all = app.get_options();
        for (std::size_t i = before; i < all.size(); ++i)
          if (all[i]->get_name() != "--engine") all[i]->group(kEngineOnly);
      }
      return;
  }
}

void check_mode_options(const CLI::App& sub, const options& o) {
  bool engine = !o.engine.empty();
  // Knobs one engine has and the other does not.
  static const std::vector<std::pair<std::string, std::string>> own_engine = {
      {"--gpu-memory-utilization", "vllm"},     {"--mem-fraction-static", "sglang"},
      {"--limit-mm-per-prompt", "vllm"},        {"--disable-radix-cache", "sglang"},
      {"--max-mamba-cache-size", "sglang"},     {"--mamba-full-memory-ratio", "sglang"},
      {"--mamba-scheduler-strategy", "sglang"}, {"--allow-chunked-local-hybrid", "vllm"},
      {"--activation-memory", "vllm"},          {"--enable-prefix-caching", "vllm"}};
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0) continue;
    for (const auto& [name, which] : own_engine)
      if (engine && opt->get_name() == name && o.engine != which)
        throw spec_error(name, fmt::format("is {}'s knob; --engine {} does not read it", which,
                                           o.engine));
    // plan --sla batches under its default engine (vllm) too: it reads these knobs.
    bool sla_reads = !o.sla.empty() && (opt->get_name() == "--max-num-seqs" ||
                                        opt->get_name() == "--max-num-batched-tokens" ||
                                        opt->get_name() == "--gpu-memory-utilization" ||
                                        opt->get_name() == "--mem-fraction-static");
    if (!engine && opt->get_group() == kEngineOnly && !sla_reads)
      throw spec_error(opt->get_name(),
                       fmt::format("applies only with --engine vllm or sglang (`calc {}` without "
                                   "--engine does not read it)",
                                   sub.get_name()));
    if (engine && opt->get_group() == kPlainOnly) {
      auto why = refusal_reasons().find(fmt::format("{} {}", sub.get_name(), opt->get_name()));
      if (why != refusal_reasons().end()) throw spec_error(opt->get_name(), why->second);
      throw spec_error(opt->get_name(),
                       fmt::format("is not read with --engine {} (the engine's rules decide it); "
                                   "drop it or drop --engine",
                                   o.engine));
    }
  }
}

CLI::Validator token_suffixes() {
  return CLI::Validator(
      [](std::string& text) {
        // Rewrites 32K as 32768 for CLI11's integer conversion; other text passes unchanged
        // and CLI11 reports it.
        if (auto n = parse_token_count(text)) text = std::to_string(*n);
        return std::string();
      },
      "", "token suffixes");
}

std::vector<std::string> split_items(const std::string& option, const std::string& text,
                                     const std::string& example) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    std::size_t first = item.find_first_not_of(" \t");
    if (first == std::string::npos)
      throw spec_error(option, fmt::format("'{}' has an empty item: separate the values by "
                                           "single commas, e.g. {}",
                                           text, example));
    // "1, 8" as a shell user types a list: the spaces around an item are not part of it.
    out.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
    start = end + 1;
  }
  return out;
}

namespace {

/// One length as typed: a count with an optional K/M/G suffix, within [0, kMaxLength].
std::int64_t one_length(const std::string& option, const std::string& text) {
  if (text.starts_with('-') && looks_like_token_count(text.substr(1)))
    throw spec_error(option, fmt::format("must not be negative, got {}", text));
  if (!looks_like_token_count(text))
    throw spec_error(option, fmt::format("'{}' is not a length such as 8192, 128K or 1M", text));
  auto n = parse_token_count(text);
  if (!n || *n > kMaxLength)  // quoted as typed: 2^63 - 1 would say nothing useful
    throw spec_error(option, fmt::format("{} is beyond the supported {} tokens", text, kMaxLength));
  return *n;
}

/// FROM:TO:xFACTOR (geometric) or FROM:TO:+STEP (arithmetic), each bound with suffixes allowed.
void append_range(const std::string& option, const std::string& text,
                  std::vector<std::int64_t>& out) {
  auto fail = [&] {
    throw spec_error(option, fmt::format("'{}' is not FROM:TO:xFACTOR or FROM:TO:+STEP", text));
  };
  std::size_t a = text.find(':'), b = text.find(':', a + 1);
  if (b == std::string::npos || b + 2 > text.size()) fail();
  std::string from_text = text.substr(0, a), to_text = text.substr(a + 1, b - a - 1);
  char kind = text[b + 1];
  std::string step_text = text.substr(b + 2);
  if ((kind != 'x' && kind != '+') || !looks_like_token_count(from_text) ||
      !looks_like_token_count(to_text) || !looks_like_token_count(step_text))
    fail();
  std::int64_t from = one_length(option, from_text), to = one_length(option, to_text);
  auto step = parse_token_count(step_text);
  bool geometric = kind == 'x';
  if (from < 1 || to < from || !step || *step < (geometric ? 2 : 1)) fail();
  constexpr auto kMaxPoints = static_cast<std::size_t>(limits::sweep_rows);
  for (std::int64_t n = from;;) {
    if (out.size() >= kMaxPoints)
      throw spec_error(option, fmt::format("'{}' gives more than {} lengths", text, kMaxPoints));
    out.push_back(n);
    // Stop before the next point passes `to` (tested without overflowing: n * step > to).
    if (geometric ? n > to / *step : n > to - *step) break;
    n = geometric ? n * *step : n + *step;
  }
}

}  // namespace

std::vector<std::int64_t> parse_lengths(const std::string& option, const std::string& text) {
  if (text.find_first_not_of(" ,") == std::string::npos)
    throw spec_error(option,
                     "no length given; give tokens such as 8192 or 128K, a list 4K,8K, or a "
                     "range 1K:1M:x2");
  std::vector<std::int64_t> out;
  for (const std::string& item : split_items(option, text, "4K,8K")) {
    if (item.find(':') != std::string::npos)
      append_range(option, item, out);
    else
      out.push_back(one_length(option, item));
  }
  return out;
}

void read_lists(const command& c, bool model_given, bool length_given, options& o) {
  if (model_given) {
    if (o.model.find_first_not_of(" ,") == std::string::npos)
      throw spec_error("--model",
                       fmt::format("the model list '{}' is empty; name a model such as qwen3-8b "
                                   "(`calc models` lists them)",
                                   o.model));
    o.models = split_items("--model", o.model, "qwen3-8b,qwen3-32b");
    if (!(c.lists & model_list) && o.models.size() > 1)
      throw spec_error("--model", fmt::format("`calc {}` takes one model, got {}; `calc compare` "
                                              "and `calc report` take several",
                                              c.name, o.models.size()));
    o.model = o.models.front();
  }
  if (length_given) {
    o.lengths = parse_lengths("--length", o.length_text);
    if (!(c.lists & length_list) && o.lengths.size() > 1)
      throw spec_error("--length",
                       fmt::format("`calc {}` takes one length, got {}", c.name, o.lengths.size()));
    o.length = o.lengths.front();
  }
}

void check_count(const std::string& option, std::int64_t v, std::int64_t min) {
  if (v < min)
    throw spec_error(option, min == 0 ? fmt::format("must not be negative, got {}", v)
                                      : fmt::format("must be at least {}, got {}", min, v));
  if (v > kMaxLength)
    throw spec_error(option, fmt::format("{} is beyond the supported {} tokens", v, kMaxLength));
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

namespace {

using model_key = std::pair<std::string, std::vector<std::string>>;  // path, --set list

/// What a model_cache_scope keeps: each model file (with its --set list) and each accelerator
/// read once.
struct read_cache {
  std::map<model_key, model_spec> models;
  std::map<std::string, gpu_spec> gpus;  // by the name or path as given
};
read_cache* cache = nullptr;  // set while a model_cache_scope lives

model_spec read_model(const options& o) {
  std::string path = resolve_model_path(o.model);
  if (!cache) return read_model_file(path, o.sets);
  model_key key{path, o.sets};
  auto it = cache->models.find(key);
  if (it == cache->models.end()) it = cache->models.emplace(key, read_model_file(path, o.sets)).first;
  return it->second;
}

}  // namespace

gpu_spec load_gpu(const std::string& name_or_path) {
  if (!cache) return find_gpu(name_or_path);
  auto it = cache->gpus.find(name_or_path);
  if (it == cache->gpus.end()) it = cache->gpus.emplace(name_or_path, find_gpu(name_or_path)).first;
  return it->second;
}

model_cache_scope::model_cache_scope() : owner_(cache == nullptr) {
  if (owner_) cache = new read_cache();
}

model_cache_scope::~model_cache_scope() {
  if (!owner_) return;
  delete cache;
  cache = nullptr;
}

namespace {
warning_sink* current_sink = nullptr;
}  // namespace

warning_sink::warning_sink() : outer_(current_sink) { current_sink = this; }
warning_sink::~warning_sink() { current_sink = outer_; }
void warning_sink::add(const std::string& line) {
  if (current_sink && std::find(current_sink->lines_.begin(), current_sink->lines_.end(), line) ==
                          current_sink->lines_.end())
    current_sink->lines_.push_back(line);
}

/// Reads the model, applies --set, then the execution-path options over the model's defaults.
namespace {

/// Whether a layer scores an index before main attention reads its top-k (DSA's indexer on
/// MLA or on DeepSeek V4's record): what --index-scan counts.
bool scans_an_index(const graph& g) {
  for (const layer& l : g.layers) {
    if (const auto* a = std::get_if<attention_mla>(&l.attention); a && a->indexer) return true;
    if (const auto* a = std::get_if<attention_dsa>(&l.attention); a && a->indexer) return true;
  }
  return false;
}

/// Whether a layer has both a chunked and a recurrent form over several new tokens, which
/// --linear chooses between: GDN, KDA and Mamba2's SSD (alone or beside attention). Mamba-1's
/// selective scan and a short convolution run one way only.
bool has_linear_choice(const graph& g) {
  auto ssd = [](const attention_mamba2& m) {
    return m.scan == attention_mamba2::scan_kind::ssd;
  };
  for (const layer& l : g.layers) {
    if (std::holds_alternative<attention_gdn>(l.attention) ||
        std::holds_alternative<attention_kda>(l.attention))
      return true;
    if (const auto* m = std::get_if<attention_mamba2>(&l.attention); m && ssd(*m)) return true;
    if (const auto* p = std::get_if<attention_parallel>(&l.attention); p && ssd(p->mixer))
      return true;
  }
  return false;
}

/// An execution choice for layers the model does not have would change nothing: refused by
/// name, as --execution ced and --storage production are.
void refuse_paths_without_layers(const options& o, const loaded_model& m) {
  // A list (compare, report) applies the choice to the models that have such layers.
  if (o.models.size() > 1) return;
  const graph& g = m.g;
  auto refuse = [&](const char* option, const std::string& value, const char* lacks) {
    throw spec_error(option,
                     fmt::format("'{}' changes nothing: {} has no {}", value, m.spec->name, lacks));
  };
  if (!o.mla_path.empty() && !has_attention<attention_mla>(g))
    refuse("--mla-path", o.mla_path, "MLA layer");
  if (!o.linear.empty() && !has_linear_choice(g))
    refuse("--linear", o.linear,
           "layer with a chunked form (GDN, KDA, Mamba2's SSD; Mamba-1's selective scan and "
           "short convolutions run one way)");
  if (!o.index_scan.empty() && !scans_an_index(g))
    refuse("--index-scan", o.index_scan, "indexer (DeepSeek sparse attention)");
  if (o.execution == "reference" && !m.spec->ced && !scans_an_index(g))
    refuse("--execution", o.execution, "CED split and no indexer");
}

}  // namespace

loaded_model load(const options& o) {
  loaded_model m;
  m.spec = std::make_unique<model_spec>(read_model(o));
  m.file_embedding = m.spec->precision.embedding;
  // The longest context the command asks about: a length (or a range's end), S + P of a call,
  // S + P + G - 1 of a request, an engine's --max-model-len.
  // Options are not range-checked yet here: the sums saturate instead of overflowing.
  auto sum = [](std::int64_t a, std::int64_t b) {
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
    a = std::max<std::int64_t>(a, 0), b = std::max<std::int64_t>(b, 0);
    return a > top - b ? top : a + b;
  };
  std::int64_t asked = std::max(o.length, o.max_model_len);
  for (std::int64_t n : o.lengths) asked = std::max(asked, n);
  // forward leaves G at 1, so S + P + G - 1 is its S + P.
  if (o.prompt >= 0) asked = std::max(asked, sum(sum(o.context, o.prompt), o.generate) - 1);
  // serve and plan --sla: a request's prompt and output, as the engines check them against
  // max_model_len (a trace's requests are checked as it is read).
  if (o.isl && o.osl) asked = std::max(asked, sum(*o.isl, *o.osl));
  if (auto w = context_limit_warning(*m.spec, asked)) warning_sink::add(*w);
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
  if (!o.weights.empty()) m.spec->precision.set_weights(format_option("--weights", o.weights));
  if (!o.embeddings.empty()) {
    m.spec->precision.embedding = format_option("--embeddings", o.embeddings);
    m.spec->precision.head = m.spec->precision.embedding;
  }
  if (!o.kv.empty() && o.kv != "auto")
    m.spec->precision.kv = format_option("--kv", engine_format_name(o.kv));
  m.g = build_graph(*m.spec);
  refuse_paths_without_layers(o, m);
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

bool was_typed(const options& o, std::string_view flag) {
  return std::find(o.given.begin(), o.given.end(), flag) != o.given.end();
}

std::int64_t least_typed(const options& o, std::string_view flag) {
  return was_typed(o, flag) ? 1 : 0;
}

std::optional<std::int64_t> node_gpus_option(const options& o) {
  if (o.node_gpus) check_limit("--node-gpus", *o.node_gpus, 1, limits::cards, "cards");
  return o.node_gpus;
}

std::int64_t token_option(const std::string& option, const std::optional<std::int64_t>& v,
                          std::optional<std::int64_t> fallback) {
  if (!v) {
    if (fallback) return *fallback;
    throw spec_error(option, "is required: give a count of tokens, e.g. 1024 or 8K");
  }
  check_limit(option, *v, 1, limits::tokens, "tokens");
  return *v;
}

ojson fraction_json(const fraction& f) {
  if (f.is_integer()) return exact(f.num);
  return f.value();
}

ojson ratio_json(const std::optional<fraction>& r) {
  if (!r) return nullptr;
  return fraction_json(*r);
}

const char* class_name(state_class k) { return state_class_name(k); }

}  // namespace calc::cli
