// The engine capacity and plan questions (question.h): the memory budget per rank, then the
// allocation rules of engine.cpp.
#include "engine/question.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "common/error.h"
#include "plan/placement.h"

namespace calc::engine {

namespace {

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;

}  // namespace

const std::vector<budget_rules>& budget_rule_sets() {
  // Each figure is read from the engine's source or its logs; docs/engines.md cites them.
  static const std::vector<budget_rules> table = {
      // V0 (vllm/worker/worker.py determine_num_available_blocks, PR #10511's profiling): the
      // non-torch memory and the sampler's bytes per logit are those of PR #10511's own
      // Meta-Llama-3-8B logs on H100 (1.79 and 3.58 GiB, 1,833 and 3,666 MiB; a 1.26 GiB peak
      // for 256 rows x 128,256 logits, 41 B each: logits, probabilities, log-probabilities and the
      // top-p/top-k sort in fp32 and int64).
      {"vllm", "0.4-0.7 (V0)", 4, 7, 1833 * kMiB, 3666 * kMiB, 41, 256, 256, 0, false,
       "vllm/worker/worker.py (determine_num_available_blocks), vllm/utils.py "
       "(memory_profiling); PR #10511's logs"},
      // V1 (vllm/v1/worker/gpu_worker.py determine_available_memory; gpu_model_runner.py
      // profile_run: _dummy_run(max_num_tokens), then _dummy_sampler_run on one row per request,
      // which skips top-k/top-p/logprobs: bf16 logits, their fp32 copy, the probabilities and
      // the exponential noise of random sampling, 2 + 4 + 4 + 4 B). vllm serve raises
      // max_num_seqs to 1024 on cards of at least 70 GiB (arg_utils.py). Non-torch memory:
      // 0.25 GiB at TP 1, about 2 GiB at TP 2-4 (vLLM 0.19 logs, issue 21). Beside the 256
      // sequences of smaller cards V1 keeps 2048 batched tokens (0.8 keyed the larger defaults
      // on H100 / H200 in the device name, which calc reads as the later 70 GiB rule).
      {"vllm", "0.8-0.9 (V1, CUDA graphs captured after sizing)", 8, 9, 256 * kMiB, 2 * kGiB, 14,
       1024, 256, 0, false,
       "vllm/v1/worker/gpu_worker.py (determine_available_memory), "
       "vllm/v1/worker/gpu_model_runner.py (profile_run, _dummy_sampler_run)",
       false, 8192, 2048},
      // From 0.10 the same deductions; limits of 0 for every modality run a multimodal
      // checkpoint text-only, its vision tower not loaded (PR #22299, merged 2025-08-06).
      // From 0.10 `vllm serve` also keeps 2048 batched tokens and 256 sequences on cards below
      // 70 GiB and on A100s of any size (arg_utils.py get_batch_defaults: "a100" in the device
      // name; PR #17885 measured lower throughput there with the larger budget).
      {"vllm", "0.10-0.20 (V1, CUDA graphs captured after sizing)", 10, 20, 256 * kMiB, 2 * kGiB,
       14, 1024, 256, 0, false,
       "vllm/v1/worker/gpu_worker.py (determine_available_memory), "
       "vllm/v1/worker/gpu_model_runner.py (profile_run, _dummy_sampler_run)",
       true, 8192, 2048, "a100"},
      // >= 0.21: the CUDA graph pool estimated during profiling is deducted
      // (profile_cudagraph_memory, PR #30515, opt-in; on by default since v0.21.0, as the log
      // line "CUDA graph memory profiling is enabled (default since v0.21.0)" says). Logged
      // estimates run 0.13-0.36 GiB per rank (club-3090 #127 and #1087, gpustack/runner #251);
      // calc takes 0.25 GiB.
      {"vllm", ">=0.21 (V1, CUDA graph pool deducted)", 21, 99999, 256 * kMiB, 2 * kGiB, 14, 1024,
       256, 256 * kMiB, false,
       "vllm/v1/worker/gpu_worker.py (determine_available_memory: requested_memory - "
       "non_kv_cache_memory - cudagraph_memory_estimate_applied)",
       true, 8192, 2048, "a100"},
      // SGLang: mem_fraction_static covers weights and pool; the rest of the card is left for
      // activations and graphs. Its default is computed (server_args.py,
      // _handle_gpu_memory_settings, PR #10975).
      {"sglang", "0.4-0.5", 4, 5, 0, 0, 0, 0, 0, 0, true,
       "python/sglang/srt/server_args.py (_handle_gpu_memory_settings, PR #10975), "
       "python/sglang/srt/model_executor/model_runner.py (profile_max_num_token)"},
  };
  return table;
}

const budget_rules& find_budget_rules(const std::string& engine, const std::string& version) {
  const budget_rules* newest = nullptr;
  for (const budget_rules& b : budget_rule_sets())
    if (engine == b.engine) newest = &b;
  if (!newest) throw spec_error("engine", fmt::format("'{}' is not vllm or sglang", engine));
  if (version.empty()) return *newest;
  if (std::optional<int> v = version_number(version))
    for (const budget_rules& b : budget_rule_sets())
      if (engine == b.engine && *v >= b.min_version && *v <= b.max_version) return b;
  // find_rules has already refused a version outside the allocation rule sets.
  throw spec_error("engine_version",
                   fmt::format("calc has no {} memory-budget rules for {}", engine, version));
}

batch_defaults default_batch(const budget_rules& b, const gpu_spec& card) {
  std::string name = card.name + " " + card.display;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  std::string_view small = b.small_defaults_names;
  bool large = engine_visible_memory(card) >= 70 * kGiB &&
               (small.empty() || name.find(small) == std::string::npos);
  return large ? batch_defaults{b.default_batched_large_card, b.default_seqs_large_card}
               : batch_defaults{b.default_batched, b.default_seqs};
}

budget_terms activation_terms(const graph& g, const budget_rules& b, std::int64_t batched,
                              std::int64_t seqs, std::int64_t tp) {
  budget_terms t;
  t.batched_tokens = batched;
  t.sampler_rows = std::min(seqs, batched);
  // The forward pass: the residual stream and the hidden state stay while the widest FFN's
  // transients live: a gated MLP's gate-up output (2 f / tp) and its activation (f / tp); a
  // MoE layer's per-token expert copies (top_k of them) of those plus the expert outputs (an
  // ungated expert: up's output and its activation, 2 f / tp).
  checked widest;
  for (const layer& l : g.layers) {
    checked width;
    if (const auto* f = std::get_if<ffn_swiglu>(&l.ffn)) width = checked(3) * f->intermediate / tp;
    if (const auto* f = std::get_if<ffn_mlp>(&l.ffn)) width = checked(2) * f->intermediate / tp;
    if (const auto* f = std::get_if<ffn_moe>(&l.ffn))
      width = checked(f->top_k) *
              (checked(f->gated ? 3 : 2) * f->intermediate / tp + g.spec->hidden);
    widest = max(widest, width);
  }
  t.forward_peak = checked(batched) * (checked(2) * g.spec->hidden + widest) * 2;
  // The sampler on the last stage: one row of logits per request over the whole vocabulary
  // (the vocabulary-parallel head gathers full rows).
  t.sampler_peak = checked(t.sampler_rows) * g.spec->vocab * b.sampler_bytes_per_logit;
  // The forward pass's transients are freed before the sampler runs: the peak is the larger.
  t.activation_peak = max(t.forward_peak, t.sampler_peak);
  t.non_torch = tp > 1 ? checked(b.non_torch_tp_many) : checked(b.non_torch_tp1);
  t.cuda_graph = checked(b.cuda_graph);
  return t;
}

double sglang_default_fraction(std::int64_t card_mib, std::int64_t tp, std::int64_t pp,
                               std::int64_t chunked_prefill) {
  // Buckets by card memory (MiB): the chunked prefill size and the largest CUDA graph batch.
  std::int64_t chunk = 0, graph_bs = 0;
  if (card_mib < 20 * 1024) {
    chunk = 2048, graph_bs = 8;
  } else if (card_mib < 35 * 1024) {
    chunk = 2048, graph_bs = tp < 4 ? 24 : 80;
  } else if (card_mib < 60 * 1024) {
    chunk = 4096, graph_bs = tp < 4 ? 32 : 160;
  } else if (card_mib < 160 * 1024) {
    chunk = 8192, graph_bs = tp < 4 ? 256 : 512;
  } else {
    chunk = 16384, graph_bs = 512;
  }
  // A --chunked-prefill-size given is what the reserve for the prefill activation sizes.
  if (chunked_prefill > 0) chunk = chunked_prefill;
  // Reserved MiB: metadata, the prefill activation, the graph buffers, a share per 8 ranks;
  // at least 10 GiB on cards above 60 GiB.
  double reserved = 512 + static_cast<double>(std::max<std::int64_t>(chunk, 2048)) * 1.5 +
                    static_cast<double>(graph_bs) * 2 + static_cast<double>(tp * pp) / 8 * 1024;
  if (card_mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  auto card = static_cast<double>(card_mib);
  return std::round((card - reserved) / card * 1000) / 1000;
}

namespace {

/// The budget from the engine's own log: one figure for all ranks, or one per rank, of which
/// vLLM keeps the smallest block count (get_kv_cache_configs) and SGLang the smallest pool
/// (its TP ranks all-reduce the minimum of their available memory).
void logged_budget(const memory_request& m, capacity_result& r) {
  engine_config& c = r.config;
  auto ranks = static_cast<std::size_t>(c.tensor_parallel * c.pipeline_parallel);
  if (m.logged.size() == 1) {
    c.available_kv_bytes = m.logged.front();
    r.memory_source = "--kv-memory (the engine's logged value, per rank)";
    return;
  }
  if (m.logged.size() != ranks)
    throw spec_error("kv_memory",
                     fmt::format("{} values for {} ranks (tp {} x pp {}): give one value for "
                                 "all ranks, or one per rank",
                                 m.logged.size(), ranks, c.tensor_parallel, c.pipeline_parallel));
  c.rank_kv_bytes = m.logged;
  c.available_kv_bytes = *std::min_element(m.logged.begin(), m.logged.end());
  r.memory_source = fmt::format(
      "--kv-memory (the engine's logged value of each of the {} ranks; the smallest decides)",
      ranks);
}

/// The estimate without a log: the card's runtime-visible memory x the engine's fraction, less
/// the weights per rank and, for vLLM, the profile run's activation peak, the non-torch memory
/// and (from 0.21) the CUDA graph pool.
void estimated_budget(const graph& g, const memory_request& m, capacity_result& r) {
  if (!m.gpu)
    throw spec_error("kv_memory", "give --kv-memory (the engine's logged KV memory) or --gpu");
  engine_config& c = r.config;
  bool sglang = std::string(r.rules->engine) == "sglang";
  const budget_rules& b = find_budget_rules(r.rules->engine, m.engine_version);
  r.budget = &b;
  budget_terms& t = r.terms;
  // Both engines take the fraction of the total the CUDA runtime reports (vLLM's
  // total_gpu_memory, SGLang's get_available_gpu_memory), not of the figure as sold.
  r.card_memory = engine_visible_memory(*m.gpu);
  if (sglang && !m.mem_fraction_static) {
    // SGLang reads the card in MiB (nvidia-smi's total; calc has the runtime total).
    t.fraction = sglang_default_fraction(r.card_memory.value() / kMiB, c.tensor_parallel,
                                         c.pipeline_parallel, c.max_num_batched_tokens);
    if (t.fraction <= 0)
      throw spec_error("max_num_batched_tokens",
                       fmt::format("SGLang's reserve for a {}-token prefill chunk (1.5 MiB a "
                                   "token) leaves no memory on {}: a smaller "
                                   "--chunked-prefill-size, or --mem-fraction-static",
                                   c.max_num_batched_tokens, m.gpu->name));
    t.fraction_source =
        "SGLang's default for this card and layout (server_args.py, _handle_gpu_memory_settings)";
  } else {
    t.fraction = sglang ? *m.mem_fraction_static : m.gpu_memory_utilization;
    t.fraction_source = sglang ? "--mem-fraction-static" : "--gpu-memory-utilization";
  }
  const char* knob = sglang ? "--mem-fraction-static" : "--gpu-memory-utilization";
  if (!(t.fraction > 0 && t.fraction <= 1))
    throw spec_error(knob, fmt::format("must be in (0, 1], got {}", t.fraction));
  std::string memory_words =
      m.gpu->runtime_memory > 0 ? "runtime-visible memory" : "memory as sold (no runtime figure)";
  t.card_memory = r.card_memory;
  // card x fraction, exact to the byte: the fraction as parts per million.
  t.engine_share = r.card_memory * static_cast<std::int64_t>(t.fraction * 1e6 + 0.5) / 1000000;
  if (sglang) {
    // SGLang's fraction covers weights and the pool; activations live in the rest.
    c.available_kv_bytes = t.engine_share - r.weight_bytes_per_rank;
    r.memory_source = fmt::format("estimate: {} {} x {} - weights per rank", m.gpu->name,
                                  memory_words, t.fraction);
    return;
  }
  budget_terms a =
      activation_terms(g, b, c.max_num_batched_tokens, c.max_num_seqs, c.tensor_parallel);
  a.card_memory = t.card_memory;
  a.fraction = t.fraction;
  a.fraction_source = t.fraction_source;
  a.engine_share = t.engine_share;
  t = a;
  if (m.activation) {
    r.activation_bytes = *m.activation;
    r.memory_source = fmt::format("estimate: {} {} x {} - weights per rank - --activation-memory",
                                  m.gpu->name, memory_words, t.fraction);
  } else {
    r.activation_bytes = t.activation_peak + t.non_torch + t.cuda_graph;
    r.memory_source = fmt::format(
        "estimate: {} {} x {} - weights per rank - activation peak - non-torch memory{}",
        m.gpu->name, memory_words, t.fraction, t.cuda_graph > 0 ? " - CUDA graph pool" : "");
  }
  c.available_kv_bytes = t.engine_share - r.weight_bytes_per_rank - r.activation_bytes;
}

/// The vision tower's share on a rank of the first stage: the engines load a multimodal
/// checkpoint's tower beside the text model and split its layers over the TP ranks (vLLM's
/// default mm_encoder_tp_mode "weights"; SGLang's vision attention and MLP are TP layers), unless
/// vLLM runs it text-only.
void vision_weights(const capacity_request& q, capacity_result& r) {
  const memory_request& m = q.memory;
  if (m.vision_bytes <= 0) return;  // a text model: no tower to load or skip
  // text_only is vLLM's switch (the CLI refuses it with SGLang, which always loads the tower).
  if (m.text_only) {
    const budget_rules& b = find_budget_rules(q.rules->engine, m.engine_version);
    if (b.text_only_skips_vision) {
      r.vision_note = fmt::format(
          "not loaded: --limit-mm-per-prompt is 0 for every modality it takes ({}): text-only "
          "mode",
          m.modalities);
      return;
    }
    r.vision_note = fmt::format("loaded: vLLM {} has no text-only mode (from 0.10)", b.versions);
  } else {
    r.vision_note = fmt::format(
        "loaded beside the text model, its layers split over the tp ranks (--limit-mm-per-prompt "
        "at 0 for every modality it takes, {}, would skip it in vLLM 0.10 on)",
        m.modalities);
  }
  r.vision_bytes_per_rank = ceil_div(m.vision_bytes, checked(q.config.tensor_parallel));
}

/// The layout's weights per rank and every rank's KV memory, before any allocation.
capacity_result budget(const graph& g, const capacity_request& q) {
  capacity_result r;
  r.rules = q.rules;
  r.config = q.config;
  layout lay{r.config.tensor_parallel, r.config.pipeline_parallel, 1};
  if (std::string why = layout_problem(g, lay); !why.empty())
    throw spec_error("tensor_parallel", why);
  vision_weights(q, r);
  // Untyped, vLLM's token budget and sequence cap are its defaults on the card (default_batch):
  // the profile run's activation and the sliding-window charge both read them.
  if (q.memory.gpu && std::string_view(r.rules->engine) == "vllm") {
    batch_defaults card =
        default_batch(find_budget_rules(r.rules->engine, q.memory.engine_version), *q.memory.gpu);
    if (r.config.max_num_batched_tokens <= 0) r.config.max_num_batched_tokens = card.batched_tokens;
    if (r.config.max_num_seqs <= 0) r.config.max_num_seqs = card.seqs;
  }
  for (const card_load& cl : card_loads(g, lay, 0))
    r.weight_bytes_per_rank =
        max(r.weight_bytes_per_rank,
            cl.stage == 0 ? cl.weight_bytes + r.vision_bytes_per_rank : cl.weight_bytes);
  if (!q.memory.logged.empty()) {
    // A logged KV figure is what the engine reported on the layout it ran; on a named card,
    // the weights of this layout must still fit, or the figure cannot belong to it.
    if (q.memory.gpu) {
      checked card(engine_visible_memory(*q.memory.gpu));
      if (r.weight_bytes_per_rank > card)
        throw spec_error(
            "kv_memory",
            fmt::format("the weights ({:.2f} GiB per rank at tp {} x pp {}) pass {}'s {:.2f} "
                        "GiB: no engine logged KV memory on this layout",
                        r.weight_bytes_per_rank.to_double() / kGiB, r.config.tensor_parallel,
                        r.config.pipeline_parallel, q.memory.gpu->name, card.to_double() / kGiB));
    }
    logged_budget(q.memory, r);
  } else {
    estimated_budget(g, q.memory, r);
  }
  return r;
}

}  // namespace

capacity_result answer_capacity(const graph& g, const capacity_request& q) {
  capacity_result r = budget(g, q);
  r.capacity = plan_engine(g, *q.rules, r.config);
  return r;
}

/// Whether the model keeps recurrent states the rule set puts in SGLang's Mamba pool, which
/// calc's rules place on one pipeline stage only.
static bool mamba_pool_model(const graph& g, const capacity_request& q) {
  if (q.rules->mamba.ratio_ppm == 0) return false;
  for (const layer_cache& l : layer_caches(g, q.config))
    if (l.type == layer_cache::kind::state) return true;
  return false;
}

plan_result answer_plan(const graph& g, const plan_request& q) {
  if (q.capacity.memory.logged.size() > 1)
    throw spec_error("kv_memory", "plan tries several layouts: give one value for all ranks");
  // The card bounds TP by its NVLink domain; without one, TP stays within a server.
  gpu_spec card = q.card ? *q.card : q.capacity.memory.gpu.value_or(gpu_spec{});
  const std::int64_t node_gpus = server_gpus_of(card, q.node_gpus);
  if (!q.card && !q.capacity.memory.gpu) card.nvlink_domain = node_gpus;
  // Serves better, as plain plan prefers (plan_placement): holds more requests, then fewer
  // pipeline stages, then more KV memory per rank.
  struct candidate {
    capacity_result r;
    std::int64_t instances = 1;
    double held = 0;  // requests of max_model_len over every instance
  };
  auto better = [](const candidate& a, const candidate& b) {
    if (a.held != b.held) return a.held > b.held;
    if (a.r.config.pipeline_parallel != b.r.config.pipeline_parallel)
      return a.r.config.pipeline_parallel < b.r.config.pipeline_parallel;
    return a.r.config.available_kv_bytes > b.r.config.available_kv_bytes;
  };
  plan_result out;
  const bool one_stage = mamba_pool_model(g, q.capacity);
  for (std::int64_t n = 1; n <= q.max_gpus; ++n) {
    // Past one node, a deployment takes whole nodes.
    if (n > node_gpus && n % node_gpus != 0) continue;
    std::optional<candidate> best;
    for (std::int64_t c = 1; c <= n; ++c) {  // cards of one instance
      if (n % c != 0 || (c > node_gpus && c % node_gpus != 0)) continue;
      std::int64_t instances = n / c;
      if (instances > std::max<std::int64_t>(q.requests, 1)) continue;  // an idle replica
      std::int64_t each = (q.requests + instances - 1) / instances;
      for (const layout& l : deployable_layouts(g, card, c, node_gpus)) {
        // The engine rules split experts over the TP ranks (an ep = tp shape holds the same
        // bytes per rank) and do not model DP attention: one candidate per tp x pp.
        if (l.ep != 1 || l.dp != 1) continue;
        if (one_stage && l.pp > 1) continue;  // SGLang's Mamba pool: no rule over stages
        capacity_request one = q.capacity;
        one.config.tensor_parallel = l.tp;
        one.config.pipeline_parallel = l.pp;
        // Budget first: a layout whose weights leave nothing is skipped before the allocator
        // (with a logged KV figure, one whose weights pass the card).
        if (q.card && !one.memory.logged.empty()) one.memory.gpu = *q.card;
        capacity_result r;
        try {
          r = budget(g, one);
        } catch (const spec_error& e) {
          if (one.memory.logged.empty() || e.field() != "kv_memory") throw;
          continue;
        }
        if (r.config.available_kv_bytes <= 0) continue;
        r.capacity = plan_engine(g, *one.rules, r.config);
        if (!r.capacity.fits || r.capacity.max_concurrency < static_cast<double>(each)) continue;
        candidate cand{r, instances, r.capacity.max_concurrency * static_cast<double>(instances)};
        if (!best || better(cand, *best)) best = cand;
      }
    }
    if (best) {
      out.best = best->r;
      out.instances = best->instances;
      out.gpus = n;
      return out;
    }
  }
  return out;
}

}  // namespace calc::engine
