#include "cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <tuple>

#include "check/check.h"
#include "cli/result_units.h"
#include "cli/support.h"
#include "common/units.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "spec/yaml_reader.h"
#include "tally/tally.h"

namespace calc {

namespace {

/// Appends a command's own default to a shared option's help ("; default 8K").
void with_default(CLI::App& app, const std::string& name, const std::string& text) {
  CLI::Option* opt = app.get_option(name);
  opt->description(opt->get_description() + "; " + text);
}

using namespace cli;

result run_completion(const options& o);

/// The time-under-load options of plan are read only with --sla.
void refuse_sla_options(const options& o) {
  constexpr const char* sla = "applies only with --sla ttft=MS,tpot=MS (plan for time under load)";
  const std::tuple<const char*, bool, const char*> given[] = {
      {"--rate", was_typed(o, "--rate"), sla},
      {"--concurrency", !o.concurrency.empty(), sla},
      {"--isl", o.isl.has_value(), sla},
      {"--osl", o.osl.has_value(), sla},
      {"--calibration", !o.calibration.empty(), sla},
      {"--kv-cache-free-gpu-memory-fraction", was_typed(o, "--kv-cache-free-gpu-memory-fraction"),
       "applies only with --sla ttft=MS,tpot=MS --engine trtllm (TensorRT-LLM's KV pool, planned "
       "for time under load)"}};
  for (const auto& [name, is_given, why] : given)
    if (is_given) throw spec_error(name, why);
}

// ---- the command table -----------------------------------------------------------------------

const command& command_named(const std::string& name);

const std::vector<command>& commands() {
  using g = option_group;
  auto none = [](CLI::App&, options&) {};
  static const std::vector<command> table = {
      {"state",
       "Per-request state at a length: components, fixed part, growth, H*, decode reads",
       {g::model, g::length, g::batch, g::execution},
       [](CLI::App& app, options&) { app.get_option("--length")->required(); },
       run_state},
      {"forward",
       "Matrix FLOPs, parameters and weight reads of one call, per module and stage",
       {g::model, g::workload, g::batch, g::execution_work},
       [](CLI::App& app, options& o) {
         app.get_option("--prompt")->required();
         app.add_flag("--mtp", o.mtp,
                      "One call of the multi-token-prediction block instead of the backbone");
       },
       run_forward},
      {"params",
       "Parameters by Table 2-B category, weight bytes, per-layer groups",
       {g::model, g::weight_formats},
       none,
       run_params},
      {"request",
       "A whole request: prefill plus G-1 decodes, FLOPs, state written, cumulative reads",
       {g::model, g::workload, g::generate, g::execution_all},
       [](CLI::App& app, options&) { app.get_option("--prompt")->required(); },
       run_request},
      {"capacity",
       "Concurrent requests that fit on a deployment; with --requests, the weight budget",
       {g::model, g::gpu, g::memory, g::length, g::layout, g::workspace, g::formats, g::execution,
        g::engine},
       [](CLI::App& app, options& o) {
         // Read without --engine only; with it each is refused with its reason.
         const command& self = command_named("capacity");
         only_in(app.add_option("--weight-bytes", o.weight_bytes,
                                "Use this weight size instead of the model's, e.g. 39.5GB"),
                 self, kPlainOnly,
                 "not taken with --engine: the weights per rank come from the model's "
                 "placement over the layout");
         only_in(app.add_option("--requests", o.requests,
                                "Requests to reserve state for; reports the largest parameter "
                                "count that fits"),
                 self, kPlainOnly,
                 "not taken by capacity --engine, which answers how many requests the pool "
                 "holds; `calc plan --engine --requests N` finds the cards for N");
         app.add_option("--page-tokens,--block-size,--page-size", o.page_tokens,
                        "Tokens per KV block / page: each request's history rounded up to whole "
                        "blocks (engine default: vLLM 16, SGLang 1)")
             ->transform(token_suffixes());
         only_in(app.add_option("--shared-prefix", o.shared_prefix,
                                "Tokens of prefix every request shares, whose history is stored "
                                "once")
                     ->transform(token_suffixes()),
                 self, kPlainOnly,
                 "not taken with --engine: the engines' prefix caches share blocks at run time "
                 "and do not change the pool sized at start-up; give --enable-prefix-caching");
       },
       [](const options& o) {
         if (!o.engine.empty()) return run_engine_capacity(o);
         if (o.gpu.empty()) throw spec_error("--gpu", "is required (name at least one GPU)");
         if (o.lengths.empty()) throw spec_error("--length", "give at least one context length");
         return run_capacity(o);
       },
       length_list},
      {"plan",
       "Fewest cards and a layout engines run (TP/PP/EP/DP) that hold K requests of N tokens, and "
       "why fewer do not",
       {g::model, g::gpu, g::memory, g::length, g::workspace, g::search, g::formats, g::execution,
        g::engine},
       [](CLI::App& app, options& o) {
         app.get_option("--gpu")->required();
         app.add_option("--requests", o.requests,
                        "Concurrent requests to hold (required without --sla)");
         // Plan pages only in the engine's terms (plain plan holds whole histories).
         app.add_option("--page-tokens,--block-size,--page-size", o.page_tokens,
                        "Tokens per KV block / page (default: vLLM 16, SGLang 1)")
             ->transform(token_suffixes())
             ->group(kEngineOnly);
         add_sla_options(app, o);  // time under load: commands_serve.cpp
         // --sla times the engines serve times, TensorRT-LLM too (its plan is fed back to
         // `calc serve --engine trtllm`); plain plan's KV rules know vllm and sglang (run below).
         CLI::Option* engine = app.get_option("--engine");
         engine->get_validator()->active(false);
         engine->check(CLI::IsMember({"vllm", "sglang", "trtllm"}));
         engine->description(
             "Answer in a serving engine's terms: vllm or sglang (docs/engines.md); with --sla "
             "also trtllm, whose defaults and calibration apply (default vllm)");
       },
       [](const options& o) {
         if (!o.sla.empty()) return run_plan_sla(o);  // time under load: commands_serve.cpp
         if (o.engine == "trtllm")
           throw spec_error("--engine",
                            "trtllm is taken only with --sla (plan's KV rules cover vllm and "
                            "sglang)");
         refuse_sla_options(o);
         if (!o.requests_given) throw spec_error("--requests", "is required (requests to hold)");
         if (o.requests < 1)
           throw spec_error("--requests", fmt::format("must be at least 1, got {}", o.requests));
         if (!o.engine.empty()) return run_engine_plan(o);
         if (o.length < 0) throw spec_error("--length", "is required (tokens per request)");
         return run_plan(o);
       }},
      {"serve",
       "Time under load: TTFT, TPOT, tokens/s per GPU and per user at concurrencies, or a "
       "simulation of a rate or trace",
       {g::model, g::gpu, g::layout, g::formats},
       add_serve_options,
       run_serve},
      {"calibrate",
       "Fit the time model's efficiencies to measured runs (--measurements), or predict them "
       "and report the error (--evaluate)",
       {},
       add_calibrate_options,
       run_calibrate},
      {"roofline",
       "Lower bounds on prefill and decode time: max(F / peak, R / bandwidth)",
       {g::model, g::gpu, g::workload, g::batch, g::formats, g::execution_all},
       [](CLI::App& app, options& o) {
         app.get_option("--gpu")->required();
         app.get_option("--prompt")->required();
         app.add_option("--tp,--tensor-parallel-size", o.tp,
                        "Tensor-parallel cards sharing the work: peaks and bandwidth add "
                        "(default 1)");
         app.add_flag("--fp8", o.fp8, "Use the FP8 tensor peak instead of BF16");
       },
       run_roofline},
      {"speculative",
       "Speculative decoding: amortised time per token (T_s + T_v) / g against T_d",
       {},
       [](CLI::App& app, options& o) {
         app.add_option("--decode-ms", o.decode_ms, "T_d: one ordinary decode step, in ms")
             ->required();
         app.add_option("--round-ms", o.round_ms,
                        "T_s + T_v: draft plus verification of one round, in ms")
             ->required();
         app.add_option("--accepted", o.accepted, "g: valid tokens per round on average")
             ->required();
       },
       run_speculative},
      {"crossover",
       "H* (fixed state = growing state) and the batch where context reads pass weight reads",
       {g::model, g::length, g::execution},
       [](CLI::App& app, options& o) {
         app.add_option(
             "--budget", o.budget,
             "State budget per request, e.g. 256MiB: reports the longest context that fits");
       },
       run_crossover},
      {"experts",
       "Routed experts for a batch: experts touched, rows per expert, FLOPs, bytes read",
       {g::model, g::batch},
       [](CLI::App& app, options& o) {
         // Required here: the help must not promise the other commands' default.
         app.get_option("--batch")->required()->description("Requests in the batch (B)");
         app.add_option(
             "--routing", o.routing,
             "How tokens spread: uniform (evenly), concentrated (all pick the same k) or "
             "zipf:S (expert popularity ~ rank^-S)");
       },
       run_experts},
      {"compare",
       "Several models side by side: parameters, prefill and decode FLOPs, state (Tables "
       "2-A/2-C/2-E)",
       {g::model_list, g::length, g::execution},
       [](CLI::App& app, options&) { with_default(app, "--length", "default 8K"); },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 8192;
         return run_compare(v);
       },
       model_list},
      {"sweep",
       "A model's state, decode reads and decode FLOPs over a range of lengths (CSV for plots)",
       {g::model, g::length, g::execution},
       none,
       run_sweep,
       length_list},
      {"report",
       "One Markdown document for models on a deployment of each GPU (a comma list): weights, "
       "state, crossovers, requests per deployment, cards needed, roofline bounds, with charts; "
       "without --tp/--pp/--ep/--dp each model's layout is planned; with --engine the requests "
       "are the engine's",
       {g::model, g::gpu, g::memory, g::length, g::layout, g::workspace, g::search, g::formats,
        g::execution, g::engine},
       [](CLI::App& app, options& o) {
         with_default(app, "--gpu", "default h100-sxm");
         app.add_option(
             "--requests", o.requests,
             "Concurrent requests a deployment holds, for the cards needed (default 16)");
         app.add_option("--plot-dir", o.plot_dir,
                        "Also draw each chart as an SVG in this folder (gnuplot) and link it");
         app.add_option("-o,--output", o.output,
                        "Write the report to this file; links are relative to it");
         app.add_option("--isl", o.isl,
                        "Input tokens per request of the throughput chart (default 1K)")
             ->transform(token_suffixes());
         app.add_option("--osl", o.osl,
                        "Output tokens per request of the throughput chart (default 1K)")
             ->transform(token_suffixes());
         app.add_option("--calibration", o.calibration,
                        "Calibration YAML of the throughput chart (default: "
                        "models/calibration/default.yaml)");
       },
       [](const options& o) {
         options v = o;
         if (v.requests < 0) v.requests = 16;
         return run_report(v);
       },
       model_list | length_list},
      {"completion",
       "A shell completion script: `source <(calc completion bash)` (or zsh)",
       {},
       [](CLI::App& app, options& o) {
         app.add_option("shell", o.shell, "bash or zsh")
             ->required()
             ->check(CLI::IsMember({"bash", "zsh"}));
       },
       run_completion},
      {"layers",
       "Every layer of the expanded graph: kind, mode (Full/Reindex/Reuse), stage",
       {g::model},
       none,
       run_layers},
      {"models", "The bundled models", {}, none, run_models},
      {"gpus", "The accelerator catalogue with sources", {}, none, run_gpus},
      {"validate",
       "Run a scaled copy on the reference executor and compare with the tally, exactly",
       {g::model, g::length, g::execution_all},
       [](CLI::App& app, options& o) {
         with_default(app, "--length", "default 64");
         app.add_option("--scale", o.scale,
                        "Divide widths, heads and expert counts by this (default 16)");
         app.add_option("--decode-steps", o.decode_steps,
                        "Decode calls after the prefill (default 2)");
         app.add_option("--device", o.device,
                        "cpu (the Eigen twins) or cuda (also the CUDA kernels)")
             ->check(CLI::IsMember({"cpu", "cuda"}));
         app.add_option("--seed", o.seed, "Seed of the random weights and tokens");
         app.add_flag("--dry-run", o.dry_run,
                      "With --device cuda: run the CPU side of every kernel case (twins, byte "
                      "predictions) and mark the GPU rows skipped; needs no GPU");
         app.add_flag("--correctness-only", o.correctness_only,
                      "With --device cuda: the kernel checks only (short, for compute-sanitizer)");
         app.add_option("--jsonl", o.jsonl,
                        "With --device cuda: append each row to this file as it is measured");
         app.add_option("--gpu", o.gpu,
                        "With --device cuda: catalogue GPU whose BF16 peak bounds tensor-core "
                        "kernels (default h200)");
       },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 64;
         return run_validate(v);
       }},
      {"import",
       "A Hugging Face config.json (or a model folder) as calc model YAML, each value commented "
       "with its config field",
       {},
       [](CLI::App& app, options& o) {
         app.add_option("path", o.model, "config.json, or a folder holding one")->required();
       },
       run_import},
      {"check",
       "Every chapter claim in scenarios/, re-derived and compared at printed precision",
       {},
       [](CLI::App& app, options& o) {
         app.add_option("path", o.scenarios, "Scenario file or folder (default: scenarios)");
       },
       run_check},
  };
  return table;
}

/// Parses args into a command and its options; returns the command, or null for --help output.
struct parsed {
  const command* cmd = nullptr;
  options opts;
  output_format format = output_format::md;
};

/// Registers the command table's subcommands; with `only`, just that one (the others stay null
/// in `subs`): a plain command skips setting up the options of twenty others, which cost more
/// than its own tally.
void build_app(CLI::App& app, parsed& p, std::vector<CLI::App*>& subs,
               const std::string& only = "") {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("calc ") + CALC_VERSION);
  for (const command& c : commands()) {
    if (!only.empty() && c.name != only) {
      subs.push_back(nullptr);
      continue;
    }
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    sub->allow_extras();  // refuse_extras names them, with a guess and the commands taking them
    for (option_group g : c.groups) bind_group(*sub, p.opts, g, c);
    c.own(*sub, p.opts);
    sub->add_option("-f,--format", p.opts.format, "Output: md (default), json or csv")
        ->check(CLI::IsMember({"md", "json", "csv"}));
    subs.push_back(sub);
  }
}

/// A row of the table, for a command's own options that say in which mode they are read.
const command& command_named(const std::string& name) {
  for (const command& c : commands())
    if (c.name == name) return c;
  throw std::logic_error("no command " + name);
}

/// Options a retired spelling had, with what replaces it.
const char* retired_hint(const std::string& name) {
  if (name == "--gpus")
    return "calc no longer pools cards' memory as no engine does; give the layout (--tp 8, "
           "--pp 2) or ask `calc plan` for the fewest cards";
  return nullptr;
}

/// The commands that take an option, by name ("forward, request, roofline").
std::string commands_taking(const std::string& name) {
  std::string out;
  for (const auto& [command, names] : command_options())
    if (std::find(names.begin(), names.end(), name) != names.end())
      out += (out.empty() ? "" : ", ") + command;
  return out;
}

/// An argument the command does not take: one line naming it, the closest option of the
/// command, and the commands that do take it.
void refuse_extras(const CLI::App& sub) {
  std::vector<std::string> rest = sub.remaining();
  if (rest.empty()) return;
  std::string word = rest.front();
  std::string name = word.substr(0, word.find('='));
  std::string command = sub.get_name();
  if (!name.starts_with("-"))
    throw spec_error("", fmt::format("`calc {}` does not take the argument '{}'", command, word));
  if (const char* hint = retired_hint(name))
    throw spec_error(name, fmt::format("is not an option of `calc {}`: {}", command, hint));
  std::vector<std::string> own;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const std::string& l : opt->get_lnames()) own.push_back("--" + l);
    for (const std::string& sn : opt->get_snames()) own.push_back("-" + sn);
  }
  std::string message = fmt::format("is not an option of `calc {}`", command);
  if (auto guess = closest(name, own)) message += fmt::format(" (did you mean '{}'?)", *guess);
  if (std::string others = commands_taking(name); !others.empty())
    message += fmt::format("; it is taken by: {}", others);
  message += fmt::format("; `calc {} --help` lists its options", command);
  throw spec_error(name, message);
}

/// A whole number past 64 bits is named as typed, where CLI11 would hand calc the largest int64
/// and the limit's error would quote a number the user never wrote. CLI11 reads integers with
/// strtoll / strtoull in base 0 (hex and octal too) and clamps on overflow: the same reading here
/// tells the clamp apart.
void refuse_clamped_integers(const CLI::App& sub) {
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0 || opt->get_type_size_max() == 0 || opt->get_lnames().empty()) continue;
    std::string name = "--" + opt->get_lnames().front();
    bool is_signed = opt->get_type_name() == "INT", is_unsigned = opt->get_type_name() == "UINT";
    if (!is_signed && !is_unsigned) continue;
    for (const std::string& value : opt->results()) {
      char* end = nullptr;
      errno = 0;
      if (is_signed)
        (void)std::strtoll(value.c_str(), &end, 0);
      else
        (void)std::strtoull(value.c_str(), &end, 0);
      if (errno == ERANGE && end == value.c_str() + value.size())
        throw spec_error(name, fmt::format("'{}' does not fit in 64 bits", value));
    }
  }
}

/// With --engine, the shared spellings feed the engine's own fields: --length is its
/// max-model-len, --page-tokens its block size, --kv its kv-cache-dtype (read by the engine
/// rules, not applied to the model a second time). The report's other figures (state, cards)
/// are the model's own at each of its lengths: there --kv applies to both.
void engine_spellings(options& o, const std::string& command) {
  if (o.engine.empty()) return;
  // The time commands (serve, plan --sla) and report cost the model in the formats asked, the
  // engine choosing only batching and calibration: --kv stays the model's cache format (it was
  // moved to the engine's kv-cache-dtype and cleared, so `serve --engine sglang --kv fp8` priced
  // a BF16 cache).
  if (command == "report" || command == "serve" || (command == "plan" && !o.sla.empty())) {
    o.kv_cache_dtype = o.kv;
    return;
  }
  if (o.length > 0) o.max_model_len = o.length;
  o.block_size = o.page_tokens;
  o.kv_cache_dtype = o.kv;
  o.kv.clear();
}

/// True when `name` is an option of `sub` that appeared on the command line.
bool given(const CLI::App& sub, const std::string& name) {
  const CLI::Option* opt = sub.get_option_no_throw(name);
  return opt != nullptr && opt->count() > 0;
}

result dispatch(parsed& p, const std::vector<CLI::App*>& subs) {
  for (std::size_t i = 0; i < subs.size(); ++i)
    if (subs[i] != nullptr && subs[i]->parsed()) {
      p.cmd = &commands()[i];
      refuse_extras(*subs[i]);
      read_lists(*p.cmd, given(*subs[i], "--model"), given(*subs[i], "--length"), p.opts);
      refuse_clamped_integers(*subs[i]);
      for (const char* name : {"--tp", "--pp", "--ep", "--dp"})
        p.opts.layout_given = p.opts.layout_given || given(*subs[i], name);
      check_mode_options(*subs[i], p.opts);
      p.opts.requests_given = given(*subs[i], "--requests");
      for (const CLI::Option* opt : subs[i]->get_options())
        if (opt->count() > 0 && !opt->get_lnames().empty())
          p.opts.given.push_back("--" + opt->get_lnames().front());
      engine_spellings(p.opts, p.cmd->name);
    }
  if (p.opts.format == "json") p.format = output_format::json;
  if (p.opts.format == "csv") p.format = output_format::csv;
  return p.cmd->run(p.opts);
}

/// The options a user gave a command, as typed ("--prompt 10000000 --batch 1000000"), to name
/// what made an exact count overflow; the model's own sizes are named by the caller.
std::string given_options(const std::vector<CLI::App*>& subs) {
  std::string out;
  for (const CLI::App* sub : subs) {
    if (sub == nullptr || !sub->parsed()) continue;
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->count() == 0 || opt->get_name() == "--format" || opt->get_name() == "--help")
        continue;
      for (const std::string& value : opt->results())
        out += fmt::format("{}{} {}", out.empty() ? "" : " ", opt->get_name(), value);
    }
  }
  return out;
}

// ---- shell completion, generated from the command table ------------------------------------

/// Option names of a subcommand as typed ("--model", "-m"), and whether each takes a value.
struct option_names {
  std::vector<std::string> names;
  std::string help;
  bool takes_value = false;
};

std::vector<option_names> options_of(const CLI::App& sub) {
  std::vector<option_names> out;
  for (const CLI::Option* opt : sub.get_options()) {
    option_names n;
    for (const std::string& l : opt->get_lnames()) n.names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) n.names.push_back("-" + s);
    if (n.names.empty()) continue;  // a positional argument
    n.help = opt->get_description();
    n.takes_value = opt->get_type_size() != 0;
    out.push_back(n);
  }
  return out;
}
/// A value typed empty (`--trace ''`, `--gpu=`) is a mistake to name, never the option left
/// unset; found before CLI11 parses, which would take the next word as `--gpu=`'s value and answer
/// an empty validated option (`--format ''`) in its own words. --model and --length read their
/// lists themselves (read_lists) and name what an empty one lacks.
void refuse_empty_values(const std::vector<CLI::App*>& subs, const std::vector<std::string>& args) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : subs)
    if (s != nullptr && !args.empty() && s->get_name() == args.front()) sub = s;
  if (sub == nullptr) return;
  std::vector<option_names> own = options_of(*sub);
  auto takes_value = [&](const std::string& name) {
    for (const option_names& n : own) {
      auto named = [&](const std::string& x) {
        return std::find(n.names.begin(), n.names.end(), x) != n.names.end();
      };
      if (n.takes_value && named(name)) return !named("--model") && !named("--length");
    }
    return false;
  };
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    std::string name;
    if (word.starts_with("--") && word.ends_with("="))
      name = word.substr(0, word.size() - 1);
    else if (word.find_first_not_of(" \t") == std::string::npos && args[i - 1].starts_with("-"))
      name = args[i - 1];
    if (!name.empty() && takes_value(name))
      throw spec_error(name, fmt::format("is empty: give a value (`calc {} --help` says what it "
                                         "takes)",
                                         sub->get_name()));
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

/// Help text safe inside a zsh `[...]` description.
std::string zsh_help(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '[') c = '(';
    if (c == ']') c = ')';
    if (c == ':') c = ',';
    if (c == '\'' || c == '`' || c == '\\' || c == '$') continue;
    out += c;
  }
  return out;
}

std::string bash_completion(const std::vector<CLI::App*>& subs, const std::string& models,
                            const std::string& gpus) {
  std::string names;
  for (const command& c : commands()) names += std::string(names.empty() ? "" : " ") + c.name;
  std::string out =
      "# bash completion for calc, generated by `calc completion bash`.\n"
      "# Use: source <(calc completion bash)\n"
      "_calc() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  local cmd=\"${COMP_WORDS[1]}\" opts=\"\"\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n";
  out += fmt::format("    COMPREPLY=($(compgen -W \"{} --help --version\" -- \"$cur\"))\n", names);
  out += "    return\n  fi\n  case \"$prev\" in\n";
  out += fmt::format(
      "    -m|--model|--models) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n", models);
  out += fmt::format("    --gpu) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n", gpus);
  out += "    -f|--format) COMPREPLY=($(compgen -W \"md json csv\" -- \"$cur\")); return ;;\n";
  out += "    --plot-dir) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n";
  out += "  esac\n  case \"$cmd\" in\n";
  for (std::size_t i = 0; i < subs.size(); ++i) {
    std::vector<std::string> all;
    for (const option_names& n : options_of(*subs[i]))
      for (const std::string& name : n.names)
        if (name.starts_with("--")) all.push_back(name);
    out += fmt::format("    {}) opts=\"{}\" ;;\n", commands()[i].name, joined(all));
  }
  out += "  esac\n  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n}\n";
  out += "complete -o default -F _calc calc\n";
  return out;
}

std::string zsh_completion(const std::vector<CLI::App*>& subs, const std::string& models,
                           const std::string& gpus) {
  std::string out =
      "#compdef calc\n"
      "# zsh completion for calc, generated by `calc completion zsh`.\n"
      "# Use, once compinit has run (it defines compdef): source <(calc completion zsh)\n"
      "_calc() {\n"
      "  local -a commands\n"
      "  commands=(\n";
  for (const command& c : commands()) out += fmt::format("    '{}:{}'\n", c.name, zsh_help(c.help));
  out +=
      "  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' commands\n    return\n"
      "  fi\n"
      // The subcommand's options are parsed with the subcommand as the command word: without
      // the shift, _arguments sees `state` as a stray argument and offers no option.
      "  local cmd=$words[2]\n  shift words\n  (( CURRENT-- ))\n  case $cmd in\n";
  for (std::size_t i = 0; i < subs.size(); ++i) {
    out += fmt::format("    {})\n      _arguments", commands()[i].name);
    for (const option_names& n : options_of(*subs[i])) {
      std::string value;
      if (n.takes_value) {
        const std::string& first = n.names.front();
        if (first == "--model")
          value = fmt::format(":model:({})", models);
        else if (first == "--gpu")
          value = fmt::format(":gpu:({})", gpus);
        else if (first == "--format")
          value = ":format:(md json csv)";
        else if (first == "--plot-dir")
          value = ":folder:_files -/";
        else
          value = ":value:";
      }
      for (const std::string& name : n.names)
        out += fmt::format(" \\\n        '{}[{}]{}'", name, zsh_help(n.help), value);
    }
    out += " ;;\n";
  }
  out += "  esac\n}\ncompdef _calc calc\n";
  return out;
}

result run_completion(const options& o) {
  CLI::App app("calc");
  parsed p;
  std::vector<CLI::App*> subs;
  build_app(app, p, subs);
  std::string gpus;
  for (const gpu_spec& g : gpu_catalogue()) gpus += (gpus.empty() ? "" : " ") + g.name;
  std::string models = joined(bundled_models());
  result r;
  r.markdown =
      o.shell == "zsh" ? zsh_completion(subs, models, gpus) : bash_completion(subs, models, gpus);
  r.body = {{"shell", o.shell}, {"script", r.markdown}};
  r.title = "calc completion";
  return r;
}

/// The long spelling of the context-length option (--length, --lengths, --max-model-len,
/// --context-length) the user typed last on `args`, "" when none; -n reads as --length.
std::string typed_length(const std::vector<CLI::App*>& subs, const std::vector<std::string>& args) {
  for (const CLI::App* sub : subs) {
    if (sub == nullptr || !sub->parsed()) continue;
    const CLI::Option* opt = sub->get_option_no_throw("--length");
    if (opt == nullptr || opt->count() == 0) return "";
    std::string typed = "--length";
    for (const std::string& arg : args) {
      if (!arg.starts_with("--")) {
        for (const std::string& s : opt->get_snames())
          if (arg.starts_with("-" + s)) typed = "--length";
        continue;
      }
      for (const std::string& l : opt->get_lnames())
        if (arg == "--" + l || arg.starts_with("--" + l + "=")) typed = "--" + l;
    }
    return typed;
  }
  return "";
}

/// An error as the user reads it: the layers below cli/ name the quantity that was wrong
/// ("model", "gpu"), and where the user gave it as an option, this prints the option instead.
/// The context length has four spellings, and the code names two (--length, --max-model-len
/// under --engine): its errors name the one typed, `length_typed` (typed_length), instead.
/// A located error (a file position) or one that already names an option prints as raised.
spec_error as_given(const spec_error& e, const std::string& length_typed) {
  static const std::map<std::string, std::string> option_of = {
      {"model", "--model"},
      {"gpu", "--gpu"},
      {"mtp", "--mtp"},
      {"scale", "--scale"},
      {"storage", "--storage"},
      {"cuda", "--device cuda"},
      {"plot_dir", "--plot-dir"},
      {"routing", "--routing"},
      // The engine rules (src/engine/): the engines' own spellings, as the user gave them.
      {"engine", "--engine"},
      {"engine_version", "--engine-version"},
      {"tensor_parallel", "--tensor-parallel-size"},
      {"pipeline_parallel", "--pipeline-parallel-size"},
      {"speculative", "--speculative-config"},
      {"max_model_len", "--max-model-len"},
      {"kv_memory", "--kv-memory"},
      {"disable_radix_cache", "--disable-radix-cache"},
      {"mamba_full_memory_ratio", "--mamba-full-memory-ratio"},
      // calc speculative (src/plan/speculative.cpp).
      {"decode_time", "--decode-ms"},
      {"round_time", "--round-ms"},
      {"accepted", "--accepted"},
      // The serving model (src/serve/).
      {"isl", "--isl"},
      {"osl", "--osl"},
      {"concurrency", "--concurrency"},
      {"rate", "--rate"},
      {"load", "--rate/--concurrency"},
      {"requests", "--requests"},
      {"sla", "--sla"},
      {"max_num_batched_tokens", "--max-num-batched-tokens"},
      {"max_num_seqs", "--max-num-seqs"},
      {"deployment.layout", "--tp/--pp/--ep/--dp"},
  };
  // Unlocated: what() is exactly "field: message" (a located one starts with its file).
  const std::string raised = e.what();
  if (raised != spec_error(e.field(), e.message()).what()) return e;
  auto it = option_of.find(e.field());
  std::string option = it == option_of.end() ? e.field() : it->second;
  if (!length_typed.empty() && (option == "--length" || option == "--max-model-len"))
    option = length_typed;
  if (option == e.field()) return e;
  return spec_error(option, e.message());
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::string>>> command_options() {
  CLI::App app("calc");
  parsed p;
  std::vector<CLI::App*> subs;
  build_app(app, p, subs);
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    std::vector<std::string> names;
    for (const option_names& n : options_of(*subs[i]))
      names.insert(names.end(), n.names.begin(), n.names.end());
    out.emplace_back(commands()[i].name, names);
  }
  return out;
}

ojson evaluate(const std::vector<std::string>& args) {
  // calc check evaluates hundreds of command lines: the parser of the command table is built
  // once and cleared before each (building it cost as much as running most commands).
  static CLI::App app("calc");
  static parsed p;
  static std::vector<CLI::App*> subs;
  if (subs.empty()) build_app(app, p, subs);
  app.clear();
  p = parsed{};
  refuse_empty_values(subs, args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw spec_error("", e.what());
  }
  warning_sink dropped;  // a claim's lengths may be past a model's limit on purpose
  try {
    return dispatch(p, subs).body;
  } catch (const spec_error& e) {
    throw as_given(e, typed_length(subs, args));  // the line run_cli would print
  }
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app(
      "calc: exact weights, FLOPs, state, reads and GPU capacity of LLMs, from YAML "
      "model descriptions. Every number is an exact integer, rounded only when printed.",
      "calc");
  parsed p;
  std::vector<CLI::App*> subs;
  // A first word that is no command would otherwise read "A subcommand is required".
  if (!args.empty() && !args.front().empty() && args.front()[0] != '-') {
    std::vector<std::string> names;
    for (const command& c : commands()) names.push_back(c.name);
    if (std::find(names.begin(), names.end(), args.front()) != names.end()) {
      build_app(app, p, subs, args.front());
    } else {
      std::string message = fmt::format("unknown command '{}'", args.front());
      if (auto guess = closest(args.front(), names))
        message += fmt::format(" (did you mean '{}'?)", *guess);
      err << "calc: " << spec_error("", message + "; `calc --help` lists the commands").what()
          << "\n";
      return 2;
    }
  }
  if (subs.empty()) build_app(app, p, subs);  // options first, or nothing: all commands
  try {
    refuse_empty_values(subs, args);
  } catch (const spec_error& e) {
    err << e.what() << "\n";
    return 2;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();  // delegates to the subcommand that was named
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "calc: " << e.what() << "\n";
    return 2;
  }
  try {
    warning_sink warnings;
    result r = dispatch(p, subs);
    for (const std::string& line : warnings.lines())  // stderr only: stdout stays parseable
      err << fmt::format("calc {}: warning: {}\n", p.cmd ? p.cmd->name : "", line);
    if (r.units.of.empty()) r.units = units_of(p.cmd->name);
    if (p.format == output_format::md && !r.markdown.empty()) {
      out << r.markdown;
    } else {
      if (r.text.empty()) {
        out << render(r.body, p.format, r.title, r.units);
      } else {
        out << r.text;  // already rendered (not through a conditional: that would copy it)
      }
      if (p.format == output_format::md) out << r.footer;
    }
    return r.exit_code;
  } catch (const spec_error& e) {
    err << as_given(e, typed_length(subs, args)).what() << "\n";
    return 2;
  } catch (const overflow_error& e) {
    // Counts are exact in 128 bits; past that the inputs (options or the model's sizes) are
    // beyond any machine, and the user is told which ones they gave.
    std::string given = given_options(subs);
    err << fmt::format(
        "calc {}: an exact count overflows 128 bits ({}) with {}{}; use smaller "
        "values\n",
        p.cmd ? p.cmd->name : "", e.what(), given.empty() ? "" : given + " and ",
        "the model's sizes");
    return 2;
  } catch (const std::exception& e) {
    err << "calc: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace calc