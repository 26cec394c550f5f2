// The calibration table: the only numbers of the time model that are not tallies or datasheet
// peaks. One set of coefficients per (GPU family, engine), each physically meaningful (an
// efficiency in (0, 1], a latency or overhead >= 0), read from YAML data with its provenance
// (models/calibration/default.yaml) and written back by `calc calibrate`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "serve/clients.h"

namespace calc::serve {

/// The fitted coefficients of one (GPU family, engine). The values below are the built-in
/// priors the fit starts from and is pulled toward (serve/fit.cpp): physical estimates, not
/// fitted values. Where a fit's rows cannot tell a term from its other costs (a cross-validation
/// fold whose vLLM rows cannot tell the step and request overheads from the KV reads), the prior
/// decides where the least identified of them ends: the per-layer floors' are set from kernel
/// counts at a few microseconds each, the step overhead's from scheduling and sampling around
/// a CUDA graph's replay (a 2 ms step overhead and 4 us per layer before;
/// docs/validation/latency.md, twenty-fifth pass).
struct coefficients {
  double gemm_compute = 0.6;          // dense GEMMs: fraction of the format's peak reached
  double gemm_memory = 0.8;           // dense GEMMs: fraction of HBM bandwidth reading weights
  double moe_compute = 0.4;           // routed expert GEMMs: fraction of peak
  double moe_memory = 0.7;            // routed expert GEMMs: fraction of HBM bandwidth
  double attention_compute = 0.4;     // QK^T and AV FLOPs: fraction of the BF16 peak
  double attention_memory = 0.7;      // state read and written: fraction of HBM bandwidth
  double comm_bandwidth = 0.6;        // collectives: fraction of the interconnect bandwidth
  double collective_latency_us = 10;  // per collective launched
  double step_overhead_ms = 0.5;      // per step: scheduler, launch, sampling setup
  double request_overhead_us = 10;    // per decode request in the step: sampling, bookkeeping
  double request_latency_ms = 20;     // per request before its first token: API server,
                                      // tokenisation, scheduling, detokenisation
  double burst_share = 0.1;           // share of a closed-loop run's requests sent in its first
                                      // burst (all clients at once): 1 / requests per client

  double gemm_half_rows = 16;  // GEMM rows (M) at which a GEMM reaches half its
                               // large-M compute efficiency, at most one tile of rows:
  static constexpr double max_gemm_half_rows = 128;  // a GEMM of a full 128-row tile is past half
  double cohort_share = 0.1;   // share of requests that arrive with the others of their cohort
                               // (the prompts that shared a step of the opening burst finish
                               // and return together while their lengths keep them in step)

  double layer_latency_us = 30;  // per layer per step: the floor of its chain of kernels
                                 // (norms, projections, attention, activation: eight to ten),
                                 // each a few microseconds however little it has to do

  double moe_layer_latency_us = 10;  // per MoE layer per step, beyond layer_latency_us: the
                                     // router, top-k, token permutation and the expert kernels'
                                     // launches a dense feed-forward does not have (three or
                                     // four more kernels)

  double prefill_layer_latency_us = 50;  // per layer of a step that prefills, beyond
                                         // layer_latency_us: engines replay CUDA graphs for
                                         // decode batches only, so a step with prompt tokens
                                         // launches each layer's dozen-odd kernels from the
                                         // host (a few us each, and the framework's own code)

  // Per latent-attention (MLA) layer of a step that prefills, beyond prefill_layer_latency_us:
  // DeepSeek-V3/R1 take 150-260 ms to a first token at a few clients where models of the same
  // size take 40-80 ms, a floor, not a slope. MLA is taken for its cause because it prefills in
  // another form than it decodes (the latent up-projected into every head's keys and values,
  // attention in the multi-head form), more of the framework's small operations per layer; but
  // DeepSeek-V3/R1 is the only MLA model measured, and also the only one with 256 experts, so
  // the rows cannot tell which costs it (docs/validation/latency.md, twenty-seventh pass). The
  // prior is a few dozen operations; a pooled fit without MLA rows keeps it, and an engine
  // without MLA rows keeps the pooled value, as for any coefficient its rows do not inform.
  double mla_prefill_layer_latency_us = 100;

  // Per latent-attention (MLA) layer per step, beyond layer_latency_us: MLA decodes in its
  // absorbed form, whose chain of kernels is longer than grouped-query attention's (the query's
  // down- and up-projections with a norm between, the latent's norm, the two batched products
  // that fold the key and value up-projections into the query and the output, the latent cache
  // write): about eight more, at the few microseconds each that layer_latency_us's prior takes
  // for its eight to ten. As for the prefill floor above, the rows cannot tell MLA from
  // DeepSeek-V3/R1's 256 experts, and an entry without MLA rows keeps the pooled value (the
  // shipped vLLM entries: no vLLM row checks it). A pooled fit without them keeps the prior.
  double mla_layer_latency_us = 25;

  // Not in the Levenberg-Marquardt vector below (it changes the step's costs, not its timing): the
  // Zipf exponent s of routed experts' popularity, the i-th most used expert of a layer drawn with
  // probability ~ i^-s (0: every expert equally likely). One value per calibration file, for
  // every model, GPU and engine: `calc calibrate` fits it by a 1-D search over [0, 1] around
  // the least-squares fit (serve/fit.cpp); the file's value is copied into every entry. The
  // built-in 0.625, a skew the fits have often landed on, is the prior of a table without it;
  // the shipped value moves between refits because the loss is nearly flat in s
  // (docs/validation/latency.md).
  double expert_zipf_s = 0.625;
  // At 1 the most used of 128 experts already takes 18 % of a layer's routed picks, 24 times
  // its even share (16 % of 256, 42 times): the load-balancing loss these routers are trained
  // with allows no steeper skew. At 2 it takes 61 %, a step reading a handful of experts; the
  // rows hardly tell exponents apart (the loss is nearly flat in s), and the fold that left
  // Qwen3-235B out picked 1.875 and predicted it 45 % off.
  static constexpr double max_expert_zipf_s = 1;
  // What a calibration file may hold: the fit searched [0, 2] before the bound came down to 1
  // (2026-12), and the files it wrote keep working.
  static constexpr double max_expert_zipf_s_in_file = 2;

  static constexpr std::size_t size = 19;
  /// The coefficients in declaration order (the fit's parameter vector; not expert_zipf_s).
  std::array<double, size> values() const;
  void set(const std::array<double, size>& v);
  /// YAML / JSON key of the i-th coefficient.
  static const char* key(std::size_t i);
  /// Whether the i-th coefficient is a fraction in (0, 1] (an efficiency, a share) rather than a
  /// time (>= 0).
  static bool efficiency(std::size_t i);
  /// The largest value the i-th coefficient may take (infinity where only >= 0 is asked).
  static double upper_bound(std::size_t i);
};

/// |error| statistics of a set of rows, |predicted / measured - 1| in percent of the measured
/// value.
struct error_stats {
  std::int64_t rows = 0;
  double ttft_median = 0, ttft_p90 = 0;
  double tpot_median = 0, tpot_p90 = 0;
};

/// One row of the table.
struct calibration_entry {
  std::string family;  // GPU family name, or "any" (pooled over families)
  std::string engine;  // vllm, sglang, trtllm, or "any"
  coefficients k;
  std::int64_t rows = 0;  // measured rows it was fitted on
  std::string source;     // provenance: the file and command it was fitted with
  // How well the table predicted the measured rows this entry answers (the rows of its family
  // and engine; none for an entry pooled over families where every row's family has its own),
  // as `calc calibrate` fitted it: what a user of the entry may expect on runs like them.
  error_stats in_sample;
  // The bundled models and catalogue GPUs of those rows: what this entry has seen measured (an
  // entry kept from another file keeps its own).
  std::vector<std::string> measured_models, measured_gpus;
};

/// How well a fit predicts rows it never saw, as `calc calibrate --cross-validate` measured it:
/// every row predicted by a fit without its group, over all rows and by engine.
struct held_out_error {
  error_stats all;
  std::map<std::string, error_stats> by_engine;
};

/// The ways rows are held out, as a calibration file names them: without the row's GPU (the
/// other GPUs of its family stay in the fit), without its GPU family (a GPU of no family is its
/// own), without its model.
inline constexpr std::array<const char*, 3> held_out_groupings = {
    "leave_one_gpu_out", "leave_one_family_out", "leave_one_model_out"};

/// The table plus what maps a GPU to its family and a Hugging Face id to a bundled model.
struct calibration {
  std::string source;                                        // provenance of the whole file
  std::map<std::string, std::vector<std::string>> families;  // family -> catalogue GPU names
  std::map<std::string, std::string> models;  // Hugging Face id -> bundled model (same shapes)
  // A measured row's system name -> the catalogue's GPU, where the name is not the catalogue's
  // with '_' for '-' (and "_sxm" dropped): aiconfigurator's a100_sxm is the A100 SXM4 80 GB.
  std::map<std::string, std::string> systems;
  // The benchmark clients a measured row's data source names (their lengths and launch options).
  // A file without the section (one written before it) is not a file that names none
  // (`clients: []`): `calc calibrate`, the one reader of clients (with_shipped_clients), maps
  // its rows with the shipped clients and says so in clients_from.
  std::vector<benchmark_client> clients;
  bool clients_given = false;  // the file has a `clients` section, empty or not
  std::string clients_from;    // where clients came from when not from this file ("": its own)
  std::vector<calibration_entry> entries;
  std::string file;  // where it was read from
  // What a fit reached on rows it never saw (`calc calibrate --cross-validate`), by how they were
  // held out (held_out_groupings); a grouping not run is absent.
  std::map<std::string, held_out_error> held_out;
  /// The held-out error of one grouping, or null.
  const held_out_error* held_out_by(const std::string& grouping) const;
  // The expert popularity exponent of every entry (coefficients::expert_zipf_s) and where it
  // came from; set through set_expert_popularity, which keeps the entries in step.
  double expert_zipf_s = coefficients{}.expert_zipf_s;
  std::string expert_zipf_source;
  void set_expert_popularity(double s, std::string why);
  // What lookup answers when no entry matches: the built-in coefficients, at the file's expert
  // popularity (a hand-written file without an any/any entry still costs experts at its own).
  coefficients defaults;

  /// The GPU family of a catalogue name ("any" when no family lists it).
  std::string family_of(const std::string& gpu) const;
  /// The entry for (family, engine), else (any, engine), else (family, any), else (any, any),
  /// else the built-in defaults; `used` says which row answered.
  const coefficients& lookup(const std::string& family, const std::string& engine,
                             std::string* used = nullptr) const;
};

/// Reads a calibration file strictly (unknown keys, out-of-range coefficients: located
/// spec_error).
calibration read_calibration(const std::string& path);

/// Why `engine` is no engine calc models ("" when it is one, or "any" where `any` is taken),
/// naming those it takes.
std::string unknown_engine(const std::string& engine, bool any = false);

/// The shipped default: models/calibration/default.yaml beside the bundled models.
std::string default_calibration_path();

/// YAML text of a calibration, read back identically by read_calibration.
std::string write_calibration(const calibration& c);

}  // namespace calc::serve
