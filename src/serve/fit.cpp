#include "serve/fit.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "common/error.h"

namespace calc::serve {

namespace {

using vec = Eigen::VectorXd;
constexpr std::size_t P = coefficients::size;

/// Unconstrained parameters: logit of an efficiency (kept below 1) or of a bounded coefficient
/// over its bound, log of a time.
vec to_free(const coefficients& k) {
  auto v = k.values();
  vec u(P);
  for (std::size_t i = 0; i < P; ++i) {
    double most = coefficients::upper_bound(i);
    if (std::isfinite(most)) {
      double e = std::clamp(v[i] / most, 1e-4, 0.9999);
      u[static_cast<Eigen::Index>(i)] = std::log(e / (1 - e));
    } else {
      u[static_cast<Eigen::Index>(i)] = std::log(std::max(v[i], 1e-6));
    }
  }
  return u;
}

coefficients from_free(const vec& u) {
  std::array<double, P> v{};
  for (std::size_t i = 0; i < P; ++i) {
    double x = u[static_cast<Eigen::Index>(i)];
    double most = coefficients::upper_bound(i);
    v[i] = std::isfinite(most) ? most / (1 + std::exp(-x)) : std::exp(std::clamp(x, -30.0, 30.0));
  }
  coefficients k;
  k.set(v);
  return k;
}

/// Cauchy loss as a residual: least squares on robust(r) minimises sum log(1 + (r/c)^2), so a
/// row the physics cannot describe (an odd layout, a noisy run) pulls the fit by at most a
/// bounded amount and the bulk of the rows decides. c = 0.15 (errors up to ~15 % count fully)
/// gave the lowest in-sample medians of 0.05-0.3 tried (docs/validation/latency.md).
double robust(double r) {
  constexpr double c = 0.15;
  double v = c * std::sqrt(std::log1p((r / c) * (r / c)));
  return r < 0 ? -v : v;
}

/// Weight of a row's TTFT residual against its TPOT one. TTFT scatters more (queueing, runs that
/// disagree), so at weight 1 the Cauchy loss lets the rows 20-40 % off, which decide its median,
/// count for little. With the family pull 3: weights 1 / 1.25 / 1.5 / 2 gave in-sample TTFT
/// 24.3 / 24.1 / 23.7 / 23.5 %, in-sample TPOT 9.9 / 9.9 / 9.9 / 9.9 %, leave-one-model-out TPOT
/// 18.9 / 18.8 / 19.3 / 19.9 % (docs/validation/latency.md). Differences of a few tenths are
/// within what the fit's local optimum moves by when the parameter set changes.
constexpr double kTtftWeight = 1.25;

/// The coefficients of routed experts: a group's rows say something about them only when they
/// hold MoE models.
bool moe_coefficient(std::string_view key) {
  return key == "moe_compute" || key == "moe_memory" || key == "moe_layer_latency_us";
}

/// Robust log ratios predicted / measured for TPOT and TTFT of every row, then the prior terms.
/// `moe_fitted`: whether the MoE coefficients move (else they keep the prior: see fit_group).
vec residuals(const std::vector<const mapped_row*>& rows, const vec& u, const vec& prior,
              double prior_weight, bool moe_fitted) {
  coefficients k = from_free(u);
  vec r(static_cast<Eigen::Index>(2 * rows.size() + P));
  Eigen::Index i = 0;
  for (const mapped_row* m : rows) {
    steady_state s = solve_steady_state(*m->s, k);
    r[i++] = robust(std::log(s.tpot_ms / m->tpot_ms));
    r[i++] = kTtftWeight * robust(std::log(s.ttft_ms / m->ttft_ms));
  }
  for (std::size_t j = 0; j < P; ++j, ++i) {
    auto jj = static_cast<Eigen::Index>(j);
    // What happens before a request's first step (API server, burst, cohorts) belongs to the
    // engine and the benchmark, not to the GPU: it keeps the weak prior in every group.
    std::string_view key = coefficients::key(j);
    bool scheduling = key == "request_latency_ms" || key == "burst_share" || key == "cohort_share";
    double w = scheduling ? std::min(prior_weight, 0.3) : prior_weight;
    if (!moe_fitted && moe_coefficient(key)) w = 1e3;  // held at the prior
    r[i] = w * (u[jj] - prior[jj]);
  }
  return r;
}

coefficients fit_group(const std::vector<const mapped_row*>& rows, const coefficients& start,
                       double prior_weight = 0.3) {
  vec prior = to_free(start);
  vec u = prior;
  // A group whose MoE rows come from one model would fit the MoE coefficients to that model's
  // expert shapes and runs (vLLM without gpt-oss-120b has 19 rows of one Qwen3-235B series):
  // they move only where two MoE models or more inform them, else keep the wider group's values.
  std::set<std::string> moe_models;
  for (const mapped_row* m : rows)
    if (m->s->d.moe_layers > 0) moe_models.insert(m->model);
  bool moe_fitted = moe_models.size() >= 2;
  vec r = residuals(rows, u, prior, prior_weight, moe_fitted);
  double cost = r.squaredNorm();
  double mu = 1e-2;
  for (int iter = 0; iter < 40; ++iter) {
    Eigen::MatrixXd J(r.size(), static_cast<Eigen::Index>(P));
    const double h = 1e-4;
    for (std::size_t j = 0; j < P; ++j) {
      vec up = u;
      up[static_cast<Eigen::Index>(j)] += h;
      J.col(static_cast<Eigen::Index>(j)) =
          (residuals(rows, up, prior, prior_weight, moe_fitted) - r) / h;
    }
    Eigen::MatrixXd A = J.transpose() * J;
    vec g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      Eigen::MatrixXd D = A;
      D.diagonal() += mu * (A.diagonal().array() + 1e-9).matrix();
      vec step = D.ldlt().solve(-g);
      vec next = u + step;
      vec rn = residuals(rows, next, prior, prior_weight, moe_fitted);
      double c = rn.squaredNorm();
      if (std::isfinite(c) && c < cost) {
        improved = true;
        bool small = cost - c < 1e-7 * cost;
        u = next;
        r = rn;
        cost = c;
        mu = std::max(mu / 3, 1e-7);
        if (small) iter = 1000;
      } else {
        mu *= 4;
      }
    }
    if (!improved) break;
  }
  return from_free(u);
}

error_stats stats(const std::vector<const row_prediction*>& ps) {
  error_stats s;
  std::vector<double> t, f;
  for (const row_prediction* p : ps) {
    t.push_back(100 * std::abs(p->tpot_ms / p->row->tpot_ms - 1));
    f.push_back(100 * std::abs(p->ttft_ms / p->row->ttft_ms - 1));
  }
  s.rows = static_cast<std::int64_t>(ps.size());
  s.tpot_median = quantile(t, 0.5);
  s.tpot_p90 = quantile(t, 0.9);
  s.ttft_median = quantile(f, 0.5);
  s.ttft_p90 = quantile(f, 0.9);
  return s;
}

/// The coefficients of every group fitted to rows costed under one expert popularity.
calibration fit_coefficients(const std::vector<mapped_row>& rows, const calibration& base,
                             const std::string& source, std::int64_t min_rows) {
  calibration out;
  out.source = source;
  out.families = base.families;
  out.models = base.models;
  out.systems = base.systems;
  out.clients = base.clients;
  out.clients_given = base.clients_given;
  std::map<std::pair<std::string, std::string>, std::vector<const mapped_row*>> groups;
  for (const mapped_row& m : rows) {
    if (!usable(m)) continue;
    groups[{m.family, m.engine}].push_back(&m);
    groups[{"any", m.engine}].push_back(&m);
    groups[{"any", "any"}].push_back(&m);
  }
  // Pooled rows first: they start (and regularise) the narrower fits.
  // Start from the built-in priors, not from `base`'s entries: a refit of the same rows gives the
  // same table whatever calibration is current.
  coefficients start;
  if (auto it = groups.find({"any", "any"}); it != groups.end())
    start = fit_group(it->second, start);
  out.entries.push_back(
      {"any", "any", start, static_cast<std::int64_t>(groups[{"any", "any"}].size()), source});
  std::set<std::string> engines_seen;
  for (const auto& [key, members] : groups)
    if (key.first == "any" && key.second != "any") {
      coefficients k = fit_group(members, start);
      out.entries.push_back(
          {"any", key.second, k, static_cast<std::int64_t>(members.size()), source});
    }
  for (const auto& [key, members] : groups) {
    if (key.first == "any" || static_cast<std::int64_t>(members.size()) < min_rows) continue;
    // A family's rows come from few GPUs and models: pulled weakly, its hardware coefficients
    // would learn those models rather than the GPUs, and predict a GPU the file lacks worse.
    // Weights 0.3 / 1 / 3 toward the engine's pooled fit gave leave-one-GPU-out TPOT 15.8 /
    // 15.2 / 14.3 %, leave-one-model-out 22.8 / 19.3 / 18.2 %, in-sample TTFT 23.2 / 26.3 /
    // 26.9 %; with the decode batch sized by Little's law (serve/batching.cpp) 1.5 / 2 / 3 gave
    // in-sample TPOT 9.8 / 10.0 / 10.1 %, the only one meeting 10 % being 1.5. With
    // moe_layer_latency_us, the KV pool at its mean occupancy and TTFT weighted 1.25, weights
    // 3 / 4 gave in-sample TPOT 9.9 / 10.0 %, leave one GPU out 14.1 / 14.1 %, leave one model
    // out 18.8 / 18.8 %, and 1.5 (TTFT weighted 1) leave one GPU out 14.7 %, one model out
    // 19.6 % (docs/validation/latency.md).
    constexpr double kFamilyPrior = 3;
    coefficients k = fit_group(members, out.lookup("any", key.second), kFamilyPrior);
    out.entries.push_back(
        {key.first, key.second, k, static_cast<std::int64_t>(members.size()), source});
  }
  return out;
}

/// What the fit minimises, over every usable row as the table predicts it (each row by the entry
/// lookup gives it): the squared robust log ratios of TPOT and weighted TTFT.
double table_loss(const std::vector<mapped_row>& rows, const calibration& c) {
  double loss = 0;
  for (const mapped_row& m : rows) {
    if (!usable(m)) continue;
    steady_state s = solve_steady_state(*m.s, c.lookup(m.family, m.engine));
    double t = robust(std::log(s.tpot_ms / m.tpot_ms));
    double f = kTtftWeight * robust(std::log(s.ttft_ms / m.ttft_ms));
    loss += t * t + f * f;
  }
  return loss;
}

}  // namespace

bool usable(const mapped_row& m) { return m.s && m.ttft_ms > 0 && m.tpot_ms > 0; }

calibration fit_calibration(const std::vector<mapped_row>& rows, const calibration& base,
                            const std::string& source, std::int64_t min_rows) {
  // The expert popularity changes which experts a step reads, so the rows' steps are costed
  // again for each exponent tried, and every group refitted: a 1-D search over [0, 1] (steps of
  // 0.5, then 0.25 and 0.125 around the best) for the exponent whose fit leaves the least loss
  // on these rows. Rows without experts do not see it: a set of them keeps the built-in prior.
  bool moe = std::any_of(rows.begin(), rows.end(), [](const mapped_row& m) {
    return usable(m) && m.s->d.forms.experts != nullptr;
  });
  if (!moe) {
    calibration out = fit_coefficients(rows, base, source, min_rows);
    out.set_expert_popularity(coefficients{}.expert_zipf_s,
                              "built-in prior: the rows hold no mixture-of-experts model");
    return out;
  }
  std::map<double, std::pair<calibration, double>> tried;  // exponent -> table, loss
  auto at = [&](double s) {
    if (s < 0 || s > coefficients::max_expert_zipf_s || tried.count(s)) return;
    std::vector<mapped_row> costed = at_expert_popularity(rows, s);
    calibration c = fit_coefficients(costed, base, source, min_rows);
    c.set_expert_popularity(s, "");
    double loss = table_loss(costed, c);
    tried.emplace(s, std::make_pair(std::move(c), loss));
  };
  auto best = [&] {
    return std::min_element(tried.begin(), tried.end(), [](const auto& a, const auto& b) {
             return a.second.second < b.second.second;
           })->first;
  };
  for (double s = 0; s <= coefficients::max_expert_zipf_s; s += 0.5) at(s);
  for (double step : {0.25, 0.125}) {
    double b = best();
    at(b - step);
    at(b + step);
  }
  double s = best();
  std::string why = fmt::format(
      "calc calibrate: the exponent in [0, {:g}] (steps of 0.5, then 0.25 and 0.125 around the "
      "best) whose fit leaves the least loss on the rows; loss by exponent:",
      coefficients::max_expert_zipf_s);
  for (const auto& [x, fit] : tried) why += fmt::format(" {:g}: {:.2f}", x, fit.second);
  calibration out = std::move(tried.at(s).first);
  out.set_expert_popularity(s, why);
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double fit_loss(const std::vector<mapped_row>& rows, const calibration& c) {
  return table_loss(at_expert_popularity(rows, c.expert_zipf_s), c);
}

void summarise(evaluation& e) {
  std::vector<const row_prediction*> all;
  std::map<std::string, std::vector<const row_prediction*>> sys, eng, mod;
  for (const row_prediction& p : e.rows) {
    all.push_back(&p);
    sys[p.row->system].push_back(&p);
    eng[p.row->engine].push_back(&p);
    mod[p.row->model].push_back(&p);
  }
  e.all = stats(all);
  e.by_system.clear();
  e.by_engine.clear();
  e.by_model.clear();
  for (const auto& [k, v] : sys) e.by_system[k] = stats(v);
  for (const auto& [k, v] : eng) e.by_engine[k] = stats(v);
  for (const auto& [k, v] : mod) e.by_model[k] = stats(v);
}

evaluation evaluate(const std::vector<mapped_row>& rows, const calibration& c, bool simulated) {
  evaluation e;
  std::vector<mapped_row> costed = at_expert_popularity(rows, c.expert_zipf_s);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!usable(rows[i])) continue;
    if (simulated) {
      try {
        simulation s = simulate_row(costed[i], c);
        e.rows.push_back({&rows[i], s.ttft.mean, s.tpot.mean});
      } catch (const spec_error&) {
        // The caller says why, row by row (simulate_row again).
      }
      continue;
    }
    steady_state s = predict(costed[i], c);
    e.rows.push_back({&rows[i], s.ttft_ms, s.tpot_ms});
  }
  summarise(e);
  return e;
}

evaluation cross_validate(const std::vector<mapped_row>& rows, const calibration& base,
                          const std::function<std::string(const mapped_row&)>& group) {
  std::set<std::string> keys;
  for (const mapped_row& m : rows)
    if (usable(m)) keys.insert(group(m));
  evaluation out;
  for (const std::string& key : keys) {
    std::vector<mapped_row> train;
    for (const mapped_row& m : rows)
      if (usable(m) && group(m) != key) train.push_back(m);
    calibration c = fit_calibration(train, base, "cross-validation fold");
    out.fold_expert_zipf_s[key] = c.expert_zipf_s;
    // The held-out rows costed under the fold's own expert popularity, never the shipped one.
    std::vector<mapped_row> held;
    std::vector<const mapped_row*> of;
    for (const mapped_row& m : rows)
      if (usable(m) && group(m) == key) {
        held.push_back(m);
        of.push_back(&m);
      }
    held = at_expert_popularity(held, c.expert_zipf_s);
    for (std::size_t i = 0; i < held.size(); ++i) {
      steady_state s = predict(held[i], c);
      out.rows.push_back({of[i], s.ttft_ms, s.tpot_ms});
    }
  }
  summarise(out);
  return out;
}

void record_in_sample(calibration& c, const evaluation& e) {
  std::map<std::string, std::vector<const row_prediction*>> answered;  // entry -> its rows
  for (const row_prediction& p : e.rows) {
    std::string used;
    c.lookup(p.row->family, p.row->engine, &used);
    answered[used].push_back(&p);
  }
  for (calibration_entry& entry : c.entries) {
    auto it = answered.find(entry.family + "/" + entry.engine);
    if (it == answered.end()) continue;
    entry.in_sample = stats(it->second);
    std::set<std::string> models, gpus;
    for (const row_prediction* p : it->second) {
      models.insert(p->row->model);
      gpus.insert(p->row->gpu);
    }
    entry.measured_models.assign(models.begin(), models.end());
    entry.measured_gpus.assign(gpus.begin(), gpus.end());
  }
}

void record_held_out(calibration& c, const std::string& grouping, const evaluation& e) {
  c.held_out[grouping] = {e.all, e.by_engine};
}

}  // namespace calc::serve
