// `calc calibrate`: fitting the calibration table to measured rows, and measuring how well a
// table predicts rows it was not fitted on. The fit is physics, not rows: one set of
// coefficients per (GPU family, engine), pooled rows per engine and over everything as the
// fallback for GPUs and engines the file lacks; never a coefficient per row or per model.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "serve/measured.h"

namespace calc::serve {

/// Fits every (family, engine) with at least `min_rows` rows, every engine pooled over
/// families, and everything pooled, by Levenberg-Marquardt (Eigen) on the log ratio of
/// predicted to measured TPOT and TTFT. Efficiencies stay in (0, 1) and times positive by
/// construction (logistic and exponential parameters); a weak prior pulls a coefficient the
/// rows cannot see (MoE on a dense-only group) back to the built-in prior (the pooled fit for a
/// narrower group). The expert popularity exponent (coefficients::expert_zipf_s), which changes
/// the steps' costs rather than their timing, is fitted around that by a 1-D search over [0, 1],
/// the rows costed again at each exponent tried. Families and model aliases are taken from
/// `base`; its coefficients are not used, so a refit of the same rows on the same machine is the
/// same table (on another, see fit_loss).
/// Whether a fit learns from the row: calc models it, and it carries both measured times.
bool usable(const mapped_row& m);

calibration fit_calibration(const std::vector<mapped_row>& rows, const calibration& base,
                            const std::string& source, std::int64_t min_rows = 10);

/// The rows' part of what fit_calibration minimises (the fit adds a pull toward the priors), for
/// table `c` over `rows` costed at its expert popularity: the sum of squared robust log ratios
/// of TPOT and weighted TTFT; also what the 1-D search over the expert exponent compares. The fit's
/// optimum is not unique to the last digit (its loss is flat along some coefficients and kinked by
/// the steps' discrete batches), so two fits of the same rows compare by this loss and by their
/// predictions, not by their coefficients.
double fit_loss(const std::vector<mapped_row>& rows, const calibration& c);

/// The q-quantile of `v` (0 <= q <= 1), interpolated between neighbours; 0 for none.
double quantile(std::vector<double> v, double q);

/// One row's prediction.
struct row_prediction {
  const mapped_row* row = nullptr;
  double ttft_ms = 0, tpot_ms = 0;
};

struct evaluation {
  std::vector<row_prediction> rows;  // modelled rows with a measurement
  error_stats all;
  std::map<std::string, error_stats> by_system, by_engine, by_model;
  // Cross-validation: the expert popularity exponent each fold fitted without its group.
  std::map<std::string, double> fold_expert_zipf_s;
};

/// Predicts every modelled row with `c` (never fitting on them): by the steady state, or with
/// `simulated` by simulating each row's closed loop (simulate_row; a row the simulation refuses
/// is left out of `rows`).
evaluation evaluate(const std::vector<mapped_row>& rows, const calibration& c,
                    bool simulated = false);

/// Summary statistics of predictions (used by evaluate and cross_validate).
void summarise(evaluation& e);

/// Leave-one-group-out: for each value of `group` (a row's GPU, or its model), fit on the
/// other rows (the expert popularity included) and predict that group's rows, costed under the
/// fold's expert popularity; the predictions of every fold together.
evaluation cross_validate(const std::vector<mapped_row>& rows, const calibration& base,
                          const std::function<std::string(const mapped_row&)>& group);

/// Writes into `c` how well it predicted the rows of `e` (its own fit's): each entry's
/// in-sample |error| over the rows it answers (calibration::lookup) and their bundled models and
/// catalogue GPUs; an entry that answers none, such as one kept from another file, keeps what it
/// had.
void record_in_sample(calibration& c, const evaluation& e);

/// Writes into `c` the held-out |error| of a cross_validate by one of held_out_groupings.
void record_held_out(calibration& c, const std::string& grouping, const evaluation& e);

}  // namespace calc::serve
