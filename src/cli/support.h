// Shared pieces of the command-line front end: the options every command may take, a
// command's result, loading a model with its what-ifs and execution overrides, option checks.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fraction.h"
#include "common/limits.h"
#include "graph/graph.h"
#include "report/format.h"
#include "spec/model_spec.h"
#include "tally/rules.h"

namespace calc::cli {

constexpr std::int64_t kMaxLength = limits::tokens;

/// Every option any command takes; each command registers the ones it uses.
struct options {
  std::string model;
  std::vector<std::string> sets;
  std::string format = "md";
  std::int64_t length = -1;
  std::vector<std::int64_t> lengths;
  std::int64_t batch = 1;
  std::int64_t tokens = -1;
  std::int64_t context = 0;
  std::string pairs;
  std::string vocab_rows;
  std::string mla_path;
  std::string linear;
  std::string routing = "uniform";
  std::string execution;
  std::string index_scan;
  std::string storage;
  bool mtp = false;
  std::string budget;
  std::int64_t prompt = -1;
  std::int64_t cached = 0;
  std::int64_t generate = 1;
  std::string gpu;
  std::vector<std::string> gpu_list;
  std::int64_t gpus = 1;
  std::string workspace = "2GiB";
  std::string weight_bytes;
  std::int64_t requests = -1;
  std::string weights;             // --weights: format of the weight matrices
  std::string embeddings;          // --embeddings: format of the embedding table and head
  std::string kv;                  // --kv: format of cached keys and values
  std::int64_t page_tokens = 0;    // --page-tokens: paged cache block size (0: unpaged)
  std::int64_t shared_prefix = 0;  // --shared-prefix: tokens every request shares, stored once
  std::int64_t tp = 1, pp = 1, ep = 1;
  std::int64_t node_gpus = 8;
  std::int64_t max_gpus = 512;
  bool fp8 = false;
  double decode_ms = -1, round_ms = -1, accepted = -1;
  std::int64_t scale = 16;          // validate: widths divided by this
  std::int64_t decode_steps = 2;    // validate: decode calls after the prefill
  std::string device = "cpu";       // validate: cpu or cuda
  std::uint64_t seed = 2026;        // validate: random weights and tokens
  std::vector<std::string> models;  // compare: models side by side (default: every bundled one)
  std::string range;                // sweep: lengths as FROM:TO:xFACTOR or FROM:TO:+STEP
  std::string scenarios = "scenarios";
};

struct result {
  ojson body;
  std::string title;
  int exit_code = 0;
  std::string footer;  // a closing line for Markdown output
};

/// One row of the command table: name, one-line help, its options, its handler.
struct command {
  const char* name;
  const char* help;
  std::function<void(CLI::App&, options&)> setup;
  std::function<result(const options&)> run;
};

/// A model read from YAML with --set applied, then the execution-path options.
struct loaded_model {
  std::unique_ptr<model_spec> spec;
  graph g;
};

void add_model_options(CLI::App& app, options& o);
/// Execution-path options (MLA path, storage; with `all`, pairs, vocab rows, linear, CED).
void add_execution_options(CLI::App& app, options& o, bool all);
/// Weight and cache format overrides (--weights, --kv) for serving questions.
void add_format_options(CLI::App& app, options& o);
void check_count(const std::string& option, std::int64_t v, std::int64_t min);
/// Rejects v below min or above max (a limit of common/limits.h), naming the option, the limit
/// and its unit ("--tp: 4294967296 is more than the limit of 4096 cards").
void check_limit(const std::string& option, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& unit);
std::int64_t parse_size_option(const std::string& option, const std::string& text);
loaded_model load(const options& o);

const char* mla_path_name(const execution_spec& e);
ojson fraction_json(const fraction& f);
ojson ratio_json(const std::optional<fraction>& r);
const char* class_name(state_class k);

// The handlers, one per command (commands_*.cpp).
result run_state(const options& o);
result run_forward(const options& o);
result run_params(const options& o);
result run_request(const options& o);
result run_crossover(const options& o);
result run_experts(const options& o);
result run_layers(const options& o);
result run_capacity(const options& o);
result run_plan(const options& o);
result run_roofline(const options& o);
result run_speculative(const options& o);
result run_models(const options& o);
result run_gpus(const options& o);
result run_check(const options& o);
result run_validate(const options& o);
result run_compare(const options& o);
result run_sweep(const options& o);

}  // namespace calc::cli
