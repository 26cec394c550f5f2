// Shared pieces of the command-line front end: the options every command may take, a
// command's result, loading a model with its what-ifs and execution overrides, option checks.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fraction.h"
#include "common/limits.h"
#include "engine/question.h"
#include "graph/graph.h"
#include "report/format.h"
#include "spec/gpu_spec.h"
#include "spec/model_spec.h"
#include "tally/rules.h"

namespace calc {
struct load_request;  // report/data.h
}

namespace calc::cli {

constexpr std::int64_t kMaxLength = limits::tokens;

/// Every option value a command may read, grouped as option_group binds them; a command
/// registers only the groups it declares, so a flag it does not read is refused by the parser.
struct options {
  std::string model;        // --model as typed: one name, or a comma list
  std::string length_text;  // --length as typed: 8192, 128K, 4K,8K, 1K:1M:x2
  std::vector<std::string> sets;
  std::string format = "md";
  std::int64_t length = -1;
  std::vector<std::int64_t> lengths;
  std::int64_t batch = 1;
  std::int64_t context = 0;       // S: --context (--cached)
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
  std::int64_t prompt = -1;       // P: --prompt (--tokens)
  std::int64_t generate = 1;      // G: --generate
  std::string gpu;
  std::vector<std::string> gpu_list;
  std::string memory = "runtime";  // --memory: runtime (as engines see it) or as-sold
  std::string workspace = "2GiB";
  std::string weight_bytes;
  std::int64_t requests = -1;
  bool requests_given = false;     // --requests typed (a typed -1 is not "not given")
  std::vector<std::string> given;  // the long names of the options typed ("--gpu", ...)
  std::string weights;             // --weights: format of the weight matrices
  std::string embeddings;          // --embeddings: format of the embedding table and head
  std::string kv;                  // --kv: format of cached keys and values
  std::int64_t page_tokens = 0;    // --page-tokens: paged cache block size (0: unpaged)
  std::int64_t shared_prefix = 0;  // --shared-prefix: tokens every request shares, stored once
  std::int64_t tp = 1, pp = 1, ep = 1, dp = 1;  // layout: --tp --pp --ep --dp (engine spellings)
  bool layout_given = false;  // any of the layout options appeared (report plans one without)
  std::optional<std::int64_t> node_gpus;  // --node-gpus; none: the card's server_gpus
  std::int64_t max_gpus = limits::default_max_gpus;
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
  std::string kv_cache_dtype;               // with --engine, --kv as the engine reads it
  std::string mamba_ssm_cache_dtype;        // --mamba-ssm-cache-dtype
  double gpu_memory_utilization = 0.9;      // vLLM
  double mem_fraction_static = 0;  // SGLang; 0: its default, computed from card and layout
  double free_gpu_memory_fraction = 0.9;    // TensorRT-LLM: of what the weights leave
  std::int64_t block_size = 0;              // with --engine: --page-tokens (--block-size)
  std::int64_t max_model_len = 0;           // with --engine: --length (--max-model-len)
  std::int64_t max_num_seqs = 0;            // --max-num-seqs / --max-running-requests
  std::int64_t max_num_batched_tokens = 0;  // --max-num-batched-tokens / --chunked-prefill-size
  std::int64_t batch_wait_iters = 0;        // --batch-wait-timeout-iters (TensorRT-LLM)
  double batch_wait_ratio = 0;              // --batch-wait-max-tokens-ratio (TensorRT-LLM)
  bool adp_balance = false;                 // --attention-dp-balance (TensorRT-LLM)
  std::int64_t adp_balance_timeout_iters = 50;   // --attention-dp-balance-timeout-iters
  std::int64_t adp_balance_batching_iters = 10;  // --attention-dp-balance-batching-iters
  bool enable_prefix_caching = false;
  std::string speculative_config;           // --speculative-config: vLLM's JSON
  std::int64_t num_speculative_tokens = 0;  // --num-speculative-tokens
  // SGLang's Mamba state pool (hybrid models).
  bool disable_radix_cache = false;          // --disable-radix-cache
  std::int64_t max_mamba_cache_size = 0;     // --max-mamba-cache-size; 0: sized by SGLang
  double mamba_full_memory_ratio = 0;        // --mamba-full-memory-ratio; 0: SGLang's default
  std::string mamba_scheduler_strategy;      // --mamba-scheduler-strategy
  std::string limit_mm_per_prompt;           // vLLM's --limit-mm-per-prompt JSON
  // vLLM's VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: "0", "1"; "": the release's default.
  std::string allow_chunked_local_hybrid;    // --allow-chunked-local-hybrid
  // Time under load (commands_serve.cpp); read into typed requests in one place there.
  std::optional<std::int64_t> isl, osl;  // --isl, --osl (0 is given, and refused)
  std::string concurrency;        // --concurrency: a list such as 1,8,64
  double rate = 0;                // --rate: requests per second (Poisson)
  bool simulate = false;          // --simulate: the --concurrency points by simulation
  double range_ratio = 1;         // --range-ratio: lengths drawn in [ratio x given, given]
  std::string trace;              // --trace: JSON lines of arrivals
  std::string calibration;        // --calibration: a calibration YAML (default: the shipped one)
  std::string sla;                // plan --sla ttft=MS,tpot=MS
  std::string measurements;       // calibrate --measurements FILE.csv
  std::string evaluate;           // calibrate --evaluate FILE.csv
  std::string out;                // calibrate --out FILE.yaml
  bool cross_validate = false;    // calibrate --evaluate --cross-validate
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

/// The option groups of docs/commands.md ("One option grammar"): each binds its options once,
/// with one name per quantity, the engines' spellings as aliases, K/M suffixes on token counts,
/// and one help line with its unit. A command lists the groups it reads.
enum class option_group {
  model,          // -m/--model, --set (required)
  model_list,     // the same, optional: default every bundled model
  gpu,            // --gpu: a catalogue name or path (a comma list where the command takes several)
  memory,         // --memory: the card memory counted, runtime-visible or as sold
  length,         // -n/--length (--max-model-len, --context-length): tokens per request
  workload,       // -p/--prompt (--tokens): new tokens P; -s/--context (--cached): cached S
  batch,          // -b/--batch: requests B
  generate,       // -g/--generate: tokens returned G
  formats,        // --weights, --embeddings, --kv (--kv-cache-dtype)
  weight_formats, // --weights, --embeddings only (answers that hold no cache)
  execution,      // --storage, --mla-path
  execution_all,  // the above plus --pairs, --vocab-rows, --linear, --execution, --index-scan
  execution_work, // execution_all without --storage (answers about work, not stored state)
  layout,         // --tp --pp --ep --dp (--tensor-parallel-size, ...)
  workspace,      // --workspace: bytes per card reserved beside weights and state
  search,         // --node-gpus, --max-gpus: the card counts a plan may try
  engine,         // --engine and the engine knobs (vLLM / SGLang spellings)
};

/// One row of the command table: name, one-line help, the option groups it reads, its own
/// options, its handler, and whether --model / --length take several values there.
struct command {
  const char* name;
  const char* help;
  std::vector<option_group> groups;
  std::function<void(CLI::App&, options&)> own;  // options no other command shares
  std::function<result(const options&)> run;
  unsigned lists = one_each;
};

/// CLI11 option groups of the options a command reads only with, or only without, --engine.
inline constexpr const char* kEngineOnly = "Engine (with --engine)";
inline constexpr const char* kPlainOnly = "Without --engine";

/// Marks an option of a command that has the engine group as read in one mode only. `why`, when
/// given, is the whole message of the refusal in the other mode (what to give instead);
/// without it the refusal is the mode's generic line.
CLI::Option* only_in(CLI::Option* opt, const command& c, const char* mode,
                     const char* why = nullptr);

/// Registers one group's options on a command.
void bind_group(CLI::App& app, options& o, option_group g, const command& c);

/// Options that apply only in one mode of a command (with or without --engine): given in the
/// other mode, they are refused by name instead of being silently ignored. The option groups
/// (only_in) are the one place that decides which options these are.
void check_mode_options(const CLI::App& sub, const options& o);

/// A model read from YAML with --set applied, then the execution-path options.
struct loaded_model {
  std::unique_ptr<model_spec> spec;
  graph g;
  /// The model's own embedding format (its file and --set, before --embeddings or --weights):
  /// what a component's `weights` defaults to, as the model reader checked it.
  dtype file_embedding;
};

/// Lets a token-count option take K/M/G suffixes (`--prompt 32K`).
CLI::Validator token_suffixes();
/// Splits "a,b,c" (or "a, b, c") into {"a", "b", "c"} ("" into none), refusing an empty or blank
/// item ("1,,2", "1,", ",") with an error naming `option` and showing `example`: a stray comma more
/// likely lost a value than meant nothing.
std::vector<std::string> split_items(const std::string& option, const std::string& text,
                                     const std::string& example);
/// Parses --length: counts with K/M/G suffixes, comma lists, ranges FROM:TO:xF and FROM:TO:+STEP.
/// Throws spec_error naming `option` on an empty, malformed, negative or too-long value.
std::vector<std::int64_t> parse_lengths(const std::string& option, const std::string& text);
/// After parsing: splits --model into o.models and reads --length into o.lengths / o.length,
/// holding a command that takes one of each to one. `model_given` / `length_given`: the options
/// appeared on the command line.
void read_lists(const command& c, bool model_given, bool length_given, options& o);
void check_count(const std::string& option, std::int64_t v, std::int64_t min);
/// Rejects v below min or above max (a limit of common/limits.h), naming the option, the limit
/// and its unit ("--tp: 4294967296 is more than the limit of 4096 cards").
void check_limit(const std::string& option, std::int64_t v, std::int64_t min, std::int64_t max,
                 const std::string& unit);
/// A token-count option checked against 1..limits::tokens: its value, else `fallback`, else a
/// spec_error saying it is required.
std::int64_t token_option(const std::string& option, const std::optional<std::int64_t>& v,
                          std::optional<std::int64_t> fallback = std::nullopt);
std::int64_t parse_size_option(const std::string& option, const std::string& text);
/// Reads the model (--model, --set), applies the execution and format options and builds the
/// graph; a length past the model's context limit adds a line to the current warning_sink.
loaded_model load(const options& o);

/// While one is alive, load() adds its warnings here (the innermost sink): run_cli prints them
/// on stderr after the command, never into its output; `calc check` gives each claim its own
/// sink and drops it (the chapter asks about lengths past some models' limits).
class warning_sink {
 public:
  warning_sink();
  ~warning_sink();
  warning_sink(const warning_sink&) = delete;
  warning_sink& operator=(const warning_sink&) = delete;
  const std::vector<std::string>& lines() const { return lines_; }
  static void add(const std::string& line);

 private:
  std::vector<std::string> lines_;
  warning_sink* outer_ = nullptr;
};

/// An accelerator by catalogue name or path (find_gpu), read once while a model_cache_scope lives.
gpu_spec load_gpu(const std::string& name_or_path);

/// --node-gpus, checked (1 to limits::cards); none where not given: each card's own server_gpus
/// then applies (server_gpus_of).
std::optional<std::int64_t> node_gpus_option(const options& o);

/// Whether the user typed `flag` (its long name, "--rate"), whatever value it took: a typed 0
/// is a value to check, not "not given".
bool was_typed(const options& o, std::string_view flag);

/// The least value a count option whose 0 stands for "not given" (the engine's default) may
/// take: 1 where the user typed it (a typed 0 is a value, and below 1), else 0.
std::int64_t least_typed(const options& o, std::string_view flag);

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
/// The serving-engine knobs of `capacity --engine` and `plan --engine` (commands_engine.cpp);
/// `report --engine` takes those that size the pool.
void add_engine_options(CLI::App& app, options& o, bool report);
result run_engine_capacity(const options& o);
result run_engine_plan(const options& o);
result run_report(const options& o);
/// The engine options bound into the engine's capacity question at one context length, one rank
/// (the report sets the layout and length per point); `draft` keeps an EAGLE draft alive.
engine::capacity_request engine_request_of(const options& o, std::int64_t length,
                                           const std::string& gpu_name,
                                           std::optional<loaded_model>& draft);
/// The vision tower and projector an engine loads beside the text model (commands_engine.cpp).
checked vision_bytes_of(const options& o, const loaded_model& m);
/// Time under load (commands_serve.cpp): `serve`, `calibrate`, and `plan --sla`.
void add_serve_options(CLI::App& app, options& o);
void add_calibrate_options(CLI::App& app, options& o);
void add_sla_options(CLI::App& app, options& o);
result run_serve(const options& o);
/// One model of a time question: its name, and whether it is the bundled model as shipped (what a
/// calibration's measured runs ran), for the accuracy the answer quotes.
struct asked_model {
  std::string name;
  bool named = false;
};
/// The GPU of a time question: its catalogue name, and whether it was asked by that name (a GPU
/// file is not the card that was measured, whatever its name).
struct asked_gpu {
  std::string name;
  bool named = false;
};
/// Whether --model `given` is the bundled model `name` as shipped: by its name in any case, a
/// Hugging Face id the bundle resolves, or the bundled file's path, with no --set but of
/// precision.* (formats vary among measured runs too).
bool bundled_as_shipped(const options& o, const std::string& given, const std::string& name);
/// Whether --gpu `given` names a catalogue GPU rather than a file.
bool gpu_named(const std::string& given);
/// The workload of `report`'s throughput chart on `gpu` (`gpu_given` as --gpu named it):
/// --isl/--osl (1K each by default), the engine's defaults (--engine, vllm by default) and the
/// calibration entry, with what the calibration records of its accuracy for that GPU and the
/// report's `models`.
load_request report_load_of(const options& o, const gpu_spec& gpu, const std::string& gpu_given,
                            const std::vector<asked_model>& models);
result run_calibrate(const options& o);
result run_plan_sla(const options& o);

}  // namespace calc::cli
