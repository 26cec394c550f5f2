#include "serve/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/error.h"
#include "common/json_keys.h"
#include "common/limits.h"
#include "tally/tally.h"

namespace calc::serve {

namespace {

/// Samples with a weight each: a step's regular gaps (every decoding request's token one step
/// after its last) are one sample of weight N, so a million-token run keeps one entry per step,
/// and the percentiles are still exact over the tokens.
class weighted_samples {
 public:
  void add(double v, std::int64_t n = 1) {
    if (n <= 0) return;
    count_ += n;
    sum_ += v * static_cast<double>(n);
    // A value equal to one of the last few joins it: the percentiles are the same, and a run of
    // equal steps (whose gaps alternate between two roundings of one step time) keeps a few
    // entries rather than one per step.
    std::size_t size = samples_.size();
    for (std::size_t j = size; j > 0 && j + 4 > size; --j)
      if (samples_[j - 1].first == v) {
        samples_[j - 1].second += n;
        return;
      }
    samples_.emplace_back(v, n);
  }
  std::int64_t count() const { return count_; }
  latency_stats summary() {
    latency_stats s;
    if (count_ == 0) return s;
    std::sort(samples_.begin(), samples_.end());
    s.mean = sum_ / static_cast<double>(count_);
    // The smallest value with at least q of the samples at or below it (rank ceil(q N)).
    auto at = [&](double q) {
      auto rank = static_cast<std::int64_t>(std::ceil(q * static_cast<double>(count_)));
      std::int64_t seen = 0;
      for (const auto& [v, n] : samples_) {
        seen += n;
        if (seen >= rank) return v;
      }
      return samples_.back().first;
    };
    s.p50 = at(0.5);
    s.p90 = at(0.9);
    s.p99 = at(0.99);
    s.max = samples_.back().first;
    return s;
  }

 private:
  std::vector<std::pair<double, std::int64_t>> samples_;
  std::int64_t count_ = 0;
  double sum_ = 0;
};

/// Step times memoised by shape (rounded as below), so a 10,000-request run tallies a few
/// hundred shapes rather than every step.
class step_clock {
 public:
  step_clock(const deployment& d, const coefficients& k) : d_(d), k_(k) {}
  double ms(std::int64_t decode, std::int64_t context, std::int64_t prefill,
            std::int64_t prefill_context) {
    // Step time is smooth in each: the decode count exact up to 32, then within 4 requests
    // (1/8 at worst) and 16 past 256; contexts within 512 tokens, prefill chunks within 128.
    std::int64_t b = decode <= 32 ? decode : decode <= 256 ? round(decode, 8) : round(decode, 32);
    std::int64_t p = prefill <= 0    ? 0
                     : prefill < 256 ? std::max<std::int64_t>(32, round(prefill, 32))
                                     : round(prefill, 256);
    step_shape s{b, round(context, kContext), p, round(prefill_context, kContext)};
    auto key = std::make_tuple(s.decode, s.decode_context, s.prefill, s.prefill_context);
    auto it = memo_.find(key);
    if (it == memo_.end()) it = memo_.emplace(key, time_step(d_, cost_step(d_, s), k_)).first;
    last_ = &it->second;
    return last_->total_ms;
  }
  /// One step taken at the time ms() last gave: its split joins the run's sum.
  void count() {
    for (std::size_t i = 0; i < op_classes; ++i) sum_.op_ms[i] += last_->op_ms[i];
    sum_.weights_ms += last_->weights_ms;
    sum_.kv_ms += last_->kv_ms;
    sum_.compute_ms += last_->compute_ms;
    sum_.communication_ms += last_->communication_ms;
    sum_.overhead_ms += last_->overhead_ms;
    sum_.total_ms += last_->total_ms;
    ++steps_;
  }
  /// The mean step of those counted, split as time_step splits one.
  step_time mean() const {
    step_time m = sum_;
    if (steps_ == 0) return m;
    auto n = static_cast<double>(steps_);
    for (double& v : m.op_ms) v /= n;
    for (double* v : {&m.weights_ms, &m.kv_ms, &m.compute_ms, &m.communication_ms,
                      &m.overhead_ms, &m.total_ms})
      *v /= n;
    return m;
  }
  /// The largest context the step at `context` shares its time with (the same rounding).
  static std::int64_t same_time_until(std::int64_t context) {
    return round(context, kContext) + kContext / 2 - 1;
  }

 private:
  static std::int64_t round(std::int64_t v, std::int64_t q) { return (v + q / 2) / q * q; }
  static constexpr std::int64_t kContext = 1024;
  const deployment& d_;
  const coefficients& k_;
  // A std::map: last_ points into it, and its nodes never move.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, step_time> memo_;
  const step_time* last_ = nullptr;
  step_time sum_;
  std::int64_t steps_ = 0;
};

/// KV bytes one request holds on a rank at a length, in whole blocks of the engine's page
/// size, from the state tally (so windows, latents and fixed state count as the model has them):
/// the compiled state series (closed_form::state_series, tested equal to tally_state) evaluated
/// in 64-bit integers where they cannot overflow, or, for the stepwise oracle, tally_state itself.
/// SGLang counts at most this many of a request's outputs in its admission ask
/// (schedule_policy.py, CLIP_MAX_NEW_TOKENS_ESTIMATION).
constexpr std::int64_t clip_new_tokens = 4096;

class kv_blocks {
 public:
  kv_blocks(const deployment& d, std::int64_t block_tokens, bool itemised)
      : d_(d), block_(block_tokens), itemised_(itemised) {
    const length_series& series = d.forms.tallies->state_series();
    series_ = &series;
    // Each term adds at most coef per token (a floor steps by one), so a block of tokens adds at
    // most block x the coefficients' sum; a negative coefficient (none of calc's kinds has one)
    // would let the state shrink with the length, which decode runs assume it never does.
    int128 widest = series.constant().wide() < 0 ? -series.constant().wide()
                                                 : series.constant().wide();
    int128 slope = 0;
    std::int64_t offset = 0;
    monotone_ = true;
    bool narrow = series.constant().fits_int64();
    for (const floor_term& t : series.terms()) {
      if (t.coef < 0) monotone_ = false;
      narrow = narrow && t.coef.fits_int64();
      int128 c = t.coef.wide() < 0 ? -t.coef.wide() : t.coef.wide();
      slope += c;
      offset = std::max<std::int64_t>(offset, t.offset < 0 ? -t.offset : t.offset);
      terms_.push_back({narrow ? t.coef.value() : 0, t.offset, t.ratio, t.cap});
    }
    constant_ = narrow ? series.constant().value() : 0;
    // |value| <= |constant| + slope x (length + offset): below 2^62 in int64 up to `narrow_`.
    constexpr int128 limit = int128{1} << 62;
    if (narrow && slope < limit && widest < limit) {
      int128 room = (limit - widest) / (slope > 0 ? slope : 1) - offset;
      narrow_ = static_cast<std::int64_t>(std::min<int128>(room, INT64_MAX / 2));
    }
    double growth = static_cast<double>(slope) * static_cast<double>(block_) * d_.kv_share /
                    static_cast<double>(d_.layout.pp);
    growth_ = growth < 1e17 ? static_cast<std::int64_t>(std::ceil(growth)) + 2 : -1;
    if (growth_ < 0) monotone_ = false;
  }
  /// Tokens the blocks holding `tokens` tokens have room for.
  std::int64_t room(std::int64_t tokens) const { return (tokens + block_ - 1) / block_ * block_; }
  /// Whole blocks' worth of tokens at most `tokens`.
  std::int64_t whole(std::int64_t tokens) const { return tokens / block_ * block_; }
  std::int64_t bytes(std::int64_t tokens) {
    std::int64_t n = room(tokens);
    if (itemised_) {
      auto it = memo_.find(n);
      if (it != memo_.end()) return it->second;
      std::int64_t v = to_rank(tally_state(*d_.g, n).total.to_double());
      memo_.emplace(n, v);
      return v;
    }
    if (n > narrow_) return to_rank(series_->at(n).to_double());
    std::int64_t v = constant_;
    for (const term& t : terms_) {
      std::int64_t k = (n + t.offset) / t.ratio;
      v += t.coef * (t.cap >= 0 ? std::min(k, t.cap) : k);
    }
    return to_rank(static_cast<double>(v));
  }
  /// bytes() is non-decreasing in the length (decode runs rely on it).
  bool monotone() const { return monotone_; }
  /// The most bytes() grows from one length to the next (a bound; meaningful when monotone).
  std::int64_t growth() const { return growth_; }

 private:
  /// One rank's share of a request's state, in whole bytes.
  std::int64_t to_rank(double total) const {
    double b = total * d_.kv_share / static_cast<double>(d_.layout.pp);
    return static_cast<std::int64_t>(std::ceil(b));
  }
  struct term {
    std::int64_t coef, offset, ratio, cap;
  };
  const deployment& d_;
  std::int64_t block_;
  bool itemised_;
  const length_series* series_ = nullptr;
  std::vector<term> terms_;
  std::int64_t constant_ = 0;
  std::int64_t narrow_ = -1;  // lengths up to this evaluate in int64
  std::int64_t growth_ = -1;
  bool monotone_ = false;
  std::unordered_map<std::int64_t, std::int64_t> memo_;  // the itemised tally's, by length
};

/// One request in the engine. Its tokens are the prompt plus the outputs returned so far;
/// `computed` of them have KV in the pool. A step computes the rest (a prefill chunk, or the one
/// token of a decode) and the step that completes them returns the next output token, as vLLM
/// counts num_tokens and num_computed_tokens; a preempted request has computed = 0 and
/// prefills its prompt and outputs again.
struct request_state {
  const arrival* a = nullptr;
  std::int64_t computed = 0;
  std::int64_t generated = 0;
  std::int64_t held = 0;  // KV bytes held on a rank
  std::int64_t room = 0;  // tokens those blocks hold
  double first_ms = 0, last_ms = 0;
  bool preempted = false, waited_for_kv = false, done = false;
  // After a preemption with preempted_kv_cached: where its freed blocks sit in the pool's free
  // queue, and the tokens they hold.
  std::int64_t cache_at = 0, cache_bytes = 0, cache_tokens = 0;
  std::int64_t tokens() const { return a->isl + generated; }
  std::int64_t pending() const { return tokens() - computed; }
  bool decoding() const { return generated > 0 && pending() == 1; }
};

/// One attention group's scheduler: its queue, its running requests, its pool.
class engine_group {
 public:
  engine_group(const batching_config& cfg, kv_blocks& kv, std::int64_t pool, simulation& out)
      : cfg_(cfg), kv_(kv), free_(pool), queue_tail_(pool), out_(out) {}

  std::deque<std::size_t> waiting;
  std::vector<std::size_t> running;  // in admission order: the newest last
  std::vector<request_state> reqs;

  /// Chooses this step's work; empty when nothing can run.
  struct chunk {
    std::size_t r;
    std::int64_t tokens;
  };
  const std::vector<chunk>& schedule() {
    chunks_.clear();
    if (cfg_.mixed_prefill)
      schedule_mixed();
    else
      schedule_apart();
    return chunks_;
  }

  /// Frees a request's KV: its blocks join the end of the free queue.
  void release(request_state& r) {
    free_ += r.held;
    queue_tail_ += r.held;
    r.held = r.room = 0;
  }

  /// A decode run: from time t, the steps in which every running request decodes one token and
  /// nothing else happens, taken together; returns how many (0: the next step is not provably
  /// such a step, and the caller schedules it alone). Each step of a run is what schedule()
  /// would make of it, which the checks below prove before it is taken:
  /// - every running request is decoding, its last token from the step just ended, and all of
  ///   them fit the step (the token budget of a mixing engine);
  /// - none finishes (the step that finishes one is scheduled alone);
  /// - the pool holds every request's blocks to the run's end, so nothing is preempted or
  ///   retracted (bytes() never shrinks with the length, so the KV each step asks for fits);
  /// - no admission: the request cap or the budget is full, or the queue is empty and nothing
  ///   arrives (the run stops at an arrival), or its front is refused for want of KV at every
  ///   step: its need at the run's end (vLLM: the blocks it still finds cached only shrink) above
  ///   the pool now (which only shrinks during the run); SGLang: its whole prompt and outputs
  ///   (fixed while it waits) plus new_token_ratio of the running requests' outputs still to
  ///   write, bounded below step by step (each one's future KV falls by at most growth() a step).
  /// Per step the clock adds its time, the step count and the gap sample as schedule() would;
  /// requests and the pool are updated once, at the run's end (their state is the same).
  std::int64_t decode_run(double& t, std::size_t& next, step_clock& clock,
                          weighted_samples& itl, double step_bound) {
    if (running.empty() || !kv_.monotone()) return 0;
    auto count = static_cast<std::int64_t>(running.size());
    std::int64_t most = INT64_MAX;  // steps before a request's last token
    std::int64_t context = 0;       // tokens with KV, summed over the running requests
    for (std::size_t i : running) {
      const request_state& r = reqs[i];
      if (!r.decoding() || r.last_ms != t) return 0;
      most = std::min(most, r.a->osl - r.generated - 1);
      context += r.computed;
    }
    bool retract = cfg_.kv == kv_policy::retract;
    std::int64_t budget = cfg_.max_num_batched_tokens;
    if (cfg_.mixed_prefill) {
      if (count > budget) return 0;  // some would wait for budget
      budget -= count;
    }
    if (most < 1) return 0;
    // KV the run's first k steps allocate: non-decreasing in k.
    auto grown = [&](std::int64_t k) {
      std::int64_t sum = 0;
      for (std::size_t i : running) sum += need(reqs[i], reqs[i].computed + k);
      return sum;
    };
    most = last_true(most, [&](std::int64_t k) { return grown(k) <= free_; });
    if (most < 1) return 0;
    bool closed = count >= cfg_.max_num_seqs || budget <= 0;
    bool front = !closed && !waiting.empty();
    double front_need = 0, futures = 0, drift = 0;
    if (front && !retract) {
      const request_state& f = reqs[waiting.front()];
      most = last_true(most, [&](std::int64_t k) {
        return static_cast<double>(admission_need(f, budget, queue_head_ + grown(k))) >
               static_cast<double>(free_);
      });
      if (most < 1) return 0;
    } else if (front) {
      // SGLang's ask of the front does not change while it waits: its whole prompt and all its
      // outputs; only the running requests' reserved share falls.
      front_need = static_cast<double>(retract_admission_need(reqs[waiting.front()]));
      std::int64_t sum = 0;
      for (std::size_t i : running) sum += future_delta(reqs[i]);
      futures = static_cast<double>(sum);
      drift = static_cast<double>(count) * static_cast<double>(kv_.growth());
    }
    context /= count;  // the mean, rising by one a step
    double step_ms = 0;
    std::int64_t same_until = -1;  // the last context the step time holds for
    std::int64_t k = 0;
    for (; k < most; ++k) {
      if (k > 0) {
        if (!closed && waiting.empty()) {
          if (next < reqs.size() && reqs[next].a->time_ms <= t) break;  // one to admit
        } else {
          while (next < reqs.size() && reqs[next].a->time_ms <= t) waiting.push_back(next++);
          out_.max_waiting =
              std::max(out_.max_waiting, static_cast<std::int64_t>(waiting.size()));
        }
      }
      if (front && retract) {
        // admit()'s left side (in doubles, within 1e-9 of the exact sum) at least this.
        double least =
            front_need + ratio_ * std::max(0.0, futures - static_cast<double>(k) * drift);
        // SGLang still refuses at equality (admit()).
        if (!(least * (1 - 1e-9) >= static_cast<double>(free_))) break;
      }
      if (k == 0 && front) {
        request_state& f = reqs[waiting.front()];
        if (!f.waited_for_kv) ++out_.requests_waited_for_kv;
        f.waited_for_kv = true;
      }
      if (context + k > same_until) {
        step_ms = clock.ms(count, context + k, 0, 0);
        same_until = step_clock::same_time_until(context + k);
      }
      double start = t;
      t += step_ms;
      clock.count();
      if (static_cast<double>(++out_.steps) > step_bound)
        throw spec_error("requests", "the simulation stopped making progress (internal error)");
      itl.add(t - start, count);
      // schedule_apart's decode step, no retraction: the ratio falls.
      if (!cfg_.mixed_prefill) ratio_ = std::max(ratio_ - kRatioDecay, kRatioMin);
    }
    if (k == 0) return 0;
    for (std::size_t i : running) {
      request_state& r = reqs[i];
      r.computed += k;
      r.generated += k;
      allocate(r, r.computed);
      r.last_ms = t;
    }
    out_.output_tokens += k * count;
    out_.run_steps += k;
    return k;
  }

 private:
  /// KV bytes more that `r` needs to hold `tokens` tokens (0 within its blocks). TensorRT-LLM
  /// reserves the whole request at admission.
  std::int64_t need(const request_state& r, std::int64_t tokens) {
    if (cfg_.kv == kv_policy::reserve_whole) tokens = r.a->isl + r.a->osl;
    if (tokens <= r.room) return 0;
    return kv_.bytes(tokens) - r.held;
  }
  void allocate(request_state& r, std::int64_t tokens) {
    if (cfg_.kv == kv_policy::reserve_whole) tokens = r.a->isl + r.a->osl;
    if (tokens <= r.room) return;
    std::int64_t b = kv_.bytes(tokens);
    free_ -= b - r.held;
    queue_head_ += b - r.held;  // new blocks come from the front of the free queue
    r.held = b;
    r.room = kv_.room(tokens);
  }
  /// vLLM V1 frees a preempted request's blocks tail first to the end of the free queue, their
  /// hashes kept: they serve as prefix cache until allocations reach them, so a resume finds
  /// the blocks of its first tokens that were not yet reused (whole blocks, and never the last
  /// token, which it computes to sample).
  std::int64_t cached_tokens(const request_state& r) const { return cached_tokens(r, queue_head_); }
  /// The same when the free queue's front is at `head` (non-increasing in it).
  std::int64_t cached_tokens(const request_state& r, std::int64_t head) const {
    if (r.cache_bytes <= 0) return 0;
    std::int64_t evicted = std::clamp<std::int64_t>(head - r.cache_at, 0, r.cache_bytes);
    auto tokens = static_cast<std::int64_t>(static_cast<double>(r.cache_tokens) *
                                            static_cast<double>(r.cache_bytes - evicted) /
                                            static_cast<double>(r.cache_bytes));
    return std::max<std::int64_t>(
        0, kv_.whole(std::min(tokens, r.tokens() - 1)));
  }
  /// Takes a resumed request's cached blocks back out of the free queue.
  void take_cached(request_state& r, std::int64_t tokens) {
    r.cache_bytes = 0;
    if (tokens <= 0) return;
    std::int64_t b = kv_.bytes(tokens);
    free_ -= b;  // taken from where they sit: the queue's front stays put
    r.held = b;
    r.room = kv_.room(tokens);
    r.computed = tokens;
    out_.recomputed_tokens -= tokens;
  }
  /// The request loses its KV and will prefill its prompt and outputs again.
  void preempt(std::size_t i, bool to_front) {
    request_state& r = reqs[i];
    out_.recomputed_tokens += r.computed;  // less what a resume finds cached
    if (cfg_.preempted_kv_cached) {
      r.cache_at = queue_tail_;
      r.cache_bytes = r.held;
      r.cache_tokens = r.computed;
    }
    release(r);
    r.computed = 0;
    ++out_.preemptions;
    if (!r.preempted) ++out_.requests_preempted;
    r.preempted = true;
    if (to_front)
      waiting.push_front(i);
    else
      waiting.push_back(i);
  }
  /// Admits waiting requests while the budget, the request cap and the pool allow.
  void admit(std::int64_t& budget) {
    bool retract = cfg_.kv == kv_policy::retract;
    double reserve = retract ? retract_reserve() : 0;
    while (!waiting.empty() && budget > 0 &&
           static_cast<std::int64_t>(running.size()) < cfg_.max_num_seqs) {
      std::size_t i = waiting.front();
      request_state& r = reqs[i];
      // A resumed request's cached blocks count as its own (taken only if it is admitted).
      std::int64_t cached = cached_tokens(r);
      std::int64_t n = std::min(r.tokens() - std::max(r.computed, cached), budget);
      // vLLM and TensorRT-LLM ask for this step's chunk (TensorRT-LLM's need() is the whole
      // length); SGLang for the whole prompt and its outputs, whatever the chunk.
      std::int64_t asked =
          retract ? retract_admission_need(r) : admission_need(r, budget, queue_head_);
      // SGLang refuses at equality (`total_tokens >= rem_total_tokens`), vLLM only beyond
      // (allocate_slots fails when more blocks are asked than are free).
      double left = static_cast<double>(asked) + reserve;
      double room = static_cast<double>(free_);
      if (retract ? left >= room : left > room) {
        if (!r.waited_for_kv) ++out_.requests_waited_for_kv;
        r.waited_for_kv = true;
        return;
      }
      take_cached(r, cached);
      allocate(r, r.computed + n);
      // An admitted request's outputs stay reserved in full for the rest of this step's
      // admissions (its chunk is taken from the pool already); a truncated one ends them, the
      // budget spent.
      if (retract) reserve += static_cast<double>(future_delta(r));
      waiting.pop_front();
      running.push_back(i);
      chunks_.push_back({i, n});
      budget -= n;
    }
  }
  /// What SGLang's PrefillAdder.add_one_req asks of the pool for waiting request `r`
  /// (schedule_policy.py, total_tokens): its whole prompt still to prefill, not only the chunk
  /// this step can take (so a long prompt is admitted only when all its chunks will fit), plus
  /// all of its outputs still to write (at most 4096 counted, CLIP_MAX_NEW_TOKENS), before any
  /// new_token_ratio. `r` holds nothing while it waits; blocks a resume finds cached are in the
  /// free pool and count in its whole length.
  std::int64_t retract_admission_need(const request_state& r) {
    return need(r, r.tokens()) + future_delta(r);
  }
  /// What SGLang keeps back from the pool for the requests already running when admission
  /// starts (PrefillAdder's rem_total_token_offset): new_token_ratio of the outputs each decoding
  /// request has still to write (running_batch), all of those of a request whose prefill this
  /// step's chunk ends (add_chunked_req, not truncated), none for one still in its chunked
  /// prefill (the scheduler's chunked_req sits outside running_batch; its own admission asked
  /// for its whole prompt).
  double retract_reserve() {
    double reserve = 0;
    for (std::size_t i : running)
      if (reqs[i].decoding()) reserve += future_bytes(reqs[i]);
    for (const chunk& c : chunks_) {
      const request_state& r = reqs[c.r];
      if (!r.decoding() && r.computed + c.tokens >= r.tokens())
        reserve += static_cast<double>(future_delta(r));
    }
    return reserve;
  }
  /// The KV admit() asks of waiting request `r` under `budget` tokens when the free queue's front
  /// is at `head` (its own check, in one place for decode runs).
  std::int64_t admission_need(const request_state& r, std::int64_t budget, std::int64_t head) {
    // Prefill run apart goes first (SGLang's order): a request started on a chunk the pool
    // holds, but not on its whole prompt, would fill the pool with partial prefills that starve
    // every decode. Such an engine asks for the whole prompt, as SGLang does.
    if (!cfg_.mixed_prefill) return need(r, r.tokens());
    std::int64_t cached = cached_tokens(r, head);
    std::int64_t n = std::min(r.tokens() - std::max(r.computed, cached), budget);
    return need(r, std::max(r.computed, cached) + n);
  }
  /// The largest k in [0, hi] with `holds(k)`, for a condition true up to some k and false after
  /// (0 when it fails at 1).
  template <class F>
  static std::int64_t last_true(std::int64_t hi, F holds) {
    if (hi < 1 || holds(hi)) return std::max<std::int64_t>(hi, 0);
    std::int64_t lo = 0;  // holds(lo) (or lo = 0); !holds(hi)
    while (hi - lo > 1) {
      std::int64_t mid = lo + (hi - lo) / 2;
      (holds(mid) ? lo : hi) = mid;
    }
    return lo;
  }
  /// SGLang's estimate of the KV a request's remaining outputs will take: new_token_ratio of
  /// them (at most 4096 counted, CLIP_MAX_NEW_TOKENS_ESTIMATION).
  double future_bytes(const request_state& r) {
    return ratio_ * static_cast<double>(future_delta(r));
  }
  /// The KV those outputs take, all of them (before the ratio).
  std::int64_t future_delta(const request_state& r) {
    std::int64_t left = std::min<std::int64_t>(r.a->osl - r.generated, clip_new_tokens);
    if (left <= 0) return 0;
    std::int64_t now = std::max(r.tokens(), r.computed);
    return kv_.bytes(now + left) - kv_.bytes(now);
  }
  /// vLLM V1 and TensorRT-LLM: running requests first, in order, each its decode token or next
  /// chunk; when the pool cannot hold it, the newest running request is preempted (vLLM's
  /// running.pop()), and no waiting request is admitted in a step that preempted.
  void schedule_mixed() {
    std::int64_t budget = cfg_.max_num_batched_tokens;
    bool preempted = false;
    for (std::size_t j = 0; j < running.size() && budget > 0;) {
      std::size_t i = running[j];
      request_state& r = reqs[i];
      std::int64_t n = std::min(r.pending(), budget);
      bool fits = true;
      while (need(r, r.computed + n) > free_) {
        // Under reserve_whole a running request holds its whole length: never here.
        std::size_t victim = running.back();
        running.pop_back();
        preempt(victim, true);
        preempted = true;
        if (victim == i) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      allocate(r, r.computed + n);
      chunks_.push_back({i, n});
      budget -= n;
      ++j;
    }
    if (!preempted) admit(budget);
  }
  /// SGLang: a prefill batch (the chunked request's next chunk, then waiting requests) when one
  /// can be formed, else a decode step of every decoding request; when the pool cannot hold a
  /// token for each, it retracts the request with the fewest outputs (the longest prompt on a
  /// tie) until there is room for retract_decode_steps tokens each, or one is left.
  void schedule_apart() {
    std::int64_t budget = cfg_.max_num_batched_tokens;
    for (std::size_t i : running) {
      request_state& r = reqs[i];
      if (budget <= 0) break;
      if (r.generated > 0 && r.pending() == 1) continue;  // decoding
      std::int64_t n = std::min(r.pending(), budget);
      if (need(r, r.computed + n) > free_) break;
      allocate(r, r.computed + n);
      chunks_.push_back({i, n});
      budget -= n;
    }
    admit(budget);
    if (!chunks_.empty()) return;
    auto demand = [&](std::int64_t ahead) {
      std::int64_t sum = 0;
      for (std::size_t i : running)
        if (reqs[i].decoding()) sum += need(reqs[i], reqs[i].computed + ahead);
      return sum;
    };
    if (demand(1) > free_) {
      // Retract in SGLang's order until the rest have room for retract_decode_steps tokens
      // each (or one is left), then re-estimate new_token_ratio from the survivors' progress.
      // Only the decode batch is retracted: a request still in its chunked prefill is SGLang's
      // chunked_req, outside running_batch (scheduler.py), whatever its output count.
      constexpr std::int64_t retract_decode_steps = 20;  // SGLang's global_config default
      std::vector<std::size_t> order;
      for (std::size_t i : running)
        if (reqs[i].decoding()) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return retract_before(reqs[y], reqs[x]);  // the first to retract last
      });
      std::int64_t ahead = demand(retract_decode_steps);
      while (order.size() > 1 && ahead > free_) {
        std::size_t victim = order.back();
        order.pop_back();
        ahead -= need(reqs[victim], reqs[victim].computed + retract_decode_steps);
        std::erase(running, victim);
        preempt(victim, false);
      }
      double decoded = 0, asked = 1;
      for (std::size_t i : running) {
        decoded += static_cast<double>(reqs[i].generated + retract_decode_steps);
        asked += static_cast<double>(reqs[i].a->osl);
      }
      ratio_ = std::min(1.0, decoded / asked);
    } else {
      ratio_ = std::max(ratio_ - kRatioDecay, kRatioMin);
    }
    for (std::size_t i : running) {
      request_state& r = reqs[i];
      if (!r.decoding() || need(r, r.computed + 1) > free_) continue;
      allocate(r, r.computed + 1);
      chunks_.push_back({i, 1});
    }
    // Partial prefills holding the pool between them, none able to go on: retract until one
    // can (a request alone always fits: simulate checks it first).
    if (chunks_.empty() && running.size() > 1) {
      retract_one();
      schedule_apart();
    }
  }
  /// SGLang's retraction order: the fewest outputs first, then the longest prompt.
  static bool retract_before(const request_state& a, const request_state& b) {
    if (a.generated != b.generated) return a.generated < b.generated;
    return a.a->isl > b.a->isl;
  }
  void retract_one() {
    auto worst = std::min_element(
        running.begin(), running.end(),
        [&](std::size_t x, std::size_t y) { return retract_before(reqs[x], reqs[y]); });
    std::size_t victim = *worst;
    running.erase(worst);
    preempt(victim, false);
  }

  // SGLang's new_token_ratio: 0.7 at start, falling by (0.7 - 0.098) / 600 per decode step to
  // 0.098, reset from the survivors' progress after a retraction.
  static constexpr double kRatioInit = 0.7, kRatioMin = 0.7 * 0.14;
  static constexpr double kRatioDecay = (kRatioInit - kRatioMin) / 600;
  double ratio_ = kRatioInit;

  const batching_config& cfg_;
  kv_blocks& kv_;
  std::int64_t free_;
  // The free queue as positions in bytes: blocks are taken from the head and freed to the
  // tail; the pool starts as the never-used span [0, pool).
  std::int64_t queue_head_ = 0, queue_tail_;
  simulation& out_;
  std::vector<chunk> chunks_;
};

}  // namespace

std::vector<arrival> poisson_arrivals(double rate, std::int64_t requests, std::int64_t isl,
                                      std::int64_t osl, std::uint64_t seed) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw spec_error("rate", "must be a positive number of requests per second");
  if (rate > 1e7) throw spec_error("rate", fmt::format("{} requests/s is beyond 10^7", rate));
  if (requests < 1 || requests > 1'000'000)
    throw spec_error("requests", "must be between 1 and 1,000,000");
  // The clock is a double of ms: past 10^12 ms (a trace's arrival_ms limit) it no longer keeps
  // a step's microseconds, and a rate too small to be a number of ms apart gives infinite gaps.
  double span_s = static_cast<double>(requests) / rate;
  if (span_s > 1e9)
    throw spec_error("rate", fmt::format("{} requests at {} requests/s arrive over {:.3g} s, beyond "
                                         "the 10^9 s a simulation keeps to the microsecond; "
                                         "raise --rate or lower --requests",
                                         requests, rate, span_s));
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> gap(rate / 1e3);  // per ms
  std::vector<arrival> out;
  double t = 0;
  for (std::int64_t i = 0; i < requests; ++i) {
    out.push_back({t, isl, osl});
    t += gap(gen);
  }
  return out;
}

std::vector<arrival> read_trace(const std::string& path) {
  // A folder opens as a stream that reads nothing: "no requests" would hide the mistake.
  if (std::filesystem::is_directory(path))
    throw spec_error(source_location{path, 0, 0}, "trace", "is a folder, not a file");
  std::ifstream in(path);
  if (!in) throw spec_error(source_location{path, 0, 0}, "trace", "cannot open the file");
  std::vector<arrival> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    source_location at{path, n, 1};
    nlohmann::json j;
    std::optional<std::string> repeated;
    try {
      j = parse_json_distinct(line, repeated);
    } catch (const nlohmann::json::exception&) {
      throw spec_error(at, "line", "not a JSON object");
    }
    if (repeated)
      throw spec_error(at, *repeated, "given twice; the first would be silently ignored");
    if (!j.is_object()) throw spec_error(at, "line", "not a JSON object");
    auto field = [&](const char* key, double min) {
      if (!j.contains(key) || !j[key].is_number())
        throw spec_error(at, key, "missing or not a number");
      double v = j[key].get<double>();
      if (!std::isfinite(v) || v < min)
        throw spec_error(at, key, fmt::format("must be a number >= {}", min));
      return v;
    };
    // A token count is whole: 10.5 tokens is a broken trace, not 10 tokens.
    auto tokens = [&](const char* key) {
      double v = field(key, 1);
      if (v > static_cast<double>(limits::tokens))
        throw spec_error(at, key,
                         fmt::format("{} is more than the limit of {} tokens", v, limits::tokens));
      if (v != std::floor(v))
        throw spec_error(at, key, fmt::format("{} is not a whole number of tokens", v));
      return static_cast<std::int64_t>(v);
    };
    auto milliseconds = [&](const char* key) {
      double v = field(key, 0);
      if (v > 1e12)
        throw spec_error(at, key, fmt::format("{} ms is more than the limit of 1e12", v));
      return v;
    };
    arrival a;
    a.time_ms = milliseconds("arrival_ms");
    a.isl = tokens("input_tokens");
    a.osl = tokens("output_tokens");
    a.line = n;
    out.push_back(a);
  }
  if (out.empty()) throw spec_error(source_location{path, n, 1}, "trace", "no requests");
  if (out.size() > 1'000'000)
    throw spec_error(source_location{path, n, 1}, "trace", "more than 1,000,000 requests");
  return out;
}

void draw_lengths(std::vector<arrival>& requests, double range_ratio, std::uint64_t seed) {
  if (!(range_ratio > 0 && range_ratio <= 1))
    throw spec_error("range_ratio",
                     "must be a fraction in (0, 1]: lengths are drawn between "
                     "ratio x the given ones and the given ones");
  if (range_ratio == 1) return;
  std::mt19937_64 gen(seed);
  auto draw = [&](std::int64_t n) {
    auto low = static_cast<std::int64_t>(std::floor(range_ratio * static_cast<double>(n)));
    return std::uniform_int_distribution<std::int64_t>(std::max<std::int64_t>(1, low), n)(gen);
  };
  for (arrival& a : requests) {
    a.isl = draw(a.isl);
    a.osl = draw(a.osl);
  }
}

namespace {

simulation run_simulation(const deployment& d, const batching_config& given, const coefficients& k,
                          std::vector<arrival> arrivals, simulation_path path,
                          std::int64_t clients) {
  const batching_config cfg = per_attention_group(given, d.layout.dp);
  if (arrivals.empty()) throw spec_error("requests", "no requests to simulate");
  if (cfg.max_num_batched_tokens < 1)
    throw spec_error("max_num_batched_tokens", "must be at least 1");
  if (cfg.max_num_seqs < 1) throw spec_error("max_num_seqs", "must be at least 1");
  if (cfg.kv_block_tokens < 1) throw spec_error("kv_block_tokens", "must be at least 1");
  std::int64_t groups = d.layout.dp;
  if (clients > 0) {
    // Each group's first `clients` requests open the run; the others are sent as requests
    // finish (below), in order, so that the arrivals stay sorted by time.
    for (std::size_t i = 0; i < arrivals.size(); ++i)
      arrivals[i].time_ms = static_cast<std::int64_t>(i) < clients * groups
                                ? 0
                                : std::numeric_limits<double>::infinity();
  } else {
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [](const arrival& a, const arrival& b) { return a.time_ms < b.time_ms; });
  }
  simulation out;
  out.requests = static_cast<std::int64_t>(arrivals.size());
  // Each step touches every running request: bound the work so that no input runs for minutes.
  double token_steps = 0, prefill_steps = 0;
  for (const arrival& a : arrivals) {
    if (a.isl < 1) throw spec_error("input_tokens", "a request needs at least one input token");
    if (a.osl < 1) throw spec_error("output_tokens", "a request returns at least one token");
    token_steps += static_cast<double>(a.osl);
    prefill_steps += static_cast<double>(a.isl) / static_cast<double>(cfg.max_num_batched_tokens);
  }
  if (token_steps > 2e8)
    throw spec_error("requests", fmt::format("{:.3g} output tokens to simulate is more than the "
                                               "limit of 2e8; simulate fewer requests",
                                               token_steps));
  if (prefill_steps > 1e7)
    throw spec_error("max_num_batched_tokens",
                     fmt::format("{:.3g} prefill steps to simulate is more than the limit of 1e7; "
                                 "raise the token budget or simulate fewer requests",
                                 prefill_steps));
  // The pool is sized by the instance's knobs, before their split over attention-DP groups.
  kv_pool_terms terms = kv_pool(d, given);
  double pool = terms.pool;
  if (pool <= 0) refuse_empty_pool(terms, d, "gpu", "; use more ranks");
  out.kv_pool_bytes = pool;
  auto pool_bytes = static_cast<std::int64_t>(std::min(pool, 9e18));
  bool runs = path == simulation_path::runs;
  kv_blocks kv(d, cfg.kv_block_tokens, !runs);
  // A request the pool cannot hold even alone would be preempted forever: engines refuse it
  // (vLLM checks max_model_len against the pool at start-up), and so does calc.
  {
    std::size_t longest = 0;
    for (std::size_t i = 1; i < arrivals.size(); ++i)
      if (arrivals[i].isl + arrivals[i].osl > arrivals[longest].isl + arrivals[longest].osl)
        longest = i;
    const arrival& a = arrivals[longest];
    std::int64_t need = kv.bytes(a.isl + a.osl);
    // SGLang's ask, its prompt and at most clip_new_tokens outputs, must stay below what is
    // free (admit()), else it would wait for ever in an empty engine.
    std::int64_t ask = kv.bytes(a.isl + std::min(a.osl, clip_new_tokens));
    if (need > pool_bytes || (cfg.kv == kv_policy::retract && ask >= pool_bytes))
      throw request_refused(
          fmt::format("a request of {} + {} tokens needs {:.2f} GB of KV per rank and the pool "
                      "holds {:.2f} GB; the engine would refuse it",
                      a.isl, a.osl, static_cast<double>(need) / 1e9, pool / 1e9),
          a.line);
  }
  weighted_samples ttft, tpot, itl, e2e;
  step_clock clock(d, k);
  // A closed loop's clients send their first requests request_latency_ms before the engine
  // sees them: its duration, and so its throughput, is from those sends.
  double first = arrivals.front().time_ms, last = first;
  if (clients > 0) first -= k.request_latency_ms;
  // A run that has not finished in this many steps has stopped making progress (a bug, not an
  // input): say so rather than spin.
  double step_bound =
      4 * (token_steps + prefill_steps) + 8 * static_cast<double>(out.requests) + 1e4;
  for (std::int64_t grp = 0; grp < groups; ++grp) {
    engine_group e(cfg, kv, pool_bytes, out);
    for (std::size_t i = static_cast<std::size_t>(grp); i < arrivals.size();
         i += static_cast<std::size_t>(groups))
      e.reqs.push_back({&arrivals[i]});
    if (e.reqs.empty()) continue;
    std::size_t next = 0;  // the next arrival to join the queue
    std::size_t finished = 0;
    // A closed loop's next request to send, and the arrival it is.
    auto sent = static_cast<std::size_t>(
        std::min<std::int64_t>(clients, static_cast<std::int64_t>(e.reqs.size())));
    auto send_next = [&](double at) {
      if (clients <= 0 || sent >= e.reqs.size()) return;
      arrivals[static_cast<std::size_t>(grp) + sent * static_cast<std::size_t>(groups)].time_ms =
          at;
      ++sent;
    };
    double t = e.reqs.front().a->time_ms;
    while (finished < e.reqs.size()) {
      while (next < e.reqs.size() && e.reqs[next].a->time_ms <= t) e.waiting.push_back(next++);
      out.max_waiting = std::max(out.max_waiting, static_cast<std::int64_t>(e.waiting.size()));
      if (runs && e.decode_run(t, next, clock, itl, step_bound) > 0) continue;
      const auto& chunks = e.schedule();
      if (chunks.empty()) {
        // Nothing to run and nothing to arrive (a closed loop's unsent requests are at +inf).
        if (next >= e.reqs.size() || !std::isfinite(e.reqs[next].a->time_ms))
          throw spec_error("requests", "the simulation stopped making progress (internal error)");
        t = std::max(t, e.reqs[next].a->time_ms);  // idle until the next arrival
        continue;
      }
      // The step's shape: decode tokens and their mean context, prefill tokens.
      std::int64_t decoding = 0, context = 0, prefill = 0, prefill_context = 0;
      for (const auto& c : chunks) {
        const request_state& r = e.reqs[c.r];
        if (r.generated > 0 && c.tokens == 1 && r.pending() == 1) {
          ++decoding;
          context += r.computed;
        } else {
          if (prefill == 0) prefill_context = r.computed;
          prefill += c.tokens;
        }
      }
      double start = t;
      t += clock.ms(decoding, decoding ? context / decoding : 0, prefill, prefill_context);
      clock.count();
      if (static_cast<double>(++out.steps) > step_bound)
        throw spec_error("requests", "the simulation stopped making progress (internal error)");
      std::int64_t regular = 0;  // tokens one step after the request's last: a gap of one step
      for (const auto& c : chunks) {
        request_state& r = e.reqs[c.r];
        r.computed += c.tokens;
        if (r.computed < r.tokens()) continue;  // a prefill chunk short of the end
        ++r.generated;
        ++out.output_tokens;
        if (r.generated == 1) {
          r.first_ms = t;
          ttft.add(t - r.a->time_ms + k.request_latency_ms);
        } else if (r.last_ms == start) {
          ++regular;
        } else {
          itl.add(t - r.last_ms);  // stalled: behind prefills, or preempted and recomputed
        }
        r.last_ms = t;
        if (r.generated == r.a->osl) {
          r.done = true;
          ++finished;
          e.release(r);
          e2e.add(t - r.a->time_ms + k.request_latency_ms);
          if (r.a->osl > 1) tpot.add((t - r.first_ms) / static_cast<double>(r.a->osl - 1));
          last = std::max(last, t);
          send_next(t + k.request_latency_ms);
        }
      }
      itl.add(t - start, regular);
      std::erase_if(e.running, [&](std::size_t i) { return e.reqs[i].done; });
    }
  }
  out.itl_gaps = itl.count();
  out.step = clock.mean();
  out.ttft = ttft.summary();
  out.tpot = tpot.summary();
  out.itl = itl.summary();
  out.e2e = e2e.summary();
  out.duration_ms = last - first;
  if (out.duration_ms > 0) {
    out.requests_per_s = static_cast<double>(out.requests) / out.duration_ms * 1e3;
    out.output_tokens_per_s = static_cast<double>(out.output_tokens) / out.duration_ms * 1e3;
  }
  return out;
}

}  // namespace

simulation simulate(const deployment& d, const batching_config& cfg, const coefficients& k,
                    std::vector<arrival> arrivals, simulation_path path) {
  return run_simulation(d, cfg, k, std::move(arrivals), path, 0);
}

simulation simulate_clients(const deployment& d, const batching_config& cfg, const coefficients& k,
                            std::int64_t clients, std::vector<arrival> requests,
                            simulation_path path) {
  if (clients < 1) throw spec_error("concurrency", "must be at least 1");
  return run_simulation(d, cfg, k, std::move(requests), path, clients);
}

latency_stats steady_itl(const scenario& s, const steady_state& st, const coefficients& k) {
  latency_stats out{st.tpot_ms, st.tpot_ms, st.tpot_ms, st.tpot_ms, st.tpot_ms};
  double t_d = time_step(s.d, s.decode, k).total_ms;
  double stall = s.cfg.mixed_prefill ? std::max(time_step(s.d, s.mixed, k).total_ms - t_d, 0.0)
                                     : time_step(s.d, s.prefill, k).total_ms;
  double base = st.tpot_ms * (1 - st.prefill_busy);
  if (!(stall > 0) || !(st.prefill_busy > 0)) return out;
  double m = (st.tpot_ms - base) / stall;  // chunk stalls per gap, on average
  double lo = std::floor(m);
  double share = m - lo;  // gaps with lo + 1 stalls
  double a = base + lo * stall, b = a + stall;
  auto at = [&](double q) { return q <= 1 - share ? a : b; };
  out.p50 = at(0.5);
  out.p90 = at(0.9);
  out.p99 = at(0.99);
  out.max = share > 0 ? b : a;
  return out;
}

}  // namespace calc::serve
