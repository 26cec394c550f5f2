// Measured serving runs (the column format of aiconfigurator's silicon_sample.csv, documented in
// docs/validation/latency.md) and how calc maps one row onto a model, GPU, engine, formats,
// layout and workload: backend -> engine; system -> GPU catalogue name (h100_sxm -> h100-sxm,
// else without the -sxm suffix: h200_sxm -> h200); model_path -> the calibration file's
// `models` table, else the bundled model named like the id's last part; gemm/moe quant modes ->
// weight and expert formats; tp/pp/attention_dp/moe_ep -> layout (a MoE row with moe_tp = moe_ep
// = N and tp x attention_dp = N x N wider than the GPU's NVLink domain is `--tp N --ep N` with EP
// counted twice: N ranks); isl/osl/batch_size -> workload (batch_size clients per attention-DP
// group), at the mean request of the benchmark client the row's data source names
// (silicon_data_source: the calibration file's `clients`, serve/clients.h), else at the nominal
// lengths, with the launch options its scripts gave the engine for that row.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/clients.h"
#include "serve/simulate.h"

namespace calc::serve {

/// One row as read: the columns calc uses, by name.
struct measured_row {
  std::string id;
  int line = 0;  // 1-based line in the file
  std::map<std::string, std::string> fields;
  double ttft_ms = 0;  // silicon_ttft_ms (0 when absent: a row to predict only)
  double tpot_ms = 0;  // silicon_tpot_ms
  const std::string& at(const std::string& column) const;
};

/// Reads the CSV strictly: a header naming at least the columns calc maps, one row per line,
/// quoted fields allowed. A malformed line is a spec_error `file:line: ...`.
std::vector<measured_row> read_measured(const std::string& path);

/// What decides whether two bundled models are the same for the time model: their parameters
/// and their state at 4,096 tokens (a row's formats are its own). Throws spec_error for a name
/// that is no bundle.
std::pair<checked, checked> bundle_shapes(const std::string& name);

/// A row mapped onto calc: costed and ready to predict, or the one-line reason it cannot be.
struct mapped_row {
  std::string id;
  std::string error;   // non-empty: the row cannot be modelled
  std::string system;  // as in the file (h100_sxm)
  std::string gpu;     // catalogue name
  std::string family;  // the calibration's GPU family
  std::string engine;
  std::string model;  // bundled model name
  double ttft_ms = 0, tpot_ms = 0;
  // The row's own lengths and its client's range (benchmark_client::length_low; 1 when the
  // source names no known client): the scenario costs their means, a simulation draws them.
  std::int64_t isl = 0, osl = 0;
  double length_low = 1;
  std::shared_ptr<const scenario> s;
  // The model the scenario's deployment points into, kept alive with the row: its steps are
  // costed again under another expert popularity (at_expert_popularity) after the mapper is gone.
  std::shared_ptr<const graph> model_graph;
};

/// The shortest length a client drawing in [low x nominal, nominal] sends: floor(nominal x low),
/// as its Python floats give it.
std::int64_t shortest_length(std::int64_t nominal, double low);

/// The mean of whole numbers drawn uniformly in [floor(nominal x low), nominal], rounded half up:
/// the mean request a closed loop of that client serves (1024 at 0.8: 922).
std::int64_t mean_length(std::int64_t nominal, double low);

/// Models and GPUs read once for a whole file (rows share them).
class row_mapper {
 public:
  explicit row_mapper(const calibration& c);
  ~row_mapper();
  row_mapper(const row_mapper&) = delete;
  row_mapper& operator=(const row_mapper&) = delete;
  mapped_row map(const measured_row& r);

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

/// The rows with their steps costed again under an expert popularity of Zipf exponent `s`
/// (coefficients::expert_zipf_s); rows without experts, or already at `s`, are shared.
std::vector<mapped_row> at_expert_popularity(const std::vector<mapped_row>& rows, double s);

/// Predicted steady state of a mapped row under a calibration (its steps costed again when the
/// calibration's expert popularity is not the one the row was mapped under).
steady_state predict(const mapped_row& r, const calibration& c);

/// The row's closed loop simulated under a calibration (simulate_clients): its clients per
/// attention group sending 10 requests each (InferenceX's client sends 10 x concurrency
/// prompts), lengths drawn as its client draws them (seeded), the steps costed as predict
/// costs them. Throws spec_error where the simulation refuses the run.
simulation simulate_row(const mapped_row& r, const calibration& c);

}  // namespace calc::serve
