#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/numbers.h"
#include "tally/tally.h"

namespace calc::engine {

namespace {

constexpr std::int64_t kGiB = 1LL << 30;


std::string gib(const checked& bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes.value()) / static_cast<double>(kGiB));
}

/// What decides a layer's group in vLLM's hybrid allocator: its kind and its bytes.
std::string group_key(const layer_cache& l) {
  switch (l.type) {
    case layer_cache::kind::full:
      return fmt::format("full {}", l.token_bytes.value());
    case layer_cache::kind::sliding:
      return fmt::format("sliding {} {}", l.window, l.token_bytes.value());
    case layer_cache::kind::chunked:
      return fmt::format("chunked {} {}", l.window, l.token_bytes.value());
    case layer_cache::kind::mla:
      return fmt::format("mla {}", l.token_bytes.value());
    case layer_cache::kind::state:
      return fmt::format("state {}", l.state_bytes.value());
  }
  return "";
}

std::string group_name(const layer_cache& l) {
  switch (l.type) {
    case layer_cache::kind::full:
      return "full attention";
    case layer_cache::kind::sliding:
      return fmt::format("sliding window {}", l.window);
    case layer_cache::kind::chunked:
      return fmt::format("chunked local {}", l.window);
    case layer_cache::kind::mla:
      return "mla latent";
    case layer_cache::kind::state:
      return "recurrent state";
  }
  return "";
}

/// Tokens one request of max_model_len keeps in a layer of this kind (vLLM's
/// max_memory_usage_bytes, in tokens; sliding layers keep the window plus one batch of
/// scheduled tokens, and one extra block because the window straddles block edges).
checked request_blocks(const layer_cache& l, std::int64_t block_size, std::int64_t max_model_len,
                       std::int64_t batched, std::int64_t state_pages) {
  switch (l.type) {
    case layer_cache::kind::full:
    case layer_cache::kind::mla:
      return ceil_div(max_model_len, block_size);
    case layer_cache::kind::sliding: {
      std::int64_t tokens = std::min(l.window - 1 + batched, max_model_len);
      return ceil_div(tokens, block_size) + 1;
    }
    case layer_cache::kind::chunked:
      // ChunkedLocalAttentionSpec: the chunk's computed tokens plus one batch of scheduled
      // ones, at most max_model_len; chunks start at block-aligned positions, so no extra block.
      return ceil_div(std::min(l.window + batched, max_model_len), block_size);
    case layer_cache::kind::state:
      return state_pages;  // whole state pages per request, however long
  }
  return 0;
}

/// Positions in `caches` of the layers pipeline stage `stage` holds (a layer without a cache of
/// its own has no entry in `caches`).
std::vector<std::size_t> layers_of_stage(const std::vector<layer_cache>& caches, std::int64_t total,
                                         std::int64_t pp, std::int64_t stage) {
  auto [first, count] = stage_layers(total, pp, stage);
  // The last stage also holds the drafter's layers (indexed from `total` on).
  std::int64_t end = stage == pp - 1 ? INT64_MAX : first + count;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < caches.size(); ++i)
    if (caches[i].layer >= first && caches[i].layer < end) out.push_back(i);
  return out;
}

void fail_if_state(const std::vector<layer_cache>& caches, const rule_set& r) {
  for (const layer_cache& l : caches)
    if (l.type == layer_cache::kind::state)
      throw spec_error("engine_version",
                       fmt::format("{} ({}) has no allocator for recurrent-state layers (layer "
                                   "{}); use a newer version",
                                   r.engine, r.versions, l.layer));
}

/// vLLM V0 and V1 before the hybrid allocator: every layer in one block table; a sliding
/// layer is charged as a full one.
engine_capacity plan_single_group(const std::vector<layer_cache>& caches, const rule_set& r,
                                  const engine_config& c, std::int64_t layers_total,
                                  std::int64_t bs) {
  fail_if_state(caches, r);
  engine_capacity e;
  e.block_size = bs;
  checked token_all;  // bytes per token over the layers of the fullest stage
  std::int64_t fewest = -1;
  for (std::int64_t stage = 0; stage < c.pipeline_parallel; ++stage) {
    checked stage_token;
    for (std::size_t i : layers_of_stage(caches, layers_total, c.pipeline_parallel, stage))
      stage_token += caches[i].token_bytes;
    if (stage_token == 0) continue;
    checked avail = max(stage_kv_bytes(c, stage), checked(0));
    std::int64_t blocks = (avail / (stage_token * bs)).value();
    if (fewest < 0 || blocks < fewest) fewest = blocks;
    token_all = max(token_all, stage_token);
  }
  e.blocks = std::max<std::int64_t>(fewest, 0);
  e.page_bytes = caches.empty() ? checked(0) : caches.front().token_bytes * bs;
  e.kv_cache_tokens = (checked(e.blocks) * bs).value();
  e.blocks_per_request = ceil_div(c.max_model_len, bs).value();
  e.max_model_len_kv_bytes = token_all * bs * e.blocks_per_request;
  e.max_concurrency = static_cast<double>(e.kv_cache_tokens) / static_cast<double>(c.max_model_len);
  cache_group g{"all layers", bs, {}, 0, checked(bs) * e.blocks_per_request};
  for (const layer_cache& l : caches) g.layers.push_back(l.layer);
  e.groups.push_back(g);
  e.group_size = static_cast<std::int64_t>(caches.size());
  if (r.layout == rule_set::pool::block_all_layers) {
    e.fits = e.kv_cache_tokens >= c.max_model_len;
    if (!e.fits)
      e.reason = fmt::format(
          "The model's max seq len ({}) is larger than the maximum number of tokens that can be "
          "stored in KV cache ({})",
          c.max_model_len, e.kv_cache_tokens);
  }
  return e;
}

/// vLLM V1's hybrid allocator (kv_cache_utils.py): one page size, groups of equal layer
/// count padded where a kind has fewer layers, one block pool shared by all groups.
engine_capacity plan_hybrid(const std::vector<layer_cache>& caches, const rule_set& r,
                            const engine_config& c, std::int64_t layers_total, std::int64_t bs) {
  engine_capacity e;
  // A state keeps one page per request (two in prefix caching's align mode) plus one per
  // speculative token (MambaSpec.max_memory_usage_bytes: num_speculative_blocks).
  std::int64_t state_pages =
      (c.prefix_caching ? r.state_pages_prefix_caching : 1) + c.speculative.tokens;
  std::int64_t batched = c.max_num_batched_tokens > 0 ? c.max_num_batched_tokens : 8192;
  // Page-size unification. Recurrent-state layers first raise the attention block size until
  // one attention page holds a whole state (rounded to the attention kernels' alignment);
  // the state page is padded up to it. Smaller attention pages then get proportionally larger
  // blocks so every page has the same bytes.
  checked max_token, max_state;
  for (const layer_cache& l : caches) {
    if (l.type == layer_cache::kind::state) {
      max_state = max(max_state, l.state_bytes);
    } else {
      max_token = max(max_token, l.token_bytes);
    }
  }
  // The attention block is a multiple of what the attention kernels take: 64 tokens for MLA
  // backends, 16 otherwise (HybridAttentionMambaModelConfig's kernel_block_alignment_size; 128
  // for CUTLASS MLA and 32 for head size 256 with FlashInfer on Blackwell, backends calc does
  // not model).
  bool mla = std::any_of(caches.begin(), caches.end(),
                         [](const layer_cache& l) { return l.type == layer_cache::kind::mla; });
  const std::int64_t align = mla ? 64 : 16;
  std::int64_t attn_bs = bs;
  if (max_state > 0 && max_token > 0)
    attn_bs =
        std::max(bs, (checked(align) * ceil_div(max_state, checked(align) * max_token)).value());
  checked page = max_token > 0 ? max_token * attn_bs : max_state;
  std::map<std::string, std::int64_t> block_of;  // group key -> tokens per block
  std::vector<std::string> order;                // group keys in order of first appearance
  std::map<std::string, std::vector<std::int64_t>> members;
  std::map<std::string, const layer_cache*> sample;
  for (const layer_cache& l : caches) {
    std::string key = group_key(l);
    if (!members.count(key)) {
      order.push_back(key);
      sample[key] = &l;
      if (l.type == layer_cache::kind::state) {
        block_of[key] = attn_bs;
      } else {
        if (page.value() % l.token_bytes.value() != 0)
          throw spec_error("engine",
                           fmt::format("layer {}: its page of {} B per token does not divide the "
                                       "{} B page; vLLM cannot unify the page sizes",
                                       l.layer, l.token_bytes.value(), page.value()));
        block_of[key] = (page / l.token_bytes).value();
      }
    }
    members[key].push_back(l.layer);
  }
  // Group size: the fewest layers of any kind; the most when no kind has 1.5x the fewest.
  std::int64_t fewest = INT64_MAX, most = 0;
  for (const auto& key : order) {
    auto n = static_cast<std::int64_t>(members[key].size());
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  std::int64_t group_size = (most * 2 < fewest * 3) ? most : fewest;
  for (const auto& key : order) {
    const std::vector<std::int64_t>& ls = members[key];
    auto n = static_cast<std::int64_t>(ls.size());
    std::int64_t groups = ceil_div(n, group_size).value();
    // Layers i, i + groups, i + 2*groups, ... form group i (so pipeline stages stay balanced).
    for (std::int64_t i = 0; i < groups; ++i) {
      cache_group g;
      g.kind = group_name(*sample[key]);
      g.block_size = block_of[key];
      for (std::int64_t j = i; j < n; j += groups)
        g.layers.push_back(ls[static_cast<std::size_t>(j)]);
      g.padding = group_size - static_cast<std::int64_t>(g.layers.size());
      g.request_bytes =
          request_blocks(*sample[key], g.block_size, c.max_model_len, batched, state_pages) * page;
      e.groups.push_back(g);
    }
  }
  // Blocks: per pipeline stage, available // page // (layers of its fullest group); the
  // engine keeps the smallest count of all ranks.
  std::int64_t blocks = -1, worst_group = 0;
  for (std::int64_t stage = 0; stage < c.pipeline_parallel; ++stage) {
    // Plain variables, not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const auto range = stage_layers(layers_total, c.pipeline_parallel, stage);
    // The last stage also holds the drafter's layers (indexed from layers_total on).
    const std::int64_t first = range.first;
    const std::int64_t end =
        stage == c.pipeline_parallel - 1 ? INT64_MAX : range.first + range.second;
    std::int64_t stage_group = 0;
    for (const cache_group& g : e.groups) {
      auto n = std::count_if(g.layers.begin(), g.layers.end(),
                             [&](std::int64_t l) { return l >= first && l < end; });
      stage_group = std::max<std::int64_t>(stage_group, n);
    }
    if (stage_group == 0) continue;
    checked avail = max(stage_kv_bytes(c, stage), checked(0));
    std::int64_t b = (avail / page / stage_group).value();
    if (blocks < 0 || b < blocks) blocks = b;
    worst_group = std::max(worst_group, stage_group);
  }
  e.blocks = std::max<std::int64_t>(blocks, 0);
  e.page_bytes = page;
  e.group_size = group_size;
  checked per_request;
  std::int64_t min_block = INT64_MAX;
  for (const cache_group& g : e.groups) {
    per_request += g.request_bytes / page;
    if (g.kind != "recurrent state") min_block = std::min(min_block, g.block_size);
  }
  if (min_block == INT64_MAX) min_block = attn_bs;
  e.block_size = min_block;
  e.blocks_per_request = per_request.value();
  // One rank needs its own stage's fullest group for each group's request; a rule set that
  // checks the merged spec needs every stage's layers (the whole model's group size).
  e.max_model_len_kv_bytes =
      checked(r.whole_model_check ? group_size : worst_group) * page * per_request;
  e.max_concurrency = static_cast<double>(e.blocks) /
                      static_cast<double>(std::max<std::int64_t>(1, per_request.value()));
  return e;
}

/// SGLang's Mamba state pool (model_runner_kv_cache_mixin.py handle_max_mamba_cache,
/// memory_pool.py MambaPool): the pools' budget minus the states of max_mamba_cache_size
/// requests is what the token pool of the full-attention layers gets. Fills the Mamba fields of
/// `e` and returns the bytes left for the token pool.
checked plan_mamba_pool(const std::vector<layer_cache>& caches, const rule_set& r,
                        const engine_config& c, engine_capacity& e) {
  for (const layer_cache& l : caches)
    if (l.type == layer_cache::kind::state) {
      e.mamba_request_bytes += l.state_bytes;
      e.conv_pool_bytes += l.conv_bytes;
    }
  checked budget = max(c.available_kv_bytes, checked(0));
  const checked per_request = e.mamba_request_bytes;
  std::int64_t slots = 0;
  if (c.max_mamba_cache_size > 0) {
    slots = c.max_mamba_cache_size;  // given: kept as is
  } else if (!c.radix_cache) {
    // Without the radix cache no state outlives its request: one slot per running request.
    slots = c.max_num_seqs > 0 ? c.max_num_seqs : r.mamba.size_without_radix;
  } else {
    // The budget split so that states / full KV = ratio: states get ratio / (1 + ratio).
    std::int64_t ratio_ppm = c.mamba_full_memory_ratio
                                 ? std::llround(*c.mamba_full_memory_ratio * 1e6)
                                 : r.mamba.ratio_ppm;
    slots = (budget * ratio_ppm / (checked(1000000) + ratio_ppm) / per_request).value();
  }
  e.mamba_slots = slots;
  // The pool holds one slot more than its size (slot 0 pads, as in the token pool).
  e.ssm_pool_bytes = (per_request - e.conv_pool_bytes) * (slots + 1);
  e.conv_pool_bytes = e.conv_pool_bytes * (slots + 1);
  return budget - per_request * slots;
}

/// SGLang's token pool (mem_cache/memory_pool.py, model_runner.py): one slot per token holds
/// that token's K and V (or MLA latent) in every layer of the rank; the pool is page-aligned.
/// A hybrid model's recurrent-state layers keep their states in the Mamba pool beside it
/// (plan_mamba_pool), sized first from the same budget.
engine_capacity plan_token_pool(const std::vector<layer_cache>& caches, const rule_set& r,
                                const engine_config& c, std::int64_t layers_total,
                                std::int64_t page) {
  engine_capacity e;
  bool hybrid = false;
  for (const layer_cache& l : caches) {
    if (l.type == layer_cache::kind::sliding)
      throw spec_error("engine",
                       fmt::format("layer {} keeps {}: SGLang's SWA pool is not modelled by "
                                   "calc (only full-attention, MLA and Mamba state pools)",
                                   l.layer, group_name(l)));
    if (l.type == layer_cache::kind::state) {
      if (r.mamba.ratio_ppm == 0)
        throw spec_error("engine_version",
                         fmt::format("layer {} keeps recurrent state: SGLang {} has no Mamba "
                                     "state pool (hybrid models arrived in 0.5); use "
                                     "--engine-version 0.5 or newer",
                                     l.layer, r.versions));
      hybrid = true;
    }
  }
  engine_config pool = c;
  if (hybrid) {
    if (c.pipeline_parallel > 1)
      throw spec_error("pipeline_parallel",
                       "calc has no SGLang rule for a hybrid model's Mamba pool over pipeline "
                       "stages; give --pipeline-parallel-size 1");
    // The no_buffer strategy keeps states at token granularity: with the radix cache on
    // SGLang sets page_size to 1 (server_args.py).
    if (c.radix_cache && !c.mamba_extra_buffer) page = 1;
    pool.available_kv_bytes = plan_mamba_pool(caches, r, c, e);
    pool.rank_kv_bytes.clear();
  }
  std::vector<layer_cache> kv;  // the token pool's layers: all but the recurrent ones
  for (const layer_cache& l : caches)
    if (l.type != layer_cache::kind::state) kv.push_back(l);
  if (kv.empty())
    throw spec_error("model", "SGLang's hybrid pool needs a full-attention layer; the model has "
                              "none");
  const std::vector<layer_cache>& token_layers = hybrid ? kv : caches;
  const engine_config& cfg = hybrid ? pool : c;
  std::int64_t tokens = -1;
  checked cell_worst, k_cell, v_cell;
  for (std::int64_t stage = 0; stage < c.pipeline_parallel; ++stage) {
    checked cell, k;
    for (std::size_t i :
         layers_of_stage(token_layers, layers_total, c.pipeline_parallel, stage)) {
      cell += token_layers[i].token_bytes;
      k += token_layers[i].k_token_bytes;
    }
    if (cell == 0) continue;
    checked avail = max(stage_kv_bytes(cfg, stage), checked(0));
    std::int64_t t = (avail / cell / page * page).value();
    if (tokens < 0 || t < tokens) {
      tokens = t;
      k_cell = k;
      v_cell = cell - k;
    }
    cell_worst = max(cell_worst, cell);
  }
  e.kv_cache_tokens = std::max<std::int64_t>(tokens, 0);
  e.block_size = page;
  e.blocks = e.kv_cache_tokens / page;
  e.page_bytes = cell_worst;
  // Buffers hold size + page_size slots: slot 0 (a whole page) is the padding slot.
  e.k_pool_bytes = (checked(e.kv_cache_tokens) + page) * k_cell;
  e.v_pool_bytes = (checked(e.kv_cache_tokens) + page) * v_cell;
  e.max_model_len_kv_bytes = cell_worst * c.max_model_len;
  e.blocks_per_request = ceil_div(c.max_model_len, page).value();
  e.max_concurrency = static_cast<double>(e.kv_cache_tokens) / static_cast<double>(c.max_model_len);
  e.fits = e.kv_cache_tokens >= c.max_model_len;
  if (!e.fits)
    e.reason = fmt::format("the pool's {} tokens hold less than one request of {} tokens",
                           e.kv_cache_tokens, c.max_model_len);
  cache_group g{"token pool", page, {}, 0, cell_worst * c.max_model_len};
  for (const layer_cache& l : token_layers) g.layers.push_back(l.layer);
  e.groups.push_back(g);
  if (hybrid) {
    // The scheduler's cap (init_memory_pool): --max-running-requests, else the pool's tokens
    // over the context at 512 requests per context, within [2048, 4096]; then no more requests
    // than the state slots hold, each keeping slots_per_request of them with the radix cache
    // (one without).
    std::int64_t running =
        c.max_num_seqs > 0
            ? c.max_num_seqs
            : std::min<std::int64_t>(
                  std::max<std::int64_t>(e.kv_cache_tokens * 512 / c.max_model_len, 2048), 4096);
    std::int64_t per_request =
        c.radix_cache
            ? r.mamba.slots_per_request + (c.mamba_extra_buffer ? r.mamba.extra_buffer_slots : 0)
            : 1;
    e.max_running_requests = std::min(running, e.mamba_slots / per_request);
    e.max_concurrency =
        std::min(e.max_concurrency, static_cast<double>(e.max_running_requests));
    cache_group states{"mamba state pool", 1, {}, 0, e.mamba_request_bytes};
    for (const layer_cache& l : caches)
      if (l.type == layer_cache::kind::state) states.layers.push_back(l.layer);
    e.groups.push_back(states);
    if (pool.available_kv_bytes < 0) {
      // SGLang stops at start-up ("Not enough memory"): the states took the whole budget.
      e.fits = false;
      e.reason = fmt::format(
          "the Mamba pool's {} request states ({} B each) take more than the {} B budget; "
          "nothing is left for the token pool",
          e.mamba_slots, e.mamba_request_bytes.value(), c.available_kv_bytes.value());
    } else if (e.mamba_slots <= 0 || e.max_running_requests <= 0) {
      e.fits = false;
      e.reason = fmt::format(
          "the Mamba pool holds {} request states ({} B each), too few for one running "
          "request",
          e.mamba_slots, e.mamba_request_bytes.value());
    }
  }
  return e;
}

}  // namespace

std::optional<int> version_number(const std::string& text) {
  int major = 0, minor = 0;
  std::size_t i = 0;
  auto digits = [&](int& out) {
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 4)
      out = out * 10 + (text[i++] - '0');
    return i > start;
  };
  if (!digits(major) || i >= text.size() || text[i] != '.') return std::nullopt;
  ++i;
  if (!digits(minor)) return std::nullopt;
  // A patch level or a suffix (".2", "rc1", ".dev73+g...") does not change the rules.
  return major * 1000 + minor;
}

const std::vector<rule_set>& rule_sets() {
  using pool = rule_set::pool;
  using print = rule_set::token_print;
  // The hybrid allocator's files, for the rows on either side of 0.14-0.15.
  static const char* const hybrid_source =
      "vllm/v1/core/kv_cache_utils.py (_get_kv_cache_groups_uniform_page_size, "
      "get_kv_cache_config_from_groups, get_max_concurrency_for_kv_cache_config), "
      "vllm/v1/kv_cache_interface.py (page_size_bytes, max_memory_usage_bytes)";
  static const std::vector<rule_set> table = {
      {"vllm-v0", "vllm", "0.4-0.7 (V0 engine)", 4, 7,
       "vllm/worker/cache_engine.py (get_cache_block_size), vllm/executor/executor_base.py",
       pool::block_all_layers, print::blocks_x_block_size, false, 16, 1, false,
       "vLLM added them in the 0.9 series (FalconH1ForCausalLM, PR #18406, merged May 2025, V0 "
       "engine only); use --engine-version "
       "0.10 or newer"},
      {"vllm-v1-uniform", "vllm", "0.8-0.9 (V1, before the hybrid allocator)", 8, 9,
       "vllm/v1/core/kv_cache_utils.py (get_num_blocks, _report_kv_cache_config)",
       pool::block_uniform, print::blocks_x_block_size, false, 16, 1, true,
       "vLLM 0.9 runs them on its V0 engine only (FalconH1ForCausalLM is SupportsV0Only; V1 "
       "hybrid attention/SSM models arrived with PR #20016 in 0.10), whose Mamba cache manager "
       "calc does not model; use --engine-version 0.10 or newer"},
      {"vllm-v1-hybrid", "vllm", "0.10-0.13 (V1 hybrid allocator)", 10, 13, hybrid_source,
       pool::block_hybrid, print::blocks_per_group, true, 16},
      // 0.14: the fits check merges every stage's specs (PR #29431), and chunked local attention
      // layers stay in the hybrid allocator by default (PR #29627, merged in December 2025, set
      // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE's default to 1).
      {"vllm-v1-merged-check", "vllm",
       "0.14-0.15 (V1 hybrid allocator, memory checked against every stage)", 14, 15,
       "vllm/v1/core/kv_cache_utils.py (get_kv_cache_configs: the specs of all workers merged "
       "before _check_enough_kv_cache_memory, PR #29431; fixed by PR #33698)",
       pool::block_hybrid, print::blocks_per_group, true, 16, 1, true, nullptr, true, {}, true},
      {"vllm-v1-hybrid", "vllm", "0.16-0.18 (V1 hybrid allocator)", 16, 18, hybrid_source,
       pool::block_hybrid, print::blocks_per_group, true, 16, 1, true, nullptr, false, {}, true},
      // 0.19: --enable-prefix-caching keeps a recurrent model's states in Mamba "align" mode
      // (PR #30877), two state pages per request and group.
      {"vllm-v1-hybrid", "vllm", "0.19-0.20 (V1 hybrid allocator, Mamba align mode)", 19, 20,
       hybrid_source, pool::block_hybrid, print::blocks_per_group, true, 16, 2, true, nullptr,
       false, {}, true},
      // 0.21: "GPU KV cache size" printed as int(max_concurrency x max_model_len).
      {"vllm-v1-derived", "vllm", ">=0.21 (GPU KV cache size = concurrency x max_model_len)", 21,
       99999, "vllm/v1/core/kv_cache_utils.py (_report_kv_cache_config)", pool::block_hybrid,
       print::concurrency_x_len, true, 16, 2, true, nullptr, false, {}, true},
      {"sglang", "sglang", "0.4", 4, 4,
       "python/sglang/srt/model_executor/model_runner.py (profile_max_num_token), "
       "python/sglang/srt/mem_cache/memory_pool.py (MHATokenToKVPool, MLATokenToKVPool)",
       pool::token_pool, print::pool_tokens, false, 1, 1, false,
       "SGLang 0.4 has no Mamba state pool (hybrid models arrived in 0.5)"},
      // 0.5: hybrid models keep their recurrent states in a Mamba pool sized before the token
      // pool, as SGLang 0.5.9 does (model_runner_kv_cache_mixin.py): the budget split by
      // --mamba-full-memory-ratio (default 0.9, PR #11679), 3 state slots per running request
      // with the radix cache (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO, + 2 ping-pong slots
      // for extra_buffer), --max-running-requests or 512 slots with --disable-radix-cache, the
      // recurrent state in float32 (--mamba-ssm-dtype).
      {"sglang-mamba", "sglang", "0.5 (token pool + Mamba state pool)", 5, 5,
       "python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py (profile_max_num_token, "
       "handle_max_mamba_cache, init_memory_pool), python/sglang/srt/mem_cache/memory_pool.py "
       "(MHATokenToKVPool, MLATokenToKVPool, HybridLinearKVPool, MambaPool)",
       pool::token_pool, print::pool_tokens, false, 1, 1, false,
       "calc's SGLang rules do not place a layer that holds both a KV cache and a Mamba state "
       "(FalconH1's parallel layers) in the two pools",
       false, {900000, 3, 2, 512, "fp32"}},
  };
  return table;
}

const std::vector<rule_boundary>& rule_boundaries() {
  static const std::vector<rule_boundary> table = {
      {"vllm", 8, "pool: block_uniform (the V1 engine's KV cache manager)",
       "V1 engine on by default (VLLM_USE_V1=1), release 0.8.0",
       "0.8.x logs print 'GPU KV cache size' (PR #13596, 2025-02); fixture "
       "deepseek-v2-lite-vllm-0.8.3-too-long",
       true},
      {"vllm", 10,
       "pool: block_hybrid (groups of equal layer count, one page size; sliding layers charged "
       "for window + batch)",
       "hybrid KV cache manager (_get_kv_cache_groups_uniform_page_size); hybrid attention/SSM "
       "models on V1, PR #20016",
       "fixtures qwen3-30b-a3b-vllm-0.10-fp8-* and qwen3-coder-480b-vllm-0.10-dp8-* reproduce "
       "only with the grouped allocator",
       true},
      {"vllm", 14, "whole_model_check: the fits check merges every stage's KV cache specs",
       "PR #29431 (get_kv_cache_configs merges the workers' specs), release 0.14.0",
       "the function's v0.14.0 documentation; issue #32105 (0.15.0rc1) names #29431 as the "
       "regression",
       true},
      {"vllm", 14,
       "chunked_local_hybrid: chunked local attention layers (Llama 4) kept in the hybrid "
       "allocator, min(chunk + max_num_batched_tokens, max_model_len) tokens a request "
       "(ChunkedLocalAttentionSpec, PR #19351); before it vLLM turned the hybrid manager off "
       "for such models by default (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0, PR "
       "#21761, merged 2025-07-28, so from 0.10.1)",
       "PR #29627 (attention metadata cached across KV cache groups, merged in the week to "
       "2025-12-19) set the variable's default to 1 (PR #46553's account, 2026-06-24)",
       "merged on main a month before the 0.14.0 release (January 2026), so 0.14.0 carries it; "
       "whether 0.13.0 (December 2025) does is not established (a Llama-4-Scout log of "
       "2025-12-18, release not printed, still warns that it is off by default); PR #46553's "
       "'between 0.22 and 0.23' is a ROCm latency observation, not the default's change",
       false},
      {"vllm", 16, "whole_model_check off again: each stage checked against its own layers",
       "PR #33698 ('Fix PP KV cache sharding memory validation', merged in the week to "
       "2026-02-13)",
       "a 0.15.2rc1.dev93 build of 2026-02-08 (issue #34076) still had the merged check; 0.16.0 "
       "(released 2026-02-25/26) is the first release after the merge; no 0.16 pipeline-parallel "
       "log confirms it carries the fix",
       false},
      {"vllm", 19,
       "state_pages_prefix_caching: 2 (--enable-prefix-caching keeps a recurrent model's "
       "states in Mamba 'align' mode, max_memory_usage_bytes = page x (2 + speculative "
       "blocks))",
       "PR #30877 (align mode, merged 2026-01-19), chosen by --enable-prefix-caching for models "
       "without 'all' mode",
       "a 0.19.1 report (issue #40696: Qwen3.5-4B, --enable-prefix-caching alone, whole 528-token "
       "blocks hit the cache, which only align mode gives a Gated DeltaNet model); 0.22.0 log "
       "reproduced exactly with 2 + 3 pages (fixture qwen3.6-27b-vllm-0.22-tp2-mtp3); on 0.17.0 "
       "vllm-ascend PR #7103 still passed --mamba-cache-mode align by hand; 0.18 not checked",
       false},
      {"vllm", 21,
       "tokens: concurrency_x_len ('GPU KV cache size' = int(max_concurrency x max_model_len))",
       "the derived print of PR #38364's proposal (opened 2026-03-27), landed on main between "
       "the nightlies of 2026-04-29 and 2026-05-15",
       "0.19.0 (issue #40691) and v0.20.0 print the per-group formula, v0.21.0 the derived one "
       "(issue #43308: Gemma 4 ~55k -> ~525k tokens from the same ~50 GB); 0.22.0 log reproduced "
       "exactly (fixture qwen3.6-27b-vllm-0.22-tp2-mtp3, an odd token count no per-group print "
       "gives)",
       true},
      {"sglang", 5,
       "mamba: hybrid models' recurrent states in a Mamba pool (MambaPool) sized before the "
       "token pool of the full-attention layers (HybridLinearKVPool), the budget split by "
       "--mamba-full-memory-ratio",
       "PR #10233 (Qwen3-Next: HybridLinearKVPool and the Mamba pool); PR #11679 (the ratio's "
       "default 0.2 -> 0.9, merged 2025-10-15)",
       "a 0.5.9 startup log (kvcache-ai/ktransformers #1870, fixture "
       "qwen3.5-397b-a17b-sglang-0.5.9-tp2) prints the split's 82 state slots and their "
       "conv/ssm sizes; fixture nemotron-3-nano-30b-a3b-sglang-xpu-tp4-no-radix the pool "
       "without the radix cache; the pool was on main before v0.5.3rc0 (PR #10468, "
       "2025-09-15: follow-ups such as PR #10400 landed 2025-09-13), so 0.5.3rc0 carries it, "
       "0.5.2 not established; calc keys major.minor, so 0.5.0-0.5.1 (before Qwen3-Next) and "
       "0.5.x before PR #11679 (ratio 0.2: pass --mamba-full-memory-ratio 0.2) share the row",
       false},
  };
  return table;
}

const rule_set& find_rules(const std::string& engine, const std::string& version) {
  const rule_set* newest = nullptr;
  for (const rule_set& r : rule_sets())
    if (engine == r.engine) newest = &r;
  if (!newest) throw spec_error("engine", fmt::format("'{}' is not vllm or sglang", engine));
  if (version.empty()) return *newest;
  std::optional<int> v = version_number(version);
  if (!v)
    throw spec_error("engine_version",
                     fmt::format("'{}' is not a version such as 0.10 or 0.9.2", version));
  for (const rule_set& r : rule_sets())
    if (engine == r.engine && *v >= r.min_version && *v <= r.max_version) return r;
  std::string known;
  for (const rule_set& r : rule_sets())
    if (engine == r.engine) known += fmt::format("{}{}", known.empty() ? "" : ", ", r.versions);
  throw spec_error("engine_version",
                   fmt::format("calc has no {} rules for {} (known: {})", engine, version, known));
}

namespace {

/// One rank's convolution state: its share of the channels times the slots kept (kernel - 1:
/// the newest input arrives with the step; plus `extra_slots` proposed tokens).
checked recurrent_conv_bytes(const recurrent_shape& r, std::int64_t tp, const dtype& conv,
                             std::int64_t extra_slots) {
  if (r.conv_kernel == 0) return 0;  // no convolution (lightning attention): no slots at all
  return conv.bytes(r.conv_channels / tp *
                    std::max<std::int64_t>(0, r.conv_kernel - 1 + extra_slots));
}

/// One rank's recurrent-state page: the convolution state and its heads' state matrices. The
/// shape is the kind's own (tally/kinds.h).
checked recurrent_page_bytes(const recurrent_shape& r, std::int64_t tp, const dtype& conv,
                             const dtype& ssm, std::int64_t extra_slots) {
  checked ssm_values = checked(r.heads / tp) * r.key_dim * r.value_dim;
  return recurrent_conv_bytes(r, tp, conv, extra_slots) + ssm.bytes(ssm_values);
}

/// A Mamba2 mixer's state shape on `tp` ranks: groups that do not divide by tp are replicated
/// up to tp so every head shard has its B, C.
recurrent_shape mamba2_shape(const attention_mamba2& m, std::int64_t tp) {
  recurrent_shape r = recurrent_of(m);
  r.conv_channels = mamba2_conv_channels(m, m.groups % tp == 0 ? m.groups : tp);
  return r;
}

}  // namespace

checked mamba2_state_bytes(const attention_mamba2& m, std::int64_t tp, const dtype& conv,
                           const dtype& ssm) {
  return recurrent_page_bytes(mamba2_shape(m, tp), tp, conv, ssm, 0);
}

checked stage_kv_bytes(const engine_config& c, std::int64_t stage) {
  if (c.rank_kv_bytes.empty()) return c.available_kv_bytes;
  checked least = c.rank_kv_bytes.at(static_cast<std::size_t>(stage * c.tensor_parallel));
  for (std::int64_t r = 0; r < c.tensor_parallel; ++r)
    least = min(least, c.rank_kv_bytes.at(static_cast<std::size_t>(stage * c.tensor_parallel + r)));
  return least;
}

std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp) {
  return std::max<std::int64_t>(1, kv_heads / tp);
}

std::pair<std::int64_t, std::int64_t> stage_layers(std::int64_t layers, std::int64_t pp,
                                                   std::int64_t stage) {
  std::vector<std::int64_t> parts(static_cast<std::size_t>(pp), layers / pp);
  // The remainder goes one layer each to the stages before the last, from the back.
  for (std::int64_t i = 2; i < layers % pp + 2; ++i) parts[static_cast<std::size_t>(pp - i)] += 1;
  std::int64_t first = 0;
  for (std::int64_t s = 0; s < stage; ++s) first += parts[static_cast<std::size_t>(s)];
  return {first, parts[static_cast<std::size_t>(stage)]};
}

namespace {

/// The KV cache of one GQA attention module on one rank, or none when it reads another
/// layer's cache (vLLM get_kv_cache_spec skips kv_sharing_target_layer_name: no pages, no
/// group slot).
std::optional<layer_cache> gqa_cache(const attention_gqa& a, std::int64_t index, const dtype& kv,
                                     std::int64_t tp) {
  if (a.kv_source) return std::nullopt;
  layer_cache l;
  l.layer = index;
  record_shape record = record_of(a);
  checked heads = kv_heads_per_rank(record.heads, tp);
  l.k_token_bytes = kv.bytes(heads * record.key_dim);
  // K and V, also for k_is_v: vLLM's Gemma 4 loads the K weights into the V slot of its
  // QKV projection and caches both (V gets its own norm, K its norm and RoPE). A narrower V
  // (v_head_dim) takes its own width: vLLM's DiffKV page holds head_size + head_size_v a head.
  l.token_bytes = a.v_head_dim ? l.k_token_bytes + kv.bytes(heads * a.value_dim())
                               : l.k_token_bytes * 2;
  if (a.window) {
    l.type = layer_cache::kind::sliding;
    l.window = *a.window;
  } else if (a.chunk) {
    l.type = layer_cache::kind::chunked;
    l.window = *a.chunk;
  }
  return l;
}

/// The state page of one Mamba2 mixer on one rank; throws when its heads or groups do not
/// split over the TP degree.
layer_cache mamba2_cache(const attention_mamba2& m, std::int64_t index, std::int64_t tp,
                         const dtype& conv, const dtype& ssm) {
  if (m.heads % tp != 0 || (m.groups % tp != 0 && m.groups > tp))
    throw spec_error("tensor_parallel",
                     fmt::format("layer {}: {} Mamba2 heads in {} groups do not split over "
                                 "{} ranks",
                                 index, m.heads, m.groups, tp));
  layer_cache l;
  l.layer = index;
  l.type = layer_cache::kind::state;
  l.state_bytes = mamba2_state_bytes(m, tp, conv, ssm);
  l.conv_bytes = recurrent_conv_bytes(mamba2_shape(m, tp), tp, conv, 0);
  return l;
}

/// The cache of one MLA module on one rank: the compact latent plus the RoPE branch, one copy
/// per rank (it is not split over TP). A sparse layer's indexer caches its key per token too, in
/// the model's index format (vLLM registers it as its own cache layer beside the latent, with the
/// same block size, so per token the two add).
layer_cache mla_cache(const attention_mla& a, std::int64_t index, const dtype& kv,
                      const dtype& index_keys) {
  layer_cache l;
  l.layer = index;
  l.type = layer_cache::kind::mla;
  l.token_bytes = record_of(a, mla_path::compact).bytes(kv);
  l.k_token_bytes = l.token_bytes;
  if (a.indexer) l.token_bytes += record_of(*a.indexer).bytes(index_keys);
  return l;
}

/// The attention cache of one MTP layer: the model's own full-attention (GQA or MLA) layer
/// spec, the last one of the model (MTP blocks are built from the model's decoder layer).
std::optional<layer_cache> mtp_cache(const graph& g, const dtype& kv, std::int64_t tp,
                                     std::int64_t index) {
  for (auto it = g.layers.rbegin(); it != g.layers.rend(); ++it) {
    if (const auto* a = std::get_if<attention_gqa>(&it->attention);
        a && !a->window && !a->kv_source) {
      return gqa_cache(*a, index, kv, tp);
    }
    if (const auto* mla = std::get_if<attention_mla>(&it->attention))
      return mla_cache(*mla, index, kv, g.spec->precision.index);
  }
  return std::nullopt;
}

}  // namespace

/// The speculative drafter's caches, indexed after the model's layers.
static void append_draft_caches(const graph& g, const engine_config& c,
                                std::vector<layer_cache>& out) {
  const speculative_config& s = c.speculative;
  auto next = static_cast<std::int64_t>(g.layers.size());
  if (s.draft == speculative_config::drafter::mtp) {
    std::int64_t n = g.spec->mtp ? g.spec->mtp->layers : 0;
    if (n <= 0)
      throw spec_error("speculative",
                       fmt::format("method '{}' drafts with the model's MTP layers, and {} has "
                                   "none (mtp in its file, num_nextn_predict_layers in a "
                                   "config.json)",
                                   s.method, g.spec->name));
    const dtype& kv = c.kv_cache_dtype ? *c.kv_cache_dtype : g.spec->precision.kv;
    for (std::int64_t i = 0; i < n; ++i) {
      std::optional<layer_cache> l = mtp_cache(g, kv, c.tensor_parallel, next++);
      if (!l)
        throw spec_error("speculative",
                         fmt::format("{} has no full-attention layer for its MTP layers to "
                                     "repeat; calc has no rule for their cache",
                                     g.spec->name));
      out.push_back(*l);
    }
  } else if (s.draft == speculative_config::drafter::model && s.draft_model) {
    engine_config plain = c;
    plain.speculative = {};
    plain.speculative.tokens = s.tokens;  // a recurrent draft widens its state likewise
    for (layer_cache l : layer_caches(*s.draft_model, plain)) {
      l.layer += next;
      out.push_back(l);
    }
  }
}

namespace {

/// The caches one layer registers on one rank, by mixer kind: one overload per kind, so a new
/// kind does not compile until the engine rules say what it allocates.
struct cache_rules {
  const dtype& kv;    // the KV cache format
  const dtype& conv;  // convolution slots
  const dtype& ssm;   // recurrent state matrices
  std::int64_t tp;
  std::int64_t spec;  // proposed tokens: they widen the convolution window of linear attention
  std::int64_t index;
  std::vector<layer_cache>& out;
  const dtype& index_keys;  // a sparse MLA layer's index keys (the model's index format)

  void operator()(const attention_none&) const {
    // a mixer-less (FFN-only) layer has no attention module and no cache
  }
  void operator()(const attention_gqa& a) const {
    if (auto kv_cache = gqa_cache(a, index, kv, tp)) out.push_back(*kv_cache);
  }
  void operator()(const attention_parallel& a) const {
    // A parallel layer registers two cache modules under two names (vLLM's FalconH1
    // decoder layer holds an Attention and a MambaMixer2): one KV cache spec from its
    // attention branch and one Mamba spec from its mixer, each grouped with its own kind.
    (*this)(a.attention);
    (*this)(a.mixer);
  }
  void operator()(const attention_mla& a) const {
    out.push_back(mla_cache(a, index, kv, index_keys));
  }
  void operator()(const attention_gdn& a) const {
    // vLLM keeps a lightning layer's state (MiniMax's linear_attention_state_shape: heads / tp
    // x head_dim x head_dim, no convolution) in mamba_cache_dtype, the model dtype on "auto"
    // (MambaStateDtypeCalculator.linear_attention_state_dtype), not in the SSM state's dtype:
    // the format calc gives the convolution slots.
    if (a.lightning()) return recurrent(recurrent_of(a), conv);
    recurrent(recurrent_of(a));
  }
  void operator()(const attention_kda& a) const { recurrent(recurrent_of(a)); }
  void operator()(const attention_mamba2& a) const {
    out.push_back(mamba2_cache(a, index, tp, conv, ssm));
  }
  void operator()(const attention_dsa&) const {
    throw spec_error("engine", fmt::format("layer {} is DeepSeek sparse attention, whose "
                                             "engine cache layout calc does not model",
                                             index));
  }
  /// A linear-attention state page: engines keep kernel - 1 convolution slots (the newest
  /// input arrives with the step), widened by the proposed tokens.
  void recurrent(const recurrent_shape& r) const { recurrent(r, ssm); }
  void recurrent(const recurrent_shape& r, const dtype& state) const {
    layer_cache l;
    l.layer = index;
    l.type = layer_cache::kind::state;
    l.state_bytes = recurrent_page_bytes(r, tp, conv, state, spec);
    l.conv_bytes = recurrent_conv_bytes(r, tp, conv, spec);
    out.push_back(l);
  }
};

}  // namespace

/// The caches as the rule set keeps them. vLLM's hybrid allocator keeps chunked local
/// attention layers apart only where VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is on
/// (the rule set's default, or as given) and no EAGLE/MTP drafter runs (VllmConfig turns the
/// hybrid manager off for chunked attention + eagle); otherwise the model runs with the hybrid
/// manager off, which charges every attention layer -- chunked and sliding alike
/// (unify_hybrid_kv_cache_specs) -- as full attention in one group. The other pools (V0, V1
/// before the hybrid allocator, SGLang's token pool) charge chunked layers as full.
static std::vector<layer_cache> engine_caches(const graph& g, const rule_set& r,
                                              const engine_config& c) {
  std::vector<layer_cache> caches = layer_caches(g, c);
  bool chunked = std::any_of(caches.begin(), caches.end(), [](const layer_cache& l) {
    return l.type == layer_cache::kind::chunked;
  });
  if (!chunked) return caches;
  bool kept = r.layout == rule_set::pool::block_hybrid &&
              c.chunked_local_hybrid.value_or(r.chunked_local_hybrid) &&
              c.speculative.draft == speculative_config::drafter::none;
  if (kept) return caches;
  for (layer_cache& l : caches)
    if (l.type == layer_cache::kind::chunked || l.type == layer_cache::kind::sliding) {
      l.type = layer_cache::kind::full;
      l.window = 0;
    }
  return caches;
}

std::vector<layer_cache> layer_caches(const graph& g, const engine_config& c) {
  const precision_spec& p = g.spec->precision;
  const dtype& kv = c.kv_cache_dtype ? *c.kv_cache_dtype : p.kv;
  // vLLM's mamba_ssm_cache_dtype "auto" takes the model's own recurrent-state dtype
  // (mamba_ssm_dtype in its config; the model's `recurrent` format here).
  const dtype& ssm = c.state_dtype ? *c.state_dtype : p.recurrent;
  std::vector<layer_cache> out;
  for (const layer& ly : g.layers)
    std::visit(cache_rules{kv, p.conv, ssm, c.tensor_parallel, c.speculative.tokens, ly.index, out,
                           p.index},
               ly.attention);
  append_draft_caches(g, c, out);
  return out;
}

/// vLLM's estimate when one request does not fit (_estimate_max_model_len_from_groups): the
/// longest max_model_len, by bisection, whose per-request KV fits the available memory.
static std::int64_t estimate_max_model_len(const graph& g, const rule_set& r,
                                           const engine_config& c) {
  auto fits = [&](std::int64_t len) {
    engine_config t = c;
    t.max_model_len = len;
    std::vector<layer_cache> caches = engine_caches(g, r, t);
    std::int64_t bs = c.block_size > 0 ? c.block_size : r.default_block_size;
    engine_capacity e = plan_hybrid(caches, r, t, static_cast<std::int64_t>(g.layers.size()), bs);
    return e.max_model_len_kv_bytes <= c.available_kv_bytes;
  };
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = c.max_model_len;  // fits(lo); the answer is below max_model_len
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

engine_capacity plan_engine(const graph& g, const rule_set& r, const engine_config& c) {
  if (c.max_model_len < 1) throw spec_error("max_model_len", "give the context length (>= 1)");
  if (c.mamba_full_memory_ratio && !(*c.mamba_full_memory_ratio > 0))
    throw spec_error("mamba_full_memory_ratio",
                     fmt::format("must be > 0, got {}", *c.mamba_full_memory_ratio));
  if (r.mamba.ssm_format && !c.state_dtype) {
    // SGLang's --mamba-ssm-dtype default is one format for every model, not the model's own.
    engine_config with = c;
    with.state_dtype = parse_dtype(r.mamba.ssm_format);
    return plan_engine(g, r, with);
  }
  if (!r.kv_sharing)
    for (const layer& ly : g.layers)
      if (const auto* a = std::get_if<attention_gqa>(&ly.attention); a && a->kv_source)
        throw spec_error("engine",
                         fmt::format("layer {} reads layer {}'s cache (kv_source): calc has no {} "
                                     "{} rule for cross-layer KV sharing",
                                     ly.index, *a->kv_source, r.engine, r.versions));
  if (r.parallel_refusal)
    for (const layer& ly : g.layers)
      if (std::holds_alternative<attention_parallel>(ly.attention))
        throw spec_error(
            std::string(r.engine) == "sglang" ? "engine" : "engine_version",
            fmt::format("layer {} runs attention and a Mamba2 mixer in parallel, which calc's "
                        "{} {} rules do not cover: {}",
                        ly.index, r.engine, r.versions, r.parallel_refusal));
  const speculative_config& spec = c.speculative;
  if (spec.tokens > 0 || spec.draft != speculative_config::drafter::none) {
    // V0 ran a draft model in its own worker with its own cache engine; SGLang keeps draft
    // pools of its own. Neither is modelled: an input error, not a guess.
    if (r.layout == rule_set::pool::block_all_layers || r.layout == rule_set::pool::token_pool)
      throw spec_error("speculative",
                       fmt::format("calc's {} {} rules do not model speculative decoding "
                                   "(the draft's cache is allocated apart from the pool)",
                                   r.engine, r.versions));
  }
  std::vector<layer_cache> caches = engine_caches(g, r, c);
  if (caches.empty())
    throw spec_error("model",
                     fmt::format("{} keeps no KV cache or state in any layer", g.spec->name));
  auto layers = static_cast<std::int64_t>(g.layers.size());
  if (c.pipeline_parallel > layers)
    throw spec_error("pipeline_parallel",
                     fmt::format("{} stages exceed the {} layers", c.pipeline_parallel, layers));
  std::int64_t bs = c.block_size > 0 ? c.block_size : r.default_block_size;
  engine_capacity e;
  switch (r.layout) {
    case rule_set::pool::block_all_layers:
    case rule_set::pool::block_uniform:
      e = plan_single_group(caches, r, c, layers, bs);
      break;
    case rule_set::pool::block_hybrid:
      e = plan_hybrid(caches, r, c, layers, bs);
      break;
    case rule_set::pool::token_pool:
      e = plan_token_pool(caches, r, c, layers, bs);
      break;
  }
  e.rules = &r;
  e.available_kv_bytes = c.available_kv_bytes;
  if (r.layout != rule_set::pool::token_pool) {
    auto groups = static_cast<std::int64_t>(e.groups.size());
    switch (r.tokens) {
      case rule_set::token_print::blocks_x_block_size:
        e.kv_cache_tokens = (checked(e.blocks) * e.block_size).value();
        break;
      case rule_set::token_print::blocks_per_group:
        e.kv_cache_tokens = (checked(e.blocks / groups) * e.block_size).value();
        break;
      case rule_set::token_print::concurrency_x_len:
        // int(max_concurrency * max_model_len), exact: blocks * len // blocks per request.
        e.kv_cache_tokens =
            (checked(e.blocks) * c.max_model_len / std::max<std::int64_t>(1, e.blocks_per_request))
                .value();
        break;
      case rule_set::token_print::pool_tokens:
        break;
    }
    if (!r.concurrency_in_blocks)
      e.max_concurrency =
          static_cast<double>(e.kv_cache_tokens) / static_cast<double>(c.max_model_len);
    if (r.layout != rule_set::pool::block_all_layers) {
      e.fits = c.available_kv_bytes >= e.max_model_len_kv_bytes;
      if (!e.fits) {
        e.reason = fmt::format(
            "To serve at least one request with the model's max seq len ({}), ({} GiB KV cache "
            "is needed, which is larger than the available KV cache memory ({} GiB)",
            c.max_model_len, gib(e.max_model_len_kv_bytes), gib(c.available_kv_bytes));
        if (r.layout == rule_set::pool::block_hybrid) {
          e.estimated_max_model_len = estimate_max_model_len(g, r, c);
          e.reason += fmt::format(
              ". Based on the available memory, the estimated maximum model length is {}",
              e.estimated_max_model_len);
        }
      }
    }
  }
  // The lines the engine prints.
  std::string len = r.layout == rule_set::pool::block_all_layers ? std::to_string(c.max_model_len)
                                                                 : with_commas(c.max_model_len);
  switch (r.layout) {
    case rule_set::pool::block_all_layers:
      e.log.push_back(fmt::format("# GPU blocks: {}", e.blocks));
      e.log.push_back(fmt::format("Maximum concurrency for {} tokens per request: {}x", len,
                                  two_decimals(e.max_concurrency)));
      break;
    case rule_set::pool::block_uniform:
    case rule_set::pool::block_hybrid:
      e.log.push_back(fmt::format("Available KV cache memory: {} GiB", gib(c.available_kv_bytes)));
      e.log.push_back(fmt::format("GPU KV cache size: {} tokens", with_commas(e.kv_cache_tokens)));
      e.log.push_back(fmt::format("Maximum concurrency for {} tokens per request: {}x", len,
                                  two_decimals(e.max_concurrency)));
      break;
    case rule_set::pool::token_pool: {
      bool mla = std::any_of(caches.begin(), caches.end(), [](const layer_cache& l) {
        return l.type == layer_cache::kind::mla;
      });
      if (e.mamba_request_bytes > 0)
        e.log.push_back(fmt::format(
            "Mamba Cache is allocated. max_mamba_cache_size: {}, conv_state size: {}GB, "
            "ssm_state size: {}GB",
            e.mamba_slots, gib(e.conv_pool_bytes), gib(e.ssm_pool_bytes)));
      if (mla) {
        e.log.push_back(fmt::format("KV Cache is allocated. #tokens: {}, KV size: {} GB",
                                    e.kv_cache_tokens, gib(e.k_pool_bytes)));
      } else {
        e.log.push_back(
            fmt::format("KV Cache is allocated. #tokens: {}, K size: {} GB, V size: {} GB",
                        e.kv_cache_tokens, gib(e.k_pool_bytes), gib(e.v_pool_bytes)));
      }
      break;
    }
  }
  if (!e.fits) e.log.push_back(e.reason);
  return e;
}

std::string two_decimals(double v) { return fmt::format("{:.2f}", v); }

}  // namespace calc::engine
