// `capacity --engine vllm|sglang` and `plan --engine ...`: binds the engine's knobs (spelled as
// the engine spells them) into the typed questions of src/engine/question.h and serialises their
// answers. No arithmetic here: the budget, the allocation and the layout search live in
// src/engine/. Options of plain capacity/plan that no engine shares are refused by name.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/support.h"
#include "common/units.h"
#include "engine/engine.h"
#include "engine/question.h"
#include "spec/component_reader.h"
#include "spec/gpu_spec.h"
#include "spec/hf/checkpoint.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"
#include "tally/component.h"

namespace calc::cli {

namespace {

/// "18.69GiB" -> bytes, rounded down: the engines print GiB with two decimals, which are not a
/// whole number of bytes. Units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.
checked parse_memory(const std::string& option, const std::string& text) {
  static const std::vector<std::pair<std::string, std::int64_t>> units = {{"TiB", 1LL << 40},
                                                                          {"GiB", 1LL << 30},
                                                                          {"MiB", 1LL << 20},
                                                                          {"KiB", 1LL << 10},
                                                                          {"TB", 1000000000000},
                                                                          {"GB", 1000000000},
                                                                          {"MB", 1000000},
                                                                          {"KB", 1000},
                                                                          {"B", 1},
                                                                          {"", 1}};
  std::size_t i = 0;
  checked whole = 0, frac = 0, den = 1;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) && den < 1000000000000LL) {
      digits = true;
      (point ? frac : whole) = (point ? frac : whole) * 10 + (c - '0');
      if (point) den = den * 10;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  // A bare number is bytes; a fraction of a byte is the log's "6.51" with its GiB left off.
  bool bytes_with_fraction = unit.empty() && point;
  for (const auto& [name, scale] : units)
    if (digits && unit == name && whole < (1LL << 40) && !bytes_with_fraction)
      return whole * scale + frac * scale / den;
  throw spec_error(option, fmt::format("'{}' is not a size such as 18.69GiB or 40GB{}", text,
                                       bytes_with_fraction ? " (a bare number is bytes)" : ""));
}

/// The engines' --kv-cache-dtype spellings, as calc formats; nullopt for "auto".
std::optional<dtype> kv_dtype(const std::string& option, const std::string& text) {
  if (text.empty() || text == "auto") return std::nullopt;
  if (text == "fp8" || text == "fp8_e4m3" || text == "fp8_e5m2") return parse_dtype("fp8");
  if (text == "bfloat16" || text == "bf16") return parse_dtype("bf16");
  if (text == "float16" || text == "fp16" || text == "half") return parse_dtype("fp16");
  if (text == "float32" || text == "fp32") return parse_dtype("fp32");
  throw spec_error(option, fmt::format("'{}' is not auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, "
                                       "float16 or float32",
                                       text));
}

/// Every --kv-memory value: one for all ranks, or a comma list with one per rank.
std::vector<checked> parse_memory_list(const std::string& text) {
  std::vector<checked> out;
  for (const std::string& part : split_items("--kv-memory", text, "18.69GiB,18.5GiB"))
    out.push_back(parse_memory("--kv-memory", part));
  for (const checked& b : out)
    if (b.value() <= 0)
      throw spec_error("--kv-memory",
                       "must be more than 0 bytes: an engine that logged no KV "
                       "memory holds no request");
  if (out.empty()) throw spec_error("--kv-memory", "give a size such as 18.69GiB");
  return out;
}

/// The context length the engine must hold: --max-model-len, else the --length given to the
/// command (one value), defaulting to the model's max_position_embeddings (lengths_or_limit);
/// a model without a published limit needs one of them.
std::int64_t context_length(const options& o, const std::vector<std::int64_t>& lengths) {
  if (lengths.size() > 1)
    throw spec_error("--length",
                     "give one context length with --engine (the engine's "
                     "--max-model-len)");
  std::int64_t given = lengths.empty() ? 0 : lengths.front();
  // A typed 0 is not "left out": the engine's context holds at least one token.
  if (!lengths.empty()) check_count("--max-model-len", given, 1);
  if (o.max_model_len > 0 && given > 0 && given != o.max_model_len)
    throw spec_error("--length", fmt::format("{} disagrees with --max-model-len {}: with "
                                             "--engine both name the engine's context length",
                                             given, o.max_model_len));
  std::int64_t len = o.max_model_len > 0 ? o.max_model_len : given;
  if (len == 0 && o.max_model_len == 0)
    throw spec_error("--max-model-len",
                     "give the context length the engine must hold (--max-model-len or "
                     "--length); the engines default to the model's max_position_embeddings, "
                     "which this model's file does not give");
  check_count("--max-model-len", len, 1);
  return len;
}

/// The engines' default --max-model-len: the model's own limit (max_position_embeddings) when no
/// length is given.
std::vector<std::int64_t> lengths_or_limit(std::vector<std::int64_t> lengths,
                                           const loaded_model& m) {
  if (lengths.empty() && m.spec->max_position_embeddings)
    lengths.push_back(*m.spec->max_position_embeddings);
  return lengths;
}

/// The engine's block size: --block-size, or --page-tokens, which names the same thing (a
/// request's history in whole blocks of this many tokens).
std::int64_t block_size(const options& o) {
  // One option, three spellings (--page-tokens, --block-size, --page-size): typed, an engine's
  // block holds at least one token (0 is plain capacity's "unpaged", not a block size).
  check_count("--block-size", o.block_size, least_typed(o, "--page-tokens"));
  check_count("--page-tokens", o.page_tokens, 0);
  if (o.block_size > 0 && o.page_tokens > 0 && o.block_size != o.page_tokens)
    throw spec_error("--page-tokens", fmt::format("{} disagrees with --block-size {}: with "
                                                  "--engine both name the engine's block size",
                                                  o.page_tokens, o.block_size));
  return o.block_size > 0 ? o.block_size : o.page_tokens;
}

/// vLLM's --speculative-config (JSON) and --num-speculative-tokens as the engine config's
/// speculative part. Reads "method", "num_speculative_tokens" and, for EAGLE, "model" (the
/// draft's config, loaded into `draft`); other keys do not change the pool and are not read.
engine::speculative_config speculative_of(const options& o, std::optional<loaded_model>& draft) {
  engine::speculative_config s;
  check_count("--num-speculative-tokens", o.num_speculative_tokens, 0);
  if (o.speculative_config.empty()) {
    // Proposals without draft layers in the pool (n-gram, or a drafter calc is not told of).
    s.tokens = o.num_speculative_tokens;
    if (s.tokens > 0) s.method = "ngram";
    return s;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(o.speculative_config);
  } catch (const nlohmann::json::exception&) {
    throw spec_error("--speculative-config",
                     "expected a JSON object such as {\"method\": \"mtp\", "
                     "\"num_speculative_tokens\": 1}");
  }
  if (!j.is_object() || !j.contains("method") || !j["method"].is_string())
    throw spec_error("--speculative-config", "give \"method\" (mtp, eagle, eagle3, ngram, ...)");
  s.method = j["method"].get<std::string>();
  std::int64_t tokens = o.num_speculative_tokens;
  if (j.contains("num_speculative_tokens")) {
    if (!j["num_speculative_tokens"].is_number_integer() ||
        j["num_speculative_tokens"].get<std::int64_t>() < 1)
      throw spec_error("--speculative-config", "num_speculative_tokens must be an integer >= 1");
    auto n = j["num_speculative_tokens"].get<std::int64_t>();
    if (was_typed(o, "--num-speculative-tokens") && tokens != n)
      throw spec_error("--num-speculative-tokens",
                       fmt::format("{} disagrees with --speculative-config's {}", tokens, n));
    tokens = n;
  }
  if (tokens < 1)
    throw spec_error("--speculative-config",
                     "give num_speculative_tokens (or --num-speculative-tokens)");
  s.tokens = tokens;
  using drafter = engine::speculative_config::drafter;
  if (s.method.find("mtp") != std::string::npos) {
    s.draft = drafter::mtp;
  } else if (s.method == "eagle" || s.method == "eagle3") {
    if (!j.contains("model") || !j["model"].is_string())
      throw spec_error("--speculative-config",
                       fmt::format("method '{}' needs \"model\": the draft's config (a bundled "
                                   "name, a calc YAML or its config.json)",
                                   s.method));
    options d = o;
    d.model = j["model"].get<std::string>();
    d.models = {d.model};
    d.sets.clear();
    draft = load(d);
    s.draft = drafter::model;
    s.draft_model = &draft->g;
  } else if (s.method == "ngram" || s.method == "suffix") {
    s.draft = drafter::none;
  } else {
    throw spec_error("--speculative-config",
                     fmt::format("method '{}' is not modelled (calc reads mtp methods, eagle, "
                                 "eagle3, ngram and suffix)",
                                 s.method));
  }
  return s;
}

/// The limits of vLLM's --limit-mm-per-prompt, e.g. '{"image": 0, "video": 0}', by modality.
std::map<std::string, std::int64_t> mm_limits_of(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw spec_error("--limit-mm-per-prompt",
                     "expected a JSON object such as {\"image\": 0, \"video\": 0}");
  }
  if (!j.is_object() || j.empty())
    throw spec_error("--limit-mm-per-prompt",
                     "expected a JSON object such as {\"image\": 0, \"video\": 0}");
  std::map<std::string, std::int64_t> limits;
  for (const auto& item : j.items()) {
    const nlohmann::json& v = item.value();
    // A count, or (newer vLLM) an object whose "count" is the limit.
    const nlohmann::json& count = v.is_object() && v.contains("count") ? v["count"] : v;
    if (!count.is_number_integer() || count.get<std::int64_t>() < 0)
      throw spec_error("--limit-mm-per-prompt",
                       fmt::format("'{}' needs a count >= 0", item.key()));
    limits[item.key()] = count.get<std::int64_t>();
  }
  return limits;
}

}  // namespace

/// The vision tower and projector of a multimodal model: the components its YAML counts
/// (model_spec's `components`, from vision_config), plus a tower its safetensors headers store
/// that no component counts (the named difference of spec/hf/checkpoint.h); 0 for neither.
checked vision_bytes_of(const options& o, const loaded_model& m) {
  std::string path = resolve_model_path(o.model);
  checked bytes =
      component_bytes(read_model_components(path, m.file_embedding, o.sets));
  if (!hf::is_hf_config(path)) return bytes;
  std::optional<hf::checkpoint> ck = hf::read_checkpoint(path);
  if (!ck) return bytes;
  hf::checkpoint_comparison c = hf::compare_checkpoint(
      *ck, 0, m.spec->layers.count, m.spec->tie_embeddings, bytes.value());
  for (const hf::checkpoint_difference& d : c.differences)
    if (d.name.find("vision") != std::string::npos) bytes += d.bytes;
  return bytes;
}

namespace {

/// The modalities a model's tower takes, as vLLM registers them: images, and video where the
/// patch embedding spans frames (temporal_patch > 1: Qwen2-VL's Conv3d over frame pairs).
std::vector<std::string> tower_modalities(const options& o, const loaded_model& m) {
  for (const component_spec& c :
       read_model_components(resolve_model_path(o.model), m.file_embedding, o.sets))
    if (c.vit.temporal_patch > 1) return {"image", "video"};
  return {"image"};
}

/// The tower's bytes and whether vLLM skips it (its text-only mode: every modality the model
/// takes limited to 0; one left out keeps its default limit, and the tower). Refuses
/// --limit-mm-per-prompt on a model without a tower (it would change nothing: there is no
/// tower to skip).
void set_tower(const options& o, const loaded_model& m, engine::memory_request& memory) {
  memory.vision_bytes = vision_bytes_of(o, m);
  if (o.limit_mm_per_prompt.empty()) return;
  if (memory.vision_bytes.value() <= 0)
    throw spec_error(
        "--limit-mm-per-prompt",
        fmt::format("changes nothing: {} has no vision tower to load or skip", m.spec->name));
  std::map<std::string, std::int64_t> limits = mm_limits_of(o.limit_mm_per_prompt);
  std::vector<std::string> takes = tower_modalities(o, m);
  memory.modalities = fmt::format("{}", fmt::join(takes, " and "));
  memory.text_only = std::all_of(takes.begin(), takes.end(), [&](const std::string& t) {
    auto it = limits.find(t);
    return it != limits.end() && it->second == 0;
  });
}

/// Binds the engine options into the capacity question (validation of option text here, the
/// arithmetic in src/engine/question.cpp).
engine::capacity_request capacity_request_of(const options& o, std::int64_t tp, std::int64_t pp,
                                             const std::vector<std::int64_t>& lengths,
                                             const std::string& gpu_name,
                                             std::optional<loaded_model>& draft) {
  engine::capacity_request q;
  q.rules = &engine::find_rules(o.engine, o.engine_version);
  check_count("--max-num-batched-tokens", o.max_num_batched_tokens,
              least_typed(o, "--max-num-batched-tokens"));
  check_count("--max-num-seqs", o.max_num_seqs, least_typed(o, "--max-num-seqs"));
  engine::engine_config& c = q.config;
  c.tensor_parallel = tp;
  c.pipeline_parallel = pp;
  c.max_model_len = context_length(o, lengths);
  c.block_size = block_size(o);
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  c.max_num_seqs = o.max_num_seqs;
  c.kv_cache_dtype = kv_dtype("--kv-cache-dtype", o.kv_cache_dtype);
  c.state_dtype = kv_dtype("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype);
  c.prefix_caching = o.enable_prefix_caching;
  c.speculative = speculative_of(o, draft);
  c.radix_cache = !o.disable_radix_cache;
  check_count("--max-mamba-cache-size", o.max_mamba_cache_size,
              least_typed(o, "--max-mamba-cache-size"));
  c.max_mamba_cache_size = o.max_mamba_cache_size;
  if (was_typed(o, "--mamba-full-memory-ratio"))
    c.mamba_full_memory_ratio = o.mamba_full_memory_ratio;
  if (!o.mamba_scheduler_strategy.empty() && o.mamba_scheduler_strategy != "no_buffer" &&
      o.mamba_scheduler_strategy != "extra_buffer")
    throw spec_error("--mamba-scheduler-strategy",
                     fmt::format("'{}' is not no_buffer or extra_buffer",
                                 o.mamba_scheduler_strategy));
  c.mamba_extra_buffer = o.mamba_scheduler_strategy == "extra_buffer";
  if (!o.allow_chunked_local_hybrid.empty()) {
    if (o.allow_chunked_local_hybrid != "0" && o.allow_chunked_local_hybrid != "1")
      throw spec_error("--allow-chunked-local-hybrid",
                       fmt::format("'{}' is not 0 or 1", o.allow_chunked_local_hybrid));
    c.chunked_local_hybrid = o.allow_chunked_local_hybrid == "1";
  }
  // With a logged KV figure the card is not the budget's source, but its memory still bounds
  // the layout's weights (engine/question.cpp).
  if (!o.kv_memory.empty()) {
    q.memory.logged = parse_memory_list(o.kv_memory);
    // The logged figure replaces the estimate: the estimate's knobs would change nothing.
    for (const char* knob :
         {"--gpu-memory-utilization", "--activation-memory", "--mem-fraction-static"})
      if (was_typed(o, knob))
        throw spec_error(knob, fmt::format("is not read with --kv-memory: the engine's logged KV "
                                           "memory replaces the estimate {} feeds; give one "
                                           "or the other",
                                           knob));
  }
  if (!gpu_name.empty()) q.memory.gpu = load_gpu(gpu_name);
  q.memory.gpu_memory_utilization = o.gpu_memory_utilization;
  // Not given: SGLang's computed default; typed, checked as given (0 is outside (0, 1]).
  if (was_typed(o, "--mem-fraction-static")) q.memory.mem_fraction_static = o.mem_fraction_static;
  q.memory.engine_version = o.engine_version;
  if (!o.limit_mm_per_prompt.empty()) mm_limits_of(o.limit_mm_per_prompt);  // checked early
  if (!o.activation_memory.empty())
    q.memory.activation = parse_memory("--activation-memory", o.activation_memory);
  return q;
}

/// The capacity answer as JSON, keys as they have always been.
ojson to_json(const loaded_model& m, const engine::capacity_result& r) {
  const engine::rule_set& rules = *r.rules;
  const engine::engine_capacity& e = r.capacity;
  const engine::engine_config& c = r.config;
  ojson j;
  j["model"] = m.spec->name;
  j["engine"] = rules.engine;
  j["engine_rules"] = rules.id;
  j["engine_versions"] = rules.versions;
  j["rules_source"] = rules.source;
  j["tensor_parallel_size"] = c.tensor_parallel;
  j["pipeline_parallel_size"] = c.pipeline_parallel;
  j["max_model_len"] = c.max_model_len;
  j["kv_cache_dtype"] = c.kv_cache_dtype ? c.kv_cache_dtype->name : m.spec->precision.kv.name;
  if (c.prefix_caching) j["enable_prefix_caching"] = true;
  if (c.speculative.tokens > 0) {
    j["speculative_method"] = c.speculative.method;
    j["num_speculative_tokens"] = c.speculative.tokens;
  }
  if (c.max_num_seqs > 0) j["max_num_seqs"] = c.max_num_seqs;
  j["weight_bytes_per_rank"] = exact(r.weight_bytes_per_rank);
  if (r.vision_bytes_per_rank > 0)
    j["vision_weight_bytes_per_rank"] = exact(r.vision_bytes_per_rank);
  if (!r.vision_note.empty()) j["vision_tower"] = r.vision_note;
  if (r.activation_bytes > 0) j["activation_estimate_bytes"] = exact(r.activation_bytes);
  if (r.card_memory > 0) j["card_memory_bytes"] = exact(r.card_memory);
  if (r.budget) {
    // The estimate term by term (docs/engines.md, "Available memory"); the card memory, the
    // weights per rank and the result are the top-level keys of the same names.
    const engine::budget_terms& t = r.terms;
    ojson b;
    b["rules"] = r.budget->versions;
    b["rules_source"] = r.budget->source;
    b["fraction"] = t.fraction;
    b["fraction_source"] = t.fraction_source;
    b["engine_share_bytes"] = exact(t.engine_share);
    if (std::string(rules.engine) == "vllm") {
      b["batched_tokens"] = t.batched_tokens;
      b["sampler_rows"] = t.sampler_rows;
      b["forward_peak_bytes"] = exact(t.forward_peak);
      b["sampler_peak_bytes"] = exact(t.sampler_peak);
      b["activation_peak_bytes"] = exact(t.activation_peak);
      b["non_torch_bytes"] = exact(t.non_torch);
      b["cuda_graph_bytes"] = exact(t.cuda_graph);
      if (r.memory_source.find("--activation-memory") != std::string::npos)
        b["activation_memory_given_bytes"] = exact(r.activation_bytes);
    }
    j["budget"] = b;
  }
  j["available_kv_bytes"] = exact(e.available_kv_bytes);
  if (!c.rank_kv_bytes.empty()) {
    ojson ranks = ojson::array();
    for (const checked& b : c.rank_kv_bytes) ranks.push_back(exact(b));
    j["rank_kv_bytes"] = ranks;
  }
  j["available_kv_source"] = r.memory_source;
  j["block_size"] = e.block_size;
  j["page_bytes"] = exact(e.page_bytes);
  j["blocks"] = e.blocks;
  j["kv_cache_tokens"] = e.kv_cache_tokens;
  j["blocks_per_request"] = e.blocks_per_request;
  j["max_concurrency"] = e.max_concurrency;
  j["max_model_len_kv_bytes"] = exact(e.max_model_len_kv_bytes);
  if (e.k_pool_bytes > 0) {
    j["k_pool_bytes"] = exact(e.k_pool_bytes);
    j["v_pool_bytes"] = exact(e.v_pool_bytes);
  }
  if (e.mamba_request_bytes > 0) {
    // SGLang's Mamba state pool beside the token pool (docs/engines.md, rule 11a).
    j["max_mamba_cache_size"] = e.mamba_slots;
    j["mamba_request_bytes"] = exact(e.mamba_request_bytes);
    j["conv_state_pool_bytes"] = exact(e.conv_pool_bytes);
    j["ssm_state_pool_bytes"] = exact(e.ssm_pool_bytes);
    j["max_running_requests"] = e.max_running_requests;
  }
  j["fits"] = e.fits;
  if (r.no_memory_left()) {
    // The estimate left nothing for the cache: say which part ate the card.
    j["reason"] = fmt::format(
        "no memory is left for the KV cache: weights per rank {} B{} exceed the engine's share of "
        "the card",
        r.weight_bytes_per_rank.value(),
        r.activation_bytes > 0
            ? fmt::format(" plus the activation estimate {} B", r.activation_bytes.value())
            : std::string());
  } else if (!e.fits) {
    j["reason"] = e.reason;
  }
  if (e.estimated_max_model_len > 0) j["estimated_max_model_len"] = e.estimated_max_model_len;
  ojson groups = ojson::array();
  for (const engine::cache_group& g : e.groups)
    groups.push_back({{"kind", g.kind},
                      {"layers", static_cast<std::int64_t>(g.layers.size())},
                      {"padding", g.padding},
                      {"block_size", g.block_size},
                      {"request_bytes", exact(g.request_bytes)}});
  j["groups"] = groups;
  ojson log = ojson::array();
  for (const std::string& line : e.log) log.push_back({{"line", line}});
  j["log"] = log;
  return j;
}

std::int64_t tp_of(const options& o) { return o.tp; }

std::int64_t pp_of(const options& o) { return o.pp; }

}  // namespace

engine::capacity_request engine_request_of(const options& o, std::int64_t length,
                                           const std::string& gpu_name,
                                           std::optional<loaded_model>& draft) {
  return capacity_request_of(o, 1, 1, {length}, gpu_name, draft);
}

void add_engine_options(CLI::App& app, options& o, bool report) {
  app.add_option("--engine", o.engine,
                 "Answer in a serving engine's terms: vllm or sglang (docs/engines.md)")
      ->check(CLI::IsMember({"vllm", "sglang"}));
  app.add_option("--engine-version", o.engine_version,
                 "Engine version whose rules apply, e.g. 0.9.2 (default: the newest rules)");
  app.add_option("--kv-memory", o.kv_memory,
                 "Engine: the logged KV memory per rank, e.g. 18.69GiB (vLLM's \"Available KV "
                 "cache memory\"), or one per rank as a comma list (the smallest decides); "
                 "without it, estimated from --gpu");
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "vLLM: fraction of the card vLLM may use (default 0.9)");
  app.add_option("--mem-fraction-static", o.mem_fraction_static,
                 "SGLang: fraction of the card for weights and KV pool (default: SGLang's, "
                 "computed from the card and the layout)");
  if (!report)
    app.add_option("--max-num-seqs,--max-running-requests", o.max_num_seqs,
                   "Engine: most requests scheduled at once (reported)")
        ->transform(token_suffixes());
  app.add_option("--max-num-batched-tokens,--chunked-prefill-size", o.max_num_batched_tokens,
                 "Engine: tokens per scheduler step; sliding layers keep window + this (default "
                 "8192; vLLM 2048 on cards under 70 GiB and on A100s, as `vllm serve` picks it)")
      ->transform(token_suffixes());
  app.add_option(
      "--mamba-ssm-cache-dtype,--mamba-ssm-dtype", o.mamba_ssm_cache_dtype,
      "Engine: recurrent-state format of linear-attention and Mamba2 layers (default: the "
      "model's recurrent format in vLLM, float32 in SGLang)");
  // The report counts the requests the pool holds: knobs that are only reported beside it
  // (the scheduler's cap, prefix caching, speculation) are capacity's and plan's.
  if (!report) {
    app.add_flag("--enable-prefix-caching", o.enable_prefix_caching,
                 "Engine: prefix caching on (reported; block tables are unchanged)");
    app.add_option("--speculative-config", o.speculative_config,
                   "Engine: vLLM's speculative decoding JSON, e.g. '{\"method\": \"mtp\", "
                   "\"num_speculative_tokens\": 2}'; draft layers share the pool");
    app.add_option("--num-speculative-tokens", o.num_speculative_tokens,
                   "Engine: tokens proposed per step (alone: no draft layers in the pool)");
    app.add_option("--allow-chunked-local-hybrid", o.allow_chunked_local_hybrid,
                   "vLLM: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE as set (0 or 1; "
                   "default: the release's): 1 keeps Llama 4's chunked local attention layers "
                   "in the hybrid allocator");
    app.add_flag("--disable-radix-cache", o.disable_radix_cache,
                 "SGLang: no prefix cache; a hybrid model's Mamba pool keeps one state per "
                 "running request (--max-running-requests, else 512)");
    app.add_option("--max-mamba-cache-size", o.max_mamba_cache_size,
                   "SGLang: request states the Mamba pool holds (default: its share of the "
                   "memory, --mamba-full-memory-ratio)")
        ->transform(token_suffixes());
    app.add_option("--mamba-full-memory-ratio", o.mamba_full_memory_ratio,
                   "SGLang: Mamba state memory / full-attention KV memory (default 0.9)");
    app.add_option("--limit-mm-per-prompt", o.limit_mm_per_prompt,
                   "vLLM: items per prompt by modality, JSON; all 0 runs a multimodal "
                   "checkpoint text-only, its vision tower not loaded (from 0.10)");
    app.add_option("--mamba-scheduler-strategy", o.mamba_scheduler_strategy,
                   "SGLang: no_buffer (default) or extra_buffer (2 more state slots per "
                   "request)");
  }
  app.add_option("--activation-memory", o.activation_memory,
                 "Engine (vLLM): activation peak + non-torch memory + CUDA graph pool per rank "
                 "instead of the estimate");
}

result run_engine_capacity(const options& o) {
  loaded_model m = load(o);
  if (o.gpu.find(',') != std::string::npos) throw spec_error("--gpu", "name one GPU with --engine");
  std::optional<loaded_model> draft;  // the EAGLE draft, alive while the question runs
  engine::capacity_request q =
      capacity_request_of(o, tp_of(o), pp_of(o), lengths_or_limit(o.lengths, m), o.gpu, draft);
  set_tower(o, m, q.memory);
  engine::capacity_result r = engine::answer_capacity(m.g, q);
  return {to_json(m, r), fmt::format("calc capacity --engine {}: {} ({} {})", o.engine,
                                     m.spec->name, r.rules->engine, r.rules->versions)};
}

result run_engine_plan(const options& o) {
  check_count("--requests", o.requests, 1);
  loaded_model m = load(o);
  if (o.gpu.empty()) throw spec_error("--gpu", "name the accelerator to plan for");
  engine::plan_request q;
  std::vector<std::int64_t> lengths;
  if (o.length >= 0) lengths.push_back(o.length);
  lengths = lengths_or_limit(lengths, m);
  std::optional<loaded_model> draft;  // the EAGLE draft, alive while the question runs
  q.capacity = capacity_request_of(o, 1, 1, lengths, o.gpu, draft);
  set_tower(o, m, q.capacity.memory);
  q.card = load_gpu(o.gpu);
  q.requests = o.requests;
  q.node_gpus = node_gpus_option(o);
  q.max_gpus = o.max_gpus;
  engine::plan_result p = engine::answer_plan(m.g, q);
  std::int64_t len = q.capacity.config.max_model_len;
  if (!p.best) {
    ojson j;
    j["model"] = m.spec->name;
    j["engine"] = o.engine;
    j["gpus"] = nullptr;
    j["requests"] = o.requests;
    j["note"] = fmt::format("no layout of up to {} cards holds {} requests of {} tokens",
                            o.max_gpus, o.requests, len);
    return {j, fmt::format("calc plan --engine {}: {}", o.engine, m.spec->name)};
  }
  ojson j = to_json(m, *p.best);
  j["gpus"] = p.gpus;
  j["instances"] = p.instances;
  j["requests"] = o.requests;
  return {j, fmt::format("calc plan --engine {}: {} on {} cards, {} requests of {} tokens",
                         o.engine, m.spec->name, p.gpus, o.requests, len)};
}

}  // namespace calc::cli
