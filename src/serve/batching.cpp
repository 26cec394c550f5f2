#include "serve/batching.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unsupported/Eigen/SpecialFunctions>

#include "common/error.h"
#include "engine/question.h"
#include "tally/tally.h"

namespace calc::serve {

const std::vector<engine_defaults>& engines() {
  static const std::vector<engine_defaults> rows = {
      {.name = "vllm",
       .mixed_prefill = true,
       .memory_fraction = 0.9,
       .budget_engine = "vllm",
       .kv_block_tokens = 16,
       .source = "vLLM V1 EngineArgs defaults for the OpenAI server (vllm/engine/arg_utils.py): "
                 "chunked prefill on, batched tokens and sequences by card (get_batch_defaults: "
                 "8192 and 1024 on GPUs of 70 GiB or more but A100s, else 2048 and 256), "
                 "gpu_memory_utilization 0.9, block_size 16",
       .kv = kv_policy::preempt_newest,
       .preempted_kv_cached = true},
      {.name = "sglang",
       .max_num_batched_tokens = 8192,
       .max_num_seqs = 4096,
       .mixed_prefill = false,
       .memory_fraction = 0.88,  // unused: budget_engine computes it
       .budget_engine = "sglang",
       .kv_block_tokens = 1,
       .source = "SGLang ServerArgs defaults (sglang/srt/server_args.py): chunked_prefill_size "
                 "8192 on large GPUs, prefill batches run apart from decode (enable_mixed_chunk "
                 "off), max_running_requests bounded by the token pool, mem_fraction_static "
                 "computed for the card and layout (_handle_gpu_memory_settings), "
                 "page_size 1; under DP attention the chunked prefill size and the running cap "
                 "are divided by dp_size (_handle_data_parallelism; max_running_requests // "
                 "dp_size per worker)",
       .kv = kv_policy::retract,
       .budget_over_dp = true},
      {.name = "trtllm",
       .max_num_batched_tokens = 8192,
       .max_num_seqs = 2048,
       .mixed_prefill = true,
       .memory_fraction = 0.9,
       .fraction_of_free = true,
       .kv_block_tokens = 32,
       .source = "TensorRT-LLM PyTorch backend defaults (tensorrt_llm/llmapi/llm_args.py): "
                 "max_num_tokens 8192, max_batch_size 2048, in-flight batching of context and "
                 "generation, kv_cache free_gpu_memory_fraction 0.9 and tokens_per_block 32, "
                 "capacity scheduler "
                 "GUARANTEED_NO_EVICT (a request is admitted with blocks for its whole "
                 "length); enable_attention_dp gives every rank its own attention",
       .kv = kv_policy::reserve_whole,
       .attention_dp_whole = true,
       .vendors = {"nvidia"}},
  };
  return rows;
}

const engine_defaults& find_engine(const std::string& name) {
  for (const engine_defaults& e : engines())
    if (name == e.name) return e;
  throw spec_error("engine",
                   fmt::format("unknown engine '{}' (known: vllm, sglang, trtllm)", name));
}

batching_config engine_batching(const engine_defaults& e, std::int64_t isl, std::int64_t osl,
                                const gpu_spec& gpu) {
  batching_config c;
  c.isl = isl;
  c.osl = osl;
  c.max_num_batched_tokens = e.max_num_batched_tokens;
  c.max_num_seqs = e.max_num_seqs;
  if (e.max_num_batched_tokens == 0 || e.max_num_seqs == 0) {
    engine::batch_defaults card = engine::default_batch(engine::find_budget_rules(e.name, ""), gpu);
    c.max_num_batched_tokens = card.batched_tokens;
    c.max_num_seqs = card.seqs;
  }
  c.mixed_prefill = e.mixed_prefill;
  c.memory_fraction = e.memory_fraction;
  c.fraction_of_free = e.fraction_of_free;
  c.budget_engine = e.budget_engine;
  c.kv_block_tokens = e.kv_block_tokens;
  c.kv = e.kv;
  c.preempted_kv_cached = e.preempted_kv_cached;
  c.budget_over_dp = e.budget_over_dp;
  c.attention_dp_whole = e.attention_dp_whole;
  return c;
}

namespace {

/// A vendor key as its maker writes it.
std::string maker(std::string_view vendor) {
  return vendor == "nvidia"  ? "NVIDIA"
         : vendor == "amd"   ? "AMD"
         : vendor == "intel" ? "Intel"
                             : std::string(vendor);
}

}  // namespace

std::string engine_gpu_problem(const engine_defaults& e, const gpu_spec& gpu) {
  if (gpu.vendor.empty()) return "";
  auto runs_on = [&](const engine_defaults& x) {
    return std::any_of(x.vendors.begin(), x.vendors.end(),
                       [&](const char* v) { return v != nullptr && gpu.vendor == v; });
  };
  if (runs_on(e)) return "";
  std::string makers, others;
  for (const char* v : e.vendors)
    if (v != nullptr) makers += (makers.empty() ? "" : ", ") + maker(v);
  for (const engine_defaults& o : engines())
    if (runs_on(o)) others += (others.empty() ? "" : " and ") + std::string(o.name);
  return fmt::format("{} runs on {} cards only, and {} ({}) is {}'s{}", e.name, makers, gpu.name,
                     gpu.display, maker(gpu.vendor),
                     others.empty() ? "" : fmt::format("; {} run there", others));
}

std::string engine_layout_problem(const batching_config& cfg, const serve_layout& l) {
  if (!cfg.attention_dp_whole || l.dp == 1 || l.tp == 1) return "";
  return fmt::format(
      "this engine's attention DP is on or off, not a size: with it each of the {} ranks is its "
      "own attention group; give --dp {} (attention tp 1) or --dp 1",
      l.tp_group(), l.tp_group());
}

std::string launch_line(const std::string& engine, const serve_layout& l,
                        const batching_config& cfg, const gpu_spec& gpu) {
  std::string line = launch_flags(engine, l);
  const batching_config e = engine_batching(find_engine(engine), 0, 0, gpu);
  bool trt = engine == "trtllm";
  const char* tokens = engine == "vllm"     ? "--max-num-batched-tokens"
                       : engine == "sglang" ? "--chunked-prefill-size"
                                            : "--max_num_tokens";
  const char* seqs = engine == "vllm"     ? "--max-num-seqs"
                     : engine == "sglang" ? "--max-running-requests"
                                          : "--max_batch_size";
  std::string knobs;
  if (cfg.max_num_batched_tokens != e.max_num_batched_tokens)
    knobs += fmt::format(" {} {}", tokens, cfg.max_num_batched_tokens);
  if (cfg.max_num_seqs != e.max_num_seqs) knobs += fmt::format(" {} {}", seqs, cfg.max_num_seqs);
  if (cfg.fraction_typed)
    knobs += fmt::format(" {} {}",
                         engine == "sglang" ? "--mem-fraction-static"
                         : engine == "vllm" ? "--gpu-memory-utilization"
                                            : "--kv_cache_free_gpu_memory_fraction",
                         cfg.memory_fraction);
  // TensorRT-LLM's attention-DP note closes its flags in parentheses: the knobs go before it.
  auto note = line.find(" (");
  if (trt && note != std::string::npos) return line.substr(0, note) + knobs + line.substr(note);
  return line + knobs;
}

batching_config per_attention_group(batching_config cfg, std::int64_t dp) {
  if (cfg.budget_over_dp && dp > 1) {
    cfg.max_num_batched_tokens = std::max<std::int64_t>(1, cfg.max_num_batched_tokens / dp);
    cfg.max_num_seqs = std::max<std::int64_t>(1, cfg.max_num_seqs / dp);
  }
  return cfg;
}

namespace {

/// P(N <= k) for N ~ Poisson(mean): the regularised upper incomplete gamma Q(k + 1, mean), and
/// past a million expected arrivals (where its series loses digits) the normal approximation
/// with continuity correction.
double poisson_at_most(double k, double mean) {
  if (k < 0) return 0;
  if (mean > 1e6) return 0.5 * std::erfc(-(k + 0.5 - mean) / std::sqrt(2 * mean));
  return Eigen::numext::igammac(k + 1, mean);
}

}  // namespace

double batch_wait_steps(double per_step, double iters, std::int64_t more) {
  if (!(iters > 0) || more < 1) return 0;
  if (!(per_step > 0)) return iters;
  // N ~ Poisson(mu = per_step x iters) prompts arrive while the first is held. Fewer than `more`
  // (N < m): the group leaves at the timeout, its first prompt held `iters`, each arrival half
  // of it on average; else it leaves at the m-th arrival, whose wait is 0 and whose gaps G_k
  // weigh k in the sum of waits (the k-th gap is waited by the k prompts before it):
  //   E[waits] = iters P(N < m) + iters / 2 mu P(N <= m - 2) + m (m + 1) / (2 per_step) P(N > m)
  //   E[group] = 1 + mu P(N <= m - 2) + m P(N >= m)
  // and a prompt's mean wait is their ratio (renewal-reward over released groups).
  double m = static_cast<double>(more);
  double mu = per_step * iters;
  double below_m = poisson_at_most(m - 1, mu);   // P(N < m)
  double below_m1 = poisson_at_most(m - 2, mu);  // P(N <= m - 2)
  double above_m = 1 - poisson_at_most(m, mu);   // P(N > m)
  double waits =
      iters * below_m + iters / 2 * mu * below_m1 + m * (m + 1) / (2 * per_step) * above_m;
  double group = 1 + mu * below_m1 + m * (1 - below_m);
  return std::clamp(waits / group, 0.0, iters);
}

double balance_wait_steps(double per_step, std::int64_t ranks, double timeout, double batching) {
  if (ranks < 2 || !(timeout > 0)) return 0;
  // Prompts so rare that no rank fills: every cycle runs to the timeout, and a prompt arrives
  // at a uniform point of one.
  if (!(per_step * timeout > 1e-12)) return timeout / 2;
  // The engine counts iterations while some rank has no prompt, from the last release, and
  // releases at the timeout or when every rank has one: cycles that start empty and last
  // C = min(M, T), M the last of the ranks' first prompts (each exponential of rate a =
  // per_step) and T the timeout; a cycle that filled then waits `batching` steps more.
  // Prompts arrive throughout and leave at the cycle's end, so by renewal-reward a prompt's
  // mean wait is E[C'^2] / (2 E[C']), C' = C + batching x 1{M <= T}. With u = 1 - e^{-a t},
  // U = 1 - e^{-a T} and 1 - u^n = (1 - u) sum_{j<n} u^j (sums of positive terms, exact at 64
  // ranks where the alternating closed forms lose every digit):
  //   E[C]   = (1 / a) sum_{m=1..n} U^m / m
  //   E[C^2] = (2 / a^2) sum_{m=1..n} (a T U^m - tail_m) / m,  tail_m = sum_{i>m} U^i / i
  double a = per_step;
  double at = a * timeout;
  double u = -std::expm1(-at);
  auto n = static_cast<double>(ranks);
  // tail_m = aT - S_m (S_m the partial sum, a E[C] so far; -ln(1 - U) = aT); for small U the
  // series itself, whose terms fall fast, keeps the digits the difference would lose.
  auto tail = [&](double m, double partial) {
    if (u >= 0.5) return std::max(at - partial, 0.0);
    double t = 0;
    for (double i = m + 1, p = std::pow(u, m + 1); p / i > 1e-17 * t; i += 1, p *= u) {
      t += p / i;
      if (t == 0) break;  // U^(m+1) underflowed
    }
    return t;
  };
  double mean = 0, square = 0, power = 1;
  for (double m = 1; m <= n; m += 1) {
    power *= u;
    mean += power / m;
    square += (at * power - tail(m, mean)) / m;
  }
  mean /= a;
  square *= 2 / (a * a);
  double filled = power;  // U^n = P(M <= T)
  double c1 = mean + batching * filled;
  double c2 =
      square + 2 * batching * (mean - timeout * (1 - filled)) + batching * batching * filled;
  if (!(c1 > 0)) return 0;
  return std::clamp(c2 / (2 * c1), 0.0, timeout + batching);
}

kv_pool_terms kv_pool(const deployment& d, const batching_config& cfg) {
  kv_pool_terms t;
  // The engines size the pool from what the CUDA runtime reports, not the memory as sold.
  t.card = static_cast<double>(engine_visible_memory(d.gpu));
  t.weights = d.weight_bytes_per_rank;
  t.fraction = cfg.memory_fraction;
  std::string_view engine = cfg.budget_engine ? cfg.budget_engine : "";
  if (cfg.fraction_of_free) {
    t.pool = (t.card - t.weights) * t.fraction;
    t.why = fmt::format("{:.2f} of what the weights leave", t.fraction);
    return t;
  }
  if (engine == "sglang") {
    // The reserve for activations grows with the prefill chunk: the typed one, else SGLang's
    // default for the card.
    if (cfg.fraction_typed) {
      t.why = fmt::format("--mem-fraction-static {}", t.fraction);
    } else {
      t.fraction =
          engine::sglang_default_fraction(static_cast<std::int64_t>(t.card) / (1024 * 1024),
                                          d.layout.tp_group(), d.layout.pp, cfg.reserve_chunk);
      t.why =
          fmt::format("SGLang's mem_fraction_static {:.3f} for this card and layout", t.fraction);
      if (t.fraction <= 0) t.knob = "--max-num-batched-tokens";
    }
  } else if (engine == "vllm") {
    // vLLM's --tensor-parallel-size is one attention group's (its data-parallel ranks each run
    // one, launch_flags); its non-torch memory follows that size.
    const engine::budget_rules& b = engine::find_budget_rules("vllm", "");
    engine::budget_terms a = engine::activation_terms(*d.g, b, cfg.max_num_batched_tokens,
                                                      cfg.max_num_seqs, d.layout.tp);
    t.reserved = (a.activation_peak + a.non_torch + a.cuda_graph).to_double();
    t.why = fmt::format(
        "{:.2f} of the card less {:.1f} GB of activation peak, non-torch memory "
        "and graph pool",
        t.fraction, t.reserved / 1e9);
    // The batch's activation peak, not the weights and the fixed reserves, empties the pool.
    if (t.card * t.fraction - t.weights - (a.non_torch + a.cuda_graph).to_double() > 0)
      t.knob = "--max-num-batched-tokens";
  } else {
    t.why = fmt::format("{:.2f} of the card", t.fraction);
  }
  t.pool = t.card * t.fraction - t.weights - t.reserved;
  return t;
}

double kv_pool_bytes(const deployment& d, const batching_config& cfg) {
  return kv_pool(d, cfg).pool;
}

void refuse_empty_pool(const kv_pool_terms& t, const deployment& d, const std::string& field,
                       const std::string& hint) {
  std::string what = fmt::format(
      "no KV pool is left on {} ({:.1f} GB visible, {:.1f} GB of "
      "weights per rank; {})",
      d.gpu.name, t.card / 1e9, t.weights / 1e9, t.why);
  if (!t.knob.empty())
    throw spec_error(t.knob, what +
                                 ": the engine's reserve for its batch, not the weights, takes "
                                 "it; a smaller --max-num-batched-tokens or --max-num-seqs");
  throw spec_error(field, what + hint);
}

scenario make_scenario(const deployment& d, const batching_config& given,
                       std::int64_t concurrency) {
  if (std::string why = engine_layout_problem(given, d.layout); !why.empty())
    throw spec_error("dp", why);
  const batching_config cfg = per_attention_group(given, d.layout.dp);
  if (cfg.isl < 1) throw spec_error("isl", "a request needs at least one input token");
  if (cfg.osl < 1) throw spec_error("osl", "a request returns at least one token");
  if (concurrency < 1) throw spec_error("concurrency", "must be at least 1");
  if (cfg.max_num_batched_tokens < 1)
    throw spec_error("max_num_batched_tokens", "must be at least 1");
  if (cfg.max_num_seqs < 1) throw spec_error("max_num_seqs", "must be at least 1");
  scenario s;
  s.d = d;
  s.cfg = cfg;
  s.concurrency = concurrency;
  const graph& g = *d.g;
  // KV pool of one rank: what the engine may use less this rank's weights, over one request's
  // state at its final length on this rank.
  // The pool is sized by the instance's knobs, before their split over attention-DP groups.
  kv_pool_terms terms = kv_pool(d, given);
  double pool = terms.pool;
  if (pool <= 0) refuse_empty_pool(terms, d, "gpu", "; use more ranks");
  // What a running request holds: its whole length where the engine reserves it at admission;
  // else its pages as they fill, ISL + OSL / 2 on average over a closed loop's requests at
  // every stage of their output (reserving the whole length for vLLM and SGLang capped rows
  // such as Llama-3.1-70B 1024 x 8192 at 64 clients on one B200, measured at 0.4 s TTFT, with
  // a wait for slots of minutes).
  std::int64_t held =
      cfg.kv == kv_policy::reserve_whole ? cfg.isl + cfg.osl : cfg.isl + cfg.osl / 2;
  double per_request =
      tally_state(g, held).total.to_double() * d.kv_share / static_cast<double>(d.layout.pp);
  double fit = per_request > 0 ? std::floor(pool / per_request) : 1e18;
  s.kv_requests = static_cast<std::int64_t>(std::min(fit, 1e15));
  s.kv_pool_fits = s.kv_requests >= concurrency;
  // A pipeline keeps pp micro-batches in flight: each step carries 1/pp of the requests.
  std::int64_t pp = d.layout.pp;
  std::int64_t running =
      std::min({concurrency, cfg.max_num_seqs, std::max<std::int64_t>(s.kv_requests, 1)});
  s.running = running;
  std::int64_t per_step = (running + pp - 1) / pp;
  // Chunked prefill: the budget left after the decode tokens, at most the whole prompt.
  std::int64_t budget =
      cfg.mixed_prefill ? cfg.max_num_batched_tokens - per_step : cfg.max_num_batched_tokens;
  s.chunk = std::clamp<std::int64_t>(budget, 1, cfg.isl);
  s.chunks = (cfg.isl + s.chunk - 1) / s.chunk;
  std::int64_t context = cfg.isl + cfg.osl / 2;  // mean history of a decoding request
  // The chunk's own history: half the prompt on average when it takes several chunks.
  std::int64_t chunk_context = s.chunks > 1 ? (cfg.isl - s.chunk) / 2 : 0;
  s.decode = cost_step(d, {per_step, context, 0, 0});
  for (std::size_t j = 0; j < s.decode_part.size(); ++j) {
    std::int64_t n = std::max<std::int64_t>(
        1, (per_step * static_cast<std::int64_t>(j + 1) + 2) / 4);
    s.decode_batch[j] = static_cast<double>(n);
    s.decode_part[j] = cost_step(d, {n, context, 0, 0});
  }
  s.decode_batch[3] = static_cast<double>(per_step);
  // A mixing engine runs chunks beside the decodes; the others run them alone (only one is used).
  if (cfg.mixed_prefill)
    s.mixed = cost_step(d, {per_step, context, s.chunk, chunk_context});
  else
    s.prefill = cost_step(d, {0, 0, s.chunk, chunk_context});
  if (s.chunks == 1) {
    s.cohort = std::clamp<std::int64_t>(budget / cfg.isl, 1, per_step);
    if (s.cohort > 1)
      s.cohort_step = cost_step(d, {cfg.mixed_prefill ? per_step : 0,
                                    cfg.mixed_prefill ? context : 0, cfg.isl, 0, s.cohort});
  }
  // The opening burst: every client sends at once, so the prompts of all `running` requests
  // queue for the token budget, a full budget per step.
  double burst_tokens = static_cast<double>(per_step) * static_cast<double>(cfg.isl);
  std::int64_t step_tokens = std::min<std::int64_t>(cfg.max_num_batched_tokens, per_step * cfg.isl);
  s.burst_steps =
      static_cast<std::int64_t>(std::ceil(burst_tokens / static_cast<double>(step_tokens)));
  s.burst = cost_step(d, {0, 0, step_tokens, 0});
  return s;
}

steady_state solve_steady_state(const scenario& s, const coefficients& k) {
  steady_state r;
  const deployment& d = s.d;
  r.decode_step = time_step(d, s.decode, k);
  double t_d = r.decode_step.total_ms;
  std::array<double, 4> t_part{};
  for (std::size_t j = 0; j < s.decode_part.size(); ++j)
    t_part[j] = time_step(d, s.decode_part[j], k).total_ms;
  t_part[3] = t_d;
  // The decode step when `share` of the running requests decode (the rest wait for their first
  // token), interpolated between the costed batches.
  auto decode_at = [&](double share) {
    double n = share * s.decode_batch[3];
    if (n <= s.decode_batch[0]) return t_part[0];
    for (std::size_t j = 1; j < 4; ++j)
      if (n <= s.decode_batch[j]) {
        double span = s.decode_batch[j] - s.decode_batch[j - 1];
        double f = span > 0 ? (n - s.decode_batch[j - 1]) / span : 1;
        return t_part[j - 1] + f * (t_part[j] - t_part[j - 1]);
      }
    return t_d;
  };
  double chunks = static_cast<double>(s.chunks);
  // Prefill work one request adds to the engine (beyond the decode steps it rides on), and how
  // long its own prefill takes.
  // The last chunk holds what is left of the prompt: its prefill work is that share of a full
  // chunk's (`work` full chunks), though it still takes a whole step.
  double work = static_cast<double>(s.cfg.isl) / static_cast<double>(s.chunk);
  double extra = 0, own = 0;
  if (s.cfg.mixed_prefill) {
    double t_m = time_step(d, s.mixed, k).total_ms;
    extra = work * std::max(t_m - t_d, 0.0);
    own = chunks * t_d + extra;
  } else {
    double t_p = time_step(d, s.prefill, k).total_ms;
    extra = work * t_p;
    own = extra;
  }
  if (s.cohort > 1) {
    // A share of requests arrives with its cohort: it waits for the cohort's whole step, whose
    // prefill work the cohort shares.
    double t_c = time_step(d, s.cohort_step, k).total_ms;
    double work_c = s.cfg.mixed_prefill ? std::max(t_c - t_d, 0.0) : t_c;
    double own_c = s.cfg.mixed_prefill ? t_d + work_c : t_c;
    double sh = k.cohort_share;
    extra = (1 - sh) * extra + sh * work_c / static_cast<double>(s.cohort);
    own = (1 - sh) * own + sh * own_c;
  }
  double c = static_cast<double>(s.concurrency);
  double running = static_cast<double>(s.running);
  double osl = static_cast<double>(s.cfg.osl);
  // The opening burst: a request of it waits on average for half the burst's prefill steps;
  // such requests are a share of the run.
  double burst =
      k.burst_share * static_cast<double>(s.burst_steps) * time_step(d, s.burst, k).total_ms / 2;
  // A request's decode is stretched by the prefills of the others (the arrival theorem of a
  // closed loop): its own came before it, so a lone client's decode runs unstretched.
  double others = (running - 1) / running;
  double tpot = t_d, ttft = own + t_d / 2;
  double rho = 0;
  double waited = 0;     // the slot wait and burst share of ttft
  double slot_wait = 0;  // the slot wait alone
  // Fixed point of the closed loop: C clients each start a request when the last one ends.
  for (int i = 0; i < 200; ++i) {
    // Requests start per ms as the running ones finish: a life in a slot, not counting the
    // wait for one (clients beyond the cap add waiting, not work).
    double cycle = ttft - slot_wait + (osl - 1) * tpot;
    double lambda = running / cycle;
    double next_rho = std::min(lambda * extra, 0.98);
    rho = i == 0 ? next_rho : 0.5 * rho + 0.5 * next_rho;
    // Little's law: a client decodes for (OSL - 1) x TPOT of its cycle and waits for its first
    // token the rest; only the decoding ones are in the decode batch.
    // (A running request's cycle leaves out the wait for a slot, which only clients beyond the
    // running cap see, and the opening burst, which is not the steady state.)
    double engaged = (osl - 1) * tpot;
    double decoding = osl > 1 ? engaged / (engaged + ttft - waited) : 1.0;
    double next_tpot = decode_at(decoding) / (1 - rho * others);
    // Waiting for the prefill budget: an M/D/1 queue of prefills, service `extra`, load rho;
    // and for the step in flight when the request arrives (none for a lone client).
    double wait = rho * extra / (2 * (1 - rho)) + others * t_d / 2;
    // Batch waiting holds an admitted prompt while others decode (a lone client, or answers of
    // one token, leave none in flight; attention DP turns it off), until enough prompts arrive
    // to fill the threshold beside the decode tokens, or the timeout; a group that every other
    // running request has joined has nothing decoding and leaves. Prompts reach the scheduler
    // once per life in a slot (the hold included, not the wait for a slot).
    double held = 0;
    if (s.cfg.holds.adp_balance && d.layout.dp > 1 && running > 1 && osl > 1) {
      // The balance holds prompts only while every rank decodes: in a closed loop whose answers
      // are longer than one token, with more than one client a rank (a lone client's rank
      // decodes nothing when its prompt comes, which releases it). Prompts reach one rank at
      // its clients' rate.
      double in_slot = ttft - waited + (osl - 1) * tpot;
      held = balance_wait_steps(running / in_slot * next_tpot, d.layout.dp,
                                static_cast<double>(s.cfg.holds.adp_balance_timeout_iters),
                                static_cast<double>(s.cfg.holds.adp_balance_batching_iters)) *
             next_tpot;
    } else if (s.cfg.holds.batch_wait_iters > 0 && running > 1 && osl > 1 && d.layout.dp == 1) {
      double decode_tokens = decoding * s.decode_batch[3];
      double threshold =
          s.cfg.holds.batch_wait_tokens_ratio * static_cast<double>(s.cfg.max_num_batched_tokens);
      double prompts = std::ceil((threshold - decode_tokens) / static_cast<double>(s.cfg.isl));
      double more = std::clamp(prompts - 1, 0.0, running - 1);
      double in_slot = ttft - waited + (osl - 1) * tpot;
      held = batch_wait_steps(running / in_slot * next_tpot,
                              static_cast<double>(s.cfg.holds.batch_wait_iters),
                              static_cast<std::int64_t>(more)) *
             next_tpot;
    }
    // Clients beyond the running cap wait for a slot: a request's whole life in it per extra
    // round.
    double slots = std::max(0.0, c - running) / running * (own + held + (osl - 1) * next_tpot);
    double next_ttft = wait + own + slots + k.request_latency_ms + burst + held;
    bool done =
        std::abs(next_tpot - tpot) < 1e-9 * tpot && std::abs(next_ttft - ttft) < 1e-9 * ttft;
    tpot = next_tpot;
    ttft = next_ttft;
    waited = slots + burst;
    slot_wait = slots;
    if (done) break;
  }
  // One output token has no gap after it: no time per output token, as the simulation says.
  r.tpot_ms = osl > 1 ? tpot : 0;
  r.ttft_ms = ttft;
  r.prefill_busy = rho * others;
  r.e2e_ms = ttft + (osl - 1) * tpot;
  double groups = static_cast<double>(d.layout.dp);
  r.requests_per_s = c * groups / r.e2e_ms * 1e3;
  r.output_tokens_per_s = r.requests_per_s * osl;
  return r;
}

}  // namespace calc::serve
