// `capacity --engine vllm|sglang` and `plan --engine ...`: capacity in the serving engine's own
// terms (src/engine/), with the engine's knobs spelled as the engine spells them. Kept apart
// from commands_serving.cpp so the plain `capacity` and `plan` stay as they were.
#include <fmt/format.h>

#include <cctype>

#include "cli/support.h"
#include "common/units.h"
#include "engine/engine.h"
#include "plan/placement.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"

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
  for (const auto& [name, scale] : units)
    if (digits && unit == name && whole < (1LL << 40)) return whole * scale + frac * scale / den;
  throw spec_error(option, fmt::format("'{}' is not a size such as 18.69GiB or 40GB", text));
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

struct engine_inputs {
  const engine::rule_set* rules = nullptr;
  engine::engine_config config;
  std::string memory_source;  // where available_kv_bytes came from
  checked weight_bytes_per_rank, activation_bytes;
};

/// A rough activation + CUDA-graph reservation (an estimate, documented in docs/engines.md):
/// one profiling batch of max_num_batched_tokens through the widest layer, in bf16, plus 1 GiB
/// for CUDA graphs and non-torch memory. --activation-memory replaces it.
checked activation_estimate(const graph& g, std::int64_t batched, std::int64_t tp) {
  std::int64_t widest = 0;
  for (const layer& l : g.layers) {
    if (const auto* f = std::get_if<ffn_swiglu>(&l.ffn)) widest = std::max(widest, f->intermediate);
    if (const auto* f = std::get_if<ffn_mlp>(&l.ffn)) widest = std::max(widest, f->intermediate);
    if (const auto* f = std::get_if<ffn_moe>(&l.ffn))
      widest = std::max(widest, f->intermediate * f->top_k);
  }
  checked row = checked(4) * g.spec->hidden + checked(2) * widest / tp;  // values per token
  return checked(batched) * row * 2 + (1LL << 30);
}

engine_inputs engine_setup(const options& o, const loaded_model& m, std::int64_t tp,
                           std::int64_t pp, const std::string& gpu_name) {
  engine_inputs in;
  in.rules = &engine::find_rules(o.engine, o.engine_version);
  bool sglang = std::string(in.rules->engine) == "sglang";
  check_count("--max-model-len", o.max_model_len, 1);
  check_count("--block-size", o.block_size, 0);
  check_count("--max-num-batched-tokens", o.max_num_batched_tokens, 0);
  check_count("--max-num-seqs", o.max_num_seqs, 0);
  engine::engine_config& c = in.config;
  c.tensor_parallel = tp;
  c.pipeline_parallel = pp;
  c.block_size = o.block_size;
  c.max_model_len = o.max_model_len;
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  c.max_num_seqs = o.max_num_seqs;
  c.kv_cache_dtype = kv_dtype("--kv-cache-dtype", o.kv_cache_dtype);
  c.state_dtype = kv_dtype("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype);
  c.prefix_caching = o.enable_prefix_caching;
  layout lay{tp, pp, 1};
  if (std::string why = layout_problem(m.g, lay); !why.empty())
    throw spec_error("--tensor-parallel-size", why);
  for (const card_load& cl : card_loads(m.g, lay, 0))
    in.weight_bytes_per_rank = max(in.weight_bytes_per_rank, cl.weight_bytes);
  if (!o.kv_memory.empty()) {
    c.available_kv_bytes = parse_memory("--kv-memory", o.kv_memory);
    in.memory_source = "--kv-memory (the engine's logged value, per rank)";
    return in;
  }
  if (gpu_name.empty())
    throw spec_error("--kv-memory", "give --kv-memory (the engine's logged KV memory) or --gpu");
  gpu_spec gpu = load_gpu(gpu_name);
  double fraction = sglang ? o.mem_fraction_static : o.gpu_memory_utilization;
  const char* knob = sglang ? "--mem-fraction-static" : "--gpu-memory-utilization";
  if (!(fraction > 0 && fraction <= 1))
    throw spec_error(knob, fmt::format("must be in (0, 1], got {}", fraction));
  // card x fraction, exact to the byte: the fraction as parts per million.
  checked budget = checked(gpu.memory) * static_cast<std::int64_t>(fraction * 1e6 + 0.5) / 1000000;
  if (sglang) {
    // SGLang's fraction covers weights and the pool; activations live in the rest.
    c.available_kv_bytes = budget - in.weight_bytes_per_rank;
    in.memory_source = fmt::format("estimate: {} x {} - weights per rank", gpu.name, fraction);
  } else {
    std::int64_t batched = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : 8192;
    in.activation_bytes = o.activation_memory.empty()
                              ? activation_estimate(m.g, batched, tp)
                              : parse_memory("--activation-memory", o.activation_memory);
    c.available_kv_bytes = budget - in.weight_bytes_per_rank - in.activation_bytes;
    in.memory_source = fmt::format(
        "estimate: {} x {} - weights per rank - activation and graph estimate", gpu.name, fraction);
  }
  return in;
}

ojson capacity_json(const loaded_model& m, const engine_inputs& in,
                    const engine::engine_capacity& e, const options& o) {
  const engine::rule_set& r = *in.rules;
  ojson j;
  j["model"] = m.spec->name;
  j["engine"] = r.engine;
  j["engine_rules"] = r.id;
  j["engine_versions"] = r.versions;
  j["rules_source"] = r.source;
  j["tensor_parallel_size"] = in.config.tensor_parallel;
  j["pipeline_parallel_size"] = in.config.pipeline_parallel;
  j["max_model_len"] = in.config.max_model_len;
  j["kv_cache_dtype"] =
      in.config.kv_cache_dtype ? in.config.kv_cache_dtype->name : m.spec->precision.kv.name;
  if (o.enable_prefix_caching) j["enable_prefix_caching"] = true;
  if (o.max_num_seqs > 0) j["max_num_seqs"] = o.max_num_seqs;
  j["weight_bytes_per_rank"] = exact(in.weight_bytes_per_rank);
  if (in.activation_bytes > 0) j["activation_estimate_bytes"] = exact(in.activation_bytes);
  j["available_kv_bytes"] = exact(e.available_kv_bytes);
  j["available_kv_source"] = in.memory_source;
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
  j["fits"] = e.fits;
  if (e.available_kv_bytes <= 0) {
    // The estimate left nothing for the cache: say which part ate the card.
    j["reason"] = fmt::format(
        "no memory is left for the KV cache: weights per rank {} B{} exceed the engine's share of "
        "the card",
        in.weight_bytes_per_rank.value(),
        in.activation_bytes > 0
            ? fmt::format(" plus the activation estimate {} B", in.activation_bytes.value())
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

void add_engine_options(CLI::App& app, options& o, bool plan) {
  app.add_option("--engine", o.engine,
                 "Answer in a serving engine's terms: vllm or sglang (docs/engines.md)")
      ->check(CLI::IsMember({"vllm", "sglang"}));
  app.add_option("--engine-version", o.engine_version,
                 "Engine version whose rules apply, e.g. 0.9.2 (default: the newest rules)");
  app.add_option("--kv-memory", o.kv_memory,
                 "Engine: the logged KV memory per rank, e.g. 18.69GiB (vLLM's \"Available KV "
                 "cache memory\"); without it, estimated from --gpu");
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "vLLM: fraction of the card vLLM may use (default 0.9)");
  app.add_option("--mem-fraction-static", o.mem_fraction_static,
                 "SGLang: fraction of the card for weights and KV pool (default 0.88)");
  app.add_option("--max-num-seqs,--max-running-requests", o.max_num_seqs,
                 "Engine: most requests scheduled at once (reported)");
  app.add_option("--max-num-batched-tokens,--chunked-prefill-size", o.max_num_batched_tokens,
                 "Engine: tokens per scheduler step; sliding layers keep window + this (default "
                 "8192)");
  app.add_option(
      "--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype,
      "Engine: recurrent-state format of linear-attention and Mamba2 layers (default: the "
      "model's recurrent format)");
  app.add_flag("--enable-prefix-caching", o.enable_prefix_caching,
               "Engine: prefix caching on (reported; block tables are unchanged)");
  app.add_option("--activation-memory", o.activation_memory,
                 "Engine: activation + CUDA graph reservation per rank instead of the estimate");
  (void)plan;
}

result run_engine_capacity(const options& o) {
  loaded_model m = load(o);
  std::string gpu = o.gpu;
  if (gpu.find(',') != std::string::npos) throw spec_error("--gpu", "name one GPU with --engine");
  engine_inputs in = engine_setup(o, m, tp_of(o), pp_of(o), gpu);
  engine::engine_capacity e = engine::plan_engine(m.g, *in.rules, in.config);
  ojson j = capacity_json(m, in, e, o);
  return {j, fmt::format("calc capacity --engine {}: {} ({} {})", o.engine, m.spec->name,
                         in.rules->engine, in.rules->versions)};
}

result run_engine_plan(const options& o) {
  check_count("--requests", o.requests, 1);
  check_count("--node-gpus", o.node_gpus, 1);
  loaded_model m = load(o);
  if (o.gpu.empty()) throw spec_error("--gpu", "name the accelerator to plan for");
  // The fewest cards (tp within a node, then pp) whose engine concurrency holds the requests.
  std::optional<ojson> best;
  for (std::int64_t cards = 1; cards <= o.max_gpus && !best; ++cards) {
    if (cards > o.node_gpus && cards % o.node_gpus != 0) continue;
    for (std::int64_t tp = std::min(cards, o.node_gpus); tp >= 1 && !best; --tp) {
      if (cards % tp != 0) continue;
      std::int64_t pp = cards / tp;
      if (pp > static_cast<std::int64_t>(m.g.layers.size())) continue;
      if (!layout_problem(m.g, layout{tp, pp, 1}).empty()) continue;
      engine_inputs in = engine_setup(o, m, tp, pp, o.gpu);
      if (in.config.available_kv_bytes <= 0) continue;
      engine::engine_capacity e = engine::plan_engine(m.g, *in.rules, in.config);
      if (!e.fits || e.max_concurrency < static_cast<double>(o.requests)) continue;
      ojson j = capacity_json(m, in, e, o);
      j["gpus"] = cards;
      j["requests"] = o.requests;
      best = j;
    }
  }
  if (!best) {
    ojson j;
    j["model"] = m.spec->name;
    j["engine"] = o.engine;
    j["gpus"] = nullptr;
    j["requests"] = o.requests;
    j["note"] = fmt::format("no layout of up to {} cards holds {} requests of {} tokens",
                            o.max_gpus, o.requests, o.max_model_len);
    return {j, fmt::format("calc plan --engine {}: {}", o.engine, m.spec->name)};
  }
  return {*best, fmt::format("calc plan --engine {}: {} on {} cards, {} requests of {} tokens",
                             o.engine, m.spec->name, (*best)["gpus"].get<std::int64_t>(),
                             o.requests, o.max_model_len)};
}

}  // namespace calc::cli
