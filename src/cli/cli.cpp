#include "cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <ostream>

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

using namespace cli;

result run_completion(const options& o);

// ---- the command table -----------------------------------------------------------------------

const std::vector<command>& commands() {
  static const std::vector<command> table = {
      {"state", "Per-request state at a length: components, fixed part, growth, H*, decode reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         add_length_option(app, o, "Cached tokens per request (N), in tokens")->required();
         app.add_option("-b,--batch", o.batch, "Requests (B), each with its own state");
         add_execution_options(app, o, false);
       },
       run_state},
      {"forward", "Matrix FLOPs, parameters and weight reads of one call, per module and stage",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-p,--tokens", o.tokens, "New tokens per request this call (P)")
             ->required()
             ->transform(token_suffixes());
         app.add_option("-s,--context", o.context, "Tokens already cached per request (S)")
             ->transform(token_suffixes());
         app.add_option("-b,--batch", o.batch, "Requests in the batch (B)");
         add_execution_options(app, o, true);
         app.add_flag("--mtp", o.mtp,
                      "One call of the multi-token-prediction block instead of the backbone");
       },
       run_forward},
      {"params", "Parameters by Table 2-B category, weight bytes, per-layer groups",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         add_format_options(app, o);
       },
       run_params},
      {"request",
       "A whole request: prefill plus G-1 decodes, FLOPs, state written, cumulative reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-p,--prompt", o.prompt, "New input tokens (P)")
             ->required()
             ->transform(token_suffixes());
         app.add_option("-s,--cached", o.cached, "Prefix tokens already cached (S)")
             ->transform(token_suffixes());
         app.add_option("-g,--generate", o.generate,
                        "Tokens returned (G); G-1 decode calls follow prefill")
             ->transform(token_suffixes());
         add_execution_options(app, o, true);
       },
       run_request},
      {"capacity", "Concurrent requests that fit on GPUs; with --requests, the weight budget",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu,
                        "Accelerator(s): names from `calc gpus` or paths, comma-separated "
                        "(required, except with --engine and --kv-memory)");
         app.add_option("--gpus", o.gpus, "Number of cards whose memory is pooled");
         add_length_option(app, o,
                           "Context length(s) per request, in tokens: a comma list or a range "
                           "1K:64K:x2 (required without --engine)");
         app.add_option("--workspace", o.workspace,
                        "Reserved bytes (activations, buffers), e.g. 2GiB (default 2GiB)");
         app.add_option("--weight-bytes", o.weight_bytes,
                        "Use this weight size instead of the model's, e.g. 39.5GB");
         app.add_option(
             "--requests", o.requests,
             "Requests to reserve state for; reports the largest parameter count that fits");
         app.add_option("--page-tokens", o.page_tokens,
                        "Paged cache: each request's history rounded up to whole blocks of this "
                        "many tokens")
             ->transform(token_suffixes());
         app.add_option("--shared-prefix", o.shared_prefix,
                        "Tokens of prefix every request shares, whose history is stored once")
             ->transform(token_suffixes());
         app.add_option("--tp", o.tp, "Tensor-parallel degree: per-card weights and state");
         app.add_option("--pp", o.pp, "Pipeline-parallel degree (contiguous layer stages)");
         app.add_option("--ep", o.ep, "Expert-parallel degree within the tensor-parallel group");
         add_format_options(app, o);
         add_execution_options(app, o, false);
         add_engine_options(app, o, false);
       },
       [](const options& o) {
         if (!o.engine.empty()) return run_engine_capacity(o);
         if (o.gpu.empty()) throw spec_error("--gpu", "is required (name at least one GPU)");
         if (o.lengths.empty()) throw spec_error("--length", "give at least one context length");
         return run_capacity(o);
       },
       length_list},
      {"plan",
       "Fewest cards and a TP/PP/EP layout that fit K requests of N tokens, and why fewer do not",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` or a path")
             ->required();
         add_length_option(app, o,
                           "Context length per request, in tokens (required without --engine)");
         app.add_option("--requests", o.requests, "Concurrent requests to hold")->required();
         app.add_option("--workspace", o.workspace, "Reserved bytes per card (default 2GiB)");
         app.add_option("--node-gpus", o.node_gpus,
                        "Cards per server; beyond one server, whole servers (default 8)");
         app.add_option("--max-gpus", o.max_gpus, "Largest card count to try (default 512)");
         add_format_options(app, o);
         add_execution_options(app, o, false);
         add_engine_options(app, o, true);
       },
       [](const options& o) {
         if (!o.engine.empty()) return run_engine_plan(o);
         if (o.length < 0) throw spec_error("--length", "is required (tokens per request)");
         return run_plan(o);
       }},
      {"roofline", "Lower bounds on prefill and decode time: max(F / peak, R / bandwidth)",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` or a path")
             ->required();
         app.add_option("--gpus", o.gpus, "Cards working together (peaks and bandwidth add)");
         app.add_option("-p,--prompt", o.prompt, "New tokens per request in the prefill (P)")
             ->required()
             ->transform(token_suffixes());
         app.add_option("-s,--context", o.context, "Tokens already cached per request (S)")
             ->transform(token_suffixes());
         app.add_option("-b,--batch", o.batch, "Requests in the batch (B)");
         app.add_flag("--fp8", o.fp8, "Use the FP8 tensor peak instead of BF16");
         add_format_options(app, o);
         add_execution_options(app, o, true);
       },
       run_roofline},
      {"speculative", "Speculative decoding: amortised time per token (T_s + T_v) / g against T_d",
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
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         add_length_option(app, o,
                           "Cached tokens per request (H), in tokens; not needed with --budget");
         app.add_option(
             "--budget", o.budget,
             "State budget per request, e.g. 256MiB: reports the longest context that fits");
         add_execution_options(app, o, false);
       },
       run_crossover},
      {"experts", "Routed experts for a batch: experts touched, rows per expert, FLOPs, bytes read",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-b,--batch", o.batch, "Token rows routed (B requests in one decode step)")
             ->required();
         app.add_option(
             "--routing", o.routing,
             "How tokens spread: uniform (evenly), concentrated (all pick the same k) or "
             "zipf:S (expert popularity ~ rank^-S)");
       },
       run_experts},
      {"compare",
       "Several models side by side: parameters, prefill and decode FLOPs, state (Tables "
       "2-A/2-C/2-E)",
       [](CLI::App& app, options& o) {
         add_model_options(app, o, false);
         add_length_option(app, o,
                           "Prefill tokens, and cached tokens for decode and state (default 8K)");
         add_execution_options(app, o, false);
       },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 8192;
         return run_compare(v);
       },
       model_list},
      {"sweep",
       "A model's state, decode reads and decode FLOPs over a range of lengths (CSV for plots)",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         add_length_option(app, o,
                           "Lengths: FROM:TO:xFACTOR (e.g. 1K:1M:x2), FROM:TO:+STEP or a list")
             ->required();
         add_execution_options(app, o, false);
       },
       run_sweep, length_list},
      {"report",
       "One Markdown document for models on a GPU: weights, state, crossovers, requests per "
       "card, cards needed, roofline bounds, with charts",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` (default h100-sxm)");
         add_length_option(app, o, "Context lengths: a list or a range (default 1K:1M:x4)");
         app.add_option(
             "--requests", o.requests,
             "Concurrent requests a deployment holds, for the cards needed (default 16)");
         app.add_option("--workspace", o.workspace, "Reserved bytes per card (default 2GiB)");
         app.add_option("--node-gpus", o.node_gpus,
                        "Cards per server; beyond one server, whole servers (default 8)");
         app.add_option("--max-gpus", o.max_gpus, "Largest card count to try (default 512)");
         app.add_option("--plot-dir", o.plot_dir,
                        "Also draw each chart as an SVG in this folder (gnuplot) and link it");
         app.add_option("-o,--output", o.output,
                        "Write the report to this file; links are relative to it");
         add_format_options(app, o);
         add_execution_options(app, o, false);
       },
       [](const options& o) {
         options v = o;
         if (v.requests < 0) v.requests = 16;
         return run_report(v);
       },
       model_list | length_list},
      {"completion", "A shell completion script: `source <(calc completion bash)` (or zsh)",
       [](CLI::App& app, options& o) {
         app.add_option("shell", o.shell, "bash or zsh")
             ->required()
             ->check(CLI::IsMember({"bash", "zsh"}));
       },
       run_completion},
      {"layers", "Every layer of the expanded graph: kind, mode (Full/Reindex/Reuse), stage",
       [](CLI::App& app, options& o) { add_model_options(app, o); }, run_layers},
      {"models", "The bundled models", [](CLI::App&, options&) {}, run_models},
      {"gpus", "The accelerator catalogue with sources", [](CLI::App&, options&) {}, run_gpus},
      {"validate",
       "Run a scaled copy on the reference executor and compare with the tally, exactly",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--scale", o.scale,
                        "Divide widths, heads and expert counts by this (default 16)");
         add_length_option(app, o, "Prefill tokens (default 64)");
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
         add_execution_options(app, o, true);
       },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 64;
         return run_validate(v);
       }},
      {"import",
       "A Hugging Face config.json (or a model folder) as calc model YAML, each value commented "
       "with its config field",
       [](CLI::App& app, options& o) {
         app.add_option("path", o.model, "config.json, or a folder holding one")->required();
       },
       run_import},
      {"check", "Every chapter claim in scenarios/, re-derived and compared at printed precision",
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
    c.setup(*sub, p.opts);
    sub->add_option("-f,--format", p.opts.format, "Output: md (default), json or csv")
        ->check(CLI::IsMember({"md", "json", "csv"}));
    subs.push_back(sub);
  }
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
      read_lists(*p.cmd, given(*subs[i], "--model"), given(*subs[i], "--length"), p.opts);
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
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw spec_error("", e.what());
  }
  return dispatch(p, subs).body;
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
    result r = dispatch(p, subs);
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
    err << e.what() << "\n";
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