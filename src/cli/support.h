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
#include "spec/gpu_spec.h"
#include "spec/model_spec.h"
#include "tally/rules.h"

namespace calc::cli {

constexpr std::int64_t kMaxLength = limits::tokens;

/// Every option any command takes; each command registers the ones it uses.
struct options {
  std::string model;        // --model as typed: one name, or a comma list
  std::string length_text;  // --length as typed: 8192, 128K, 4K,8K, 1K:1M:x2
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
  bool dry_run = false;             // validate --device cuda: CPU side only, GPU rows skipped
  bool correctness_only = false;    // validate --device cuda: checks only (compute-sanitizer)
  std::string jsonl;                // validate --device cuda: append each row here as measured
  std::vector<std::string> models;  // --model split at commas (compare, report: several)
  std::string plot_dir;             // report: where the SVG charts go (empty: Mermaid only)
  std::string output;               // report --output: the file the report is written to
  std::string shell;                // completion: bash or zsh
  std::string scenarios = "scenarios";
  // Serving-engine knobs (commands_engine.cpp), spelled as vLLM / SGLang spell them.
  std::string engine;                       // --engine: vllm or sglang
  std::string engine_version;               // --engine-version: whose rules (default: the newest)
  std::string kv_memory;                    // --kv-memory: the engine's logged KV memory per rank
  std::string activation_memory;            // --activation-memory: overrides the estimate
  std::string kv_cache_dtype;               // --kv-cache-dtype: auto, fp8, bfloat16, ...
  std::string mamba_ssm_cache_dtype;        // --mamba-ssm-cache-dtype
  double gpu_memory_utilization = 0.9;      // vLLM
  double mem_fraction_static = 0.88;        // SGLang
  std::int64_t block_size = 0;              // --block-size / --page-size
  std::int64_t max_model_len = 0;           // --max-model-len / --context-length
  std::int64_t max_num_seqs = 0;            // --max-num-seqs / --max-running-requests
  std::int64_t max_num_batched_tokens = 0;  // --max-num-batched-tokens / --chunked-prefill-size
  std::int64_t tensor_parallel_size = 0;    // --tensor-parallel-size (or --tp)
  std::int64_t pipeline_parallel_size = 0;  // --pipeline-parallel-size (or --pp)
  bool enable_prefix_caching = false;
};

struct result {
  ojson body;
  std::string title;
  int exit_code = 0;
  std::string footer;    // a closing line for Markdown output
  std::string text;      // output already rendered in the requested format (a million-row CSV
                         // sweep skips the JSON tree); empty: render `body`
  std::string markdown;  // when set, the whole Markdown output (a document, not a generic table)
  unit_map units;        // what each value of `body` measures, for Markdown (report/format.h)
};

/// Which of --model and --length take a comma list (or, for --length, a range) in a command.
enum list_options : unsigned { one_each = 0, model_list = 1, length_list = 2 };

/// One row of the command table: name, one-line help, its options, its handler, and whether
/// --model / --length take several values there.
struct command {
  const char* name;
  const char* help;
  std::function<void(CLI::App&, options&)> setup;
  std::function<result(const options&)> run;
  unsigned lists = one_each;
};

/// A model read from YAML with --set applied, then the execution-path options.
struct loaded_model {
  std::unique_ptr<model_spec> spec;
  graph g;
};

/// --model (alias --models) and --set; `required` unless the command has a default list.
void add_model_options(CLI::App& app, options& o, bool required = true);
/// --length (aliases -n, --lengths), read after parsing by read_lists().
CLI::Option* add_length_option(CLI::App& app, options& o, const std::string& help);
/// Lets a token-count option take K/M/G suffixes (`--prompt 32K`).
CLI::Validator token_suffixes();
/// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& text);
/// Parses --length: counts with K/M/G suffixes, comma lists, ranges FROM:TO:xF and FROM:TO:+STEP.
/// Throws spec_error naming `option` on an empty, malformed, negative or too-long value.
std::vector<std::int64_t> parse_lengths(const std::string& option, const std::string& text);
/// After parsing: splits --model into o.models and reads --length into o.lengths / o.length,
/// holding a command that takes one of each to one. `model_given` / `length_given`: the options
/// appeared on the command line.
void read_lists(const command& c, bool model_given, bool length_given, options& o);
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

/// An accelerator by catalogue name or path (find_gpu), read once while a model_cache_scope lives.
gpu_spec load_gpu(const std::string& name_or_path);

/// While one is alive, load() parses each model file (with its --set list) and load_gpu() each
/// accelerator file once and hands out copies afterwards: `calc check` runs hundreds of commands
/// over a dozen models and a few cards.
class model_cache_scope {
 public:
  model_cache_scope();
  ~model_cache_scope();
  model_cache_scope(const model_cache_scope&) = delete;
  model_cache_scope& operator=(const model_cache_scope&) = delete;

 private:
  bool owner_ = false;  // the outermost scope owns the cache
};

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
result run_import(const options& o);
/// The serving-engine knobs of `capacity --engine` and `plan --engine` (commands_engine.cpp).
void add_engine_options(CLI::App& app, options& o, bool plan);
result run_engine_capacity(const options& o);
result run_engine_plan(const options& o);
result run_report(const options& o);

}  // namespace calc::cli
