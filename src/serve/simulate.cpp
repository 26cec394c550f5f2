#include "serve/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "common/error.h"
#include "common/limits.h"
#include "tally/tally.h"

namespace calc::serve {

namespace {

latency_stats summary(std::vector<double> v) {
  latency_stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto at = [&](double q) {
    auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())) - 1);
    return v[std::min(i, v.size() - 1)];
  };
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  return s;
}

struct live {
  const arrival* a = nullptr;
  std::int64_t prefilled = 0;  // prompt tokens processed
  std::int64_t generated = 0;  // output tokens returned
  double first_ms = 0, last_ms = 0;
};

/// Step times memoised by shape (rounded as below), so a 10,000-request run tallies a few
/// hundred shapes rather than every step.
class step_clock {
 public:
  step_clock(const deployment& d, const coefficients& k) : d_(d), k_(k) {}
  double ms(std::int64_t decode, std::int64_t context, std::int64_t prefill,
            std::int64_t prefill_context) {
    auto round = [](std::int64_t v, std::int64_t q) { return (v + q / 2) / q * q; };
    // Step time is smooth in each: the decode count exact up to 32, then within 4 requests
    // (1/8 at worst) and 16 past 256; contexts within 512 tokens, prefill chunks within 128.
    std::int64_t b = decode <= 32 ? decode : decode <= 256 ? round(decode, 8) : round(decode, 32);
    std::int64_t p = prefill <= 0    ? 0
                     : prefill < 256 ? std::max<std::int64_t>(32, round(prefill, 32))
                                     : round(prefill, 256);
    step_shape s{b, round(context, 1024), p, round(prefill_context, 1024)};
    auto key = std::make_tuple(s.decode, s.decode_context, s.prefill, s.prefill_context);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    double t = time_step(d_, cost_step(d_, s), k_).total_ms;
    memo_.emplace(key, t);
    return t;
  }

 private:
  const deployment& d_;
  const coefficients& k_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, double> memo_;
};

}  // namespace

std::vector<arrival> poisson_arrivals(double rate, std::int64_t requests, std::int64_t isl,
                                      std::int64_t osl, std::uint64_t seed) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw spec_error("rate", "must be a positive number of requests per second");
  if (rate > 1e7) throw spec_error("rate", fmt::format("{} requests/s is beyond 10^7", rate));
  if (requests < 1 || requests > 1'000'000)
    throw spec_error("requests", "must be between 1 and 1,000,000");
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
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw spec_error(at, "line", "not a JSON object");
    }
    if (!j.is_object()) throw spec_error(at, "line", "not a JSON object");
    auto field = [&](const char* key, double min) {
      if (!j.contains(key) || !j[key].is_number())
        throw spec_error(at, key, "missing or not a number");
      double v = j[key].get<double>();
      if (!std::isfinite(v) || v < min || v > 1e12)
        throw spec_error(at, key, fmt::format("must be a number >= {}", min));
      return v;
    };
    arrival a;
    a.time_ms = field("arrival_ms", 0);
    a.isl = static_cast<std::int64_t>(field("input_tokens", 1));
    a.osl = static_cast<std::int64_t>(field("output_tokens", 1));
    if (a.isl > limits::tokens || a.osl > limits::tokens)
      throw spec_error(at, "input_tokens", "beyond the supported tokens");
    out.push_back(a);
  }
  if (out.empty()) throw spec_error(source_location{path, n, 1}, "trace", "no requests");
  if (out.size() > 1'000'000)
    throw spec_error(source_location{path, n, 1}, "trace", "more than 1,000,000 requests");
  return out;
}

simulation simulate(const deployment& d, const batching_config& cfg, const coefficients& k,
                    std::vector<arrival> arrivals) {
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const arrival& a, const arrival& b) { return a.time_ms < b.time_ms; });
  simulation out;
  out.requests = static_cast<std::int64_t>(arrivals.size());
  // Each step touches every running request: bound the work so that no input runs for minutes.
  double token_steps = 0;
  for (const arrival& a : arrivals) token_steps += static_cast<double>(a.osl);
  if (token_steps > 2e8)
    throw spec_error("requests", fmt::format("{:.3g} output tokens to simulate is more than the "
                                               "limit of 2e8; simulate fewer requests",
                                               token_steps));
  std::vector<double> ttft, tpot, itl, e2e;
  // KV pool of a rank in requests of the workload's mean final length.
  double mean_len = 0;
  for (const arrival& a : arrivals) mean_len += static_cast<double>(a.isl + a.osl);
  mean_len /= static_cast<double>(arrivals.size());
  double memory = static_cast<double>(d.gpu.memory);
  double pool = cfg.fraction_of_free ? (memory - d.weight_bytes_per_rank) * cfg.memory_fraction
                                     : memory * cfg.memory_fraction - d.weight_bytes_per_rank;
  double per_request = tally_state(*d.g, static_cast<std::int64_t>(mean_len)).total.to_double() *
                       d.kv_share / static_cast<double>(d.layout.pp);
  if (pool <= 0) throw spec_error("gpu", "the weights do not fit in the engine's memory");
  std::int64_t kv_cap = per_request > 0
                            ? static_cast<std::int64_t>(std::min(pool / per_request, 1e9))
                            : 1'000'000'000;
  std::int64_t cap = std::max<std::int64_t>(1, std::min(cfg.max_num_seqs, kv_cap));
  step_clock clock(d, k);
  double first = arrivals.front().time_ms, last = first;
  std::int64_t groups = d.layout.dp;
  for (std::int64_t grp = 0; grp < groups; ++grp) {
    std::deque<const arrival*> pending;
    for (std::size_t i = static_cast<std::size_t>(grp); i < arrivals.size();
         i += static_cast<std::size_t>(groups))
      pending.push_back(&arrivals[i]);
    std::deque<const arrival*> waiting;
    std::vector<live> running;
    double t = pending.empty() ? 0 : pending.front()->time_ms;
    while (!pending.empty() || !waiting.empty() || !running.empty()) {
      while (!pending.empty() && pending.front()->time_ms <= t) {
        waiting.push_back(pending.front());
        pending.pop_front();
      }
      out.max_waiting = std::max(out.max_waiting, static_cast<std::int64_t>(waiting.size()));
      while (!waiting.empty() && static_cast<std::int64_t>(running.size()) < cap) {
        running.push_back({waiting.front()});
        waiting.pop_front();
      }
      if (!waiting.empty() && kv_cap < cfg.max_num_seqs) out.kv_limited = true;
      if (running.empty()) {
        t = pending.front()->time_ms;
        continue;
      }
      // This step: every decoding request's token, and prefill chunks under the budget.
      std::int64_t decoding = 0;
      double context = 0;
      for (const live& r : running)
        if (r.prefilled == r.a->isl) {
          ++decoding;
          context += static_cast<double>(r.a->isl + r.generated);
        }
      bool prefill_waiting = std::any_of(running.begin(), running.end(),
                                         [](const live& r) { return r.prefilled < r.a->isl; });
      bool decode_now = cfg.mixed_prefill || !prefill_waiting;
      std::int64_t budget = cfg.max_num_batched_tokens - (decode_now ? decoding : 0);
      std::int64_t prefill = 0, prefill_context = 0;
      std::vector<std::pair<live*, std::int64_t>> chunks;
      for (live& r : running) {
        if (budget <= 0) break;
        if (r.prefilled >= r.a->isl) continue;
        std::int64_t take = std::min(budget, r.a->isl - r.prefilled);
        if (prefill == 0) prefill_context = r.prefilled;
        chunks.emplace_back(&r, take);
        prefill += take;
        budget -= take;
      }
      if (!decode_now) decoding = 0;
      double dt =
          clock.ms(decoding,
                   decoding ? static_cast<std::int64_t>(
                                  context / static_cast<double>(decoding + (decode_now ? 0 : 1)))
                            : 0,
                   prefill, prefill_context);
      t += dt;
      ++out.steps;
      for (auto& [r, take] : chunks) {
        r->prefilled += take;
        if (r->prefilled == r->a->isl) {  // the prefill's last chunk returns the first token
          r->generated = 1;
          r->first_ms = r->last_ms = t;
          ttft.push_back(t - r->a->time_ms + k.request_latency_ms);
        }
      }
      if (decode_now) {
        for (live& r : running) {
          if (r.prefilled < r.a->isl || r.last_ms == t) continue;
          itl.push_back(t - r.last_ms);
          r.last_ms = t;
          ++r.generated;
        }
      }
      for (std::size_t i = 0; i < running.size();) {
        live& r = running[i];
        if (r.prefilled == r.a->isl && r.generated >= r.a->osl) {
          e2e.push_back(r.last_ms - r.a->time_ms + k.request_latency_ms);
          if (r.a->osl > 1)
            tpot.push_back((r.last_ms - r.first_ms) / static_cast<double>(r.a->osl - 1));
          last = std::max(last, r.last_ms);
          running[i] = running.back();
          running.pop_back();
        } else {
          ++i;
        }
      }
    }
  }
  out.ttft = summary(ttft);
  out.tpot = summary(tpot);
  out.itl = summary(itl);
  out.e2e = summary(e2e);
  out.duration_ms = last - first;
  double tokens = 0;
  for (const arrival& a : arrivals) tokens += static_cast<double>(a.osl);
  if (out.duration_ms > 0) {
    out.requests_per_s = static_cast<double>(out.requests) / out.duration_ms * 1e3;
    out.output_tokens_per_s = tokens / out.duration_ms * 1e3;
  }
  return out;
}

}  // namespace calc::serve
