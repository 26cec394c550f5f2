#include "cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <ostream>

#include "check/check.h"
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

// ---- the command table -----------------------------------------------------------------------

const std::vector<command>& commands() {
  static const std::vector<command> table = {
      {"state", "Per-request state at a length: components, fixed part, growth, H*, decode reads",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-n,--length", o.length, "Cached tokens per request (N), in tokens")
             ->required();
         app.add_option("-b,--batch", o.batch, "Requests (B), each with its own state");
         add_execution_options(app, o, false);
       },
       run_state},
      {"forward", "Matrix FLOPs, parameters and weight reads of one call, per module and stage",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("-p,--tokens", o.tokens, "New tokens per request this call (P)")
             ->required();
         app.add_option("-s,--context", o.context, "Tokens already cached per request (S)");
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
         app.add_option("-p,--prompt", o.prompt, "New input tokens (P)")->required();
         app.add_option("-s,--cached", o.cached, "Prefix tokens already cached (S)");
         app.add_option("-g,--generate", o.generate,
                        "Tokens returned (G); G-1 decode calls follow prefill");
         add_execution_options(app, o, true);
       },
       run_request},
      {"capacity", "Concurrent requests that fit on GPUs; with --requests, the weight budget",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu,
                        "Accelerator(s): names from `calc gpus` or paths, comma-separated")
             ->required();
         app.add_option("--gpus", o.gpus, "Number of cards whose memory is pooled");
         app.add_option("-n,--length", o.lengths,
                        "Context length(s) per request, in tokens, comma-separated")
             ->required()
             ->delimiter(',');
         app.add_option("--workspace", o.workspace,
                        "Reserved bytes (activations, buffers), e.g. 2GiB (default 2GiB)");
         app.add_option("--weight-bytes", o.weight_bytes,
                        "Use this weight size instead of the model's, e.g. 39.5GB");
         app.add_option(
             "--requests", o.requests,
             "Requests to reserve state for; reports the largest parameter count that fits");
         app.add_option(
             "--page-tokens", o.page_tokens,
             "Paged cache: each request's history rounded up to whole blocks of this many tokens");
         app.add_option("--shared-prefix", o.shared_prefix,
                        "Tokens of prefix every request shares, whose history is stored once");
         app.add_option("--tp", o.tp, "Tensor-parallel degree: per-card weights and state");
         app.add_option("--pp", o.pp, "Pipeline-parallel degree (contiguous layer stages)");
         app.add_option("--ep", o.ep, "Expert-parallel degree within the tensor-parallel group");
         add_format_options(app, o);
         add_execution_options(app, o, false);
       },
       run_capacity},
      {"plan",
       "Fewest cards and a TP/PP/EP layout that fit K requests of N tokens, and why fewer do not",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` or a path")
             ->required();
         app.add_option("-n,--length", o.length, "Context length per request, in tokens")
             ->required();
         app.add_option("--requests", o.requests, "Concurrent requests to hold")->required();
         app.add_option("--workspace", o.workspace, "Reserved bytes per card (default 2GiB)");
         app.add_option("--node-gpus", o.node_gpus,
                        "Cards per server; beyond one server, whole servers (default 8)");
         app.add_option("--max-gpus", o.max_gpus, "Largest card count to try (default 512)");
         add_format_options(app, o);
         add_execution_options(app, o, false);
       },
       run_plan},
      {"roofline", "Lower bounds on prefill and decode time: max(F / peak, R / bandwidth)",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--gpu", o.gpu, "Accelerator: a name from `calc gpus` or a path")
             ->required();
         app.add_option("--gpus", o.gpus, "Cards working together (peaks and bandwidth add)");
         app.add_option("-p,--prompt", o.prompt, "New tokens per request in the prefill (P)")
             ->required();
         app.add_option("-s,--context", o.context, "Tokens already cached per request (S)");
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
         app.add_option("-n,--length", o.length, "Cached tokens per request (H), in tokens")
             ->required();
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
         app.add_option("--models", o.models,
                        "Models, comma-separated (default: every bundled model)")
             ->delimiter(',');
         app.add_option("-n,--length", o.length,
                        "Prefill tokens, and cached tokens for decode and state (default 8192)");
         add_execution_options(app, o, false);
       },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 8192;
         return run_compare(v);
       }},
      {"sweep",
       "A model's state, decode reads and decode FLOPs over a range of lengths (CSV for plots)",
       [](CLI::App& app, options& o) {
         add_model_options(app, o);
         app.add_option("--lengths", o.range,
                        "FROM:TO:xFACTOR (e.g. 1024:1048576:x2) or FROM:TO:+STEP")
             ->required();
         add_execution_options(app, o, false);
       },
       run_sweep},
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
         app.add_option("-n,--length", o.length, "Prefill tokens (default 64)");
         app.add_option("--decode-steps", o.decode_steps,
                        "Decode calls after the prefill (default 2)");
         app.add_option("--device", o.device,
                        "cpu (the Eigen twins) or cuda (also the CUDA kernels)")
             ->check(CLI::IsMember({"cpu", "cuda"}));
         app.add_option("--seed", o.seed, "Seed of the random weights and tokens");
         add_execution_options(app, o, true);
       },
       [](const options& o) {
         options v = o;
         if (v.length < 0) v.length = 64;
         return run_validate(v);
       }},
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

void build_app(CLI::App& app, parsed& p, std::vector<CLI::App*>& subs) {
  app.require_subcommand(1);
  for (const command& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    c.setup(*sub, p.opts);
    sub->add_option("-f,--format", p.opts.format, "Output: md (default), json or csv")
        ->check(CLI::IsMember({"md", "json", "csv"}));
    subs.push_back(sub);
  }
}

result dispatch(parsed& p, const std::vector<CLI::App*>& subs) {
  for (std::size_t i = 0; i < subs.size(); ++i)
    if (subs[i]->parsed()) p.cmd = &commands()[i];
  if (p.opts.format == "json") p.format = output_format::json;
  if (p.opts.format == "csv") p.format = output_format::csv;
  return p.cmd->run(p.opts);
}

/// The options a user gave a command, as typed ("--prompt 10000000 --batch 1000000"), to name
/// what made an exact count overflow; the model's own sizes are named by the caller.
std::string given_options(const std::vector<CLI::App*>& subs) {
  std::string out;
  for (const CLI::App* sub : subs) {
    if (!sub->parsed()) continue;
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->count() == 0 || opt->get_name() == "--format" || opt->get_name() == "--help")
        continue;
      for (const std::string& value : opt->results())
        out += fmt::format("{}{} {}", out.empty() ? "" : " ", opt->get_name(), value);
    }
  }
  return out;
}

}  // namespace

ojson evaluate(const std::vector<std::string>& args) {
  CLI::App app("calc");
  parsed p;
  std::vector<CLI::App*> subs;
  build_app(app, p, subs);
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
  build_app(app, p, subs);
  // A first word that is no command would otherwise read "A subcommand is required".
  if (!args.empty() && !args.front().empty() && args.front()[0] != '-') {
    std::vector<std::string> names;
    for (const command& c : commands()) names.push_back(c.name);
    if (std::find(names.begin(), names.end(), args.front()) == names.end()) {
      std::string message = fmt::format("unknown command '{}'", args.front());
      if (auto guess = closest(args.front(), names))
        message += fmt::format(" (did you mean '{}'?)", *guess);
      err << "calc: " << spec_error("", message + "; `calc --help` lists the commands").what()
          << "\n";
      return 2;
    }
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
  } catch (const CLI::ParseError& e) {
    err << "calc: " << e.what() << "\n";
    return 2;
  }
  try {
    result r = dispatch(p, subs);
    out << render(r.body, p.format, r.title);
    if (p.format == output_format::md) out << r.footer;
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