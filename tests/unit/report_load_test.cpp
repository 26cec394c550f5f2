// The report's throughput chart (src/report/): tokens/s per GPU against per user over
// concurrency from the serve steady state, kept to its Pareto frontier, drawn by gnuplot from
// per-line x values.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "report/chart.h"
#include "report/data.h"
#include "serve/batching.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "test_model.h"

using namespace calc;
using testing::model;
using testing::run;

namespace {

/// The chart's workload: 1K in, 1K out, under vLLM's default batching.
load_request vllm_load() {
  load_request w;
  w.cfg = serve::engine_batching(serve::find_engine("vllm"), 1024, 1024, find_gpu("h100-sxm"));
  w.engine = "vllm";
  return w;
}

}  // namespace

TEST_CASE("report throughput: a Pareto frontier over concurrency, per GPU of the deployment") {
  model a("qwen3-8b");
  model b("llama-3.1-70b");
  report_request q;
  q.gpu = find_gpu("h100-sxm");
  q.lengths = {4096};
  q.workspace = checked(0);
  q.load = vllm_load();
  report_data r = answer_report({&a.g, &b.g}, q);
  for (const report_model& m : r.models) {
    CAPTURE(m.name);
    REQUIRE(m.load.size() >= 3);
    CHECK(m.load.front().concurrency == 1);
    for (std::size_t i = 1; i < m.load.size(); ++i) {
      // More clients: each user slower, each GPU busier; nothing kept is beaten on both.
      CHECK(m.load[i].concurrency > m.load[i - 1].concurrency);
      CHECK(m.load[i].tokens_per_s_per_user < m.load[i - 1].tokens_per_s_per_user);
      CHECK(m.load[i].tokens_per_s_per_gpu > m.load[i - 1].tokens_per_s_per_gpu);
    }
    // One client: its OSL tokens per request life (TTFT + (OSL - 1) TPOT) over the GPUs.
    const load_point& one = m.load.front();
    CHECK(one.tokens_per_s_per_gpu ==
          doctest::Approx(1e3 * 1024 / (one.ttft_ms + 1023 * one.tpot_ms) /
                          static_cast<double>(m.lay.cards())));
    CHECK(one.tokens_per_s_per_user == doctest::Approx(1e3 / one.tpot_ms));
  }
  // The 70B model on H100s needs more GPUs a request: fewer tokens per GPU at one client.
  CHECK(r.models[1].load.front().tokens_per_s_per_gpu <
        r.models[0].load.front().tokens_per_s_per_gpu);
}

TEST_CASE("report throughput: the x-y chart's gnuplot data and script") {
  xy_chart c{"r-throughput", "Throughput", "per user", "per GPU", {}, "H100", "", ""};
  c.lines.push_back({"a", {100, 50, 10}, {20, 400, 3000}, ""});
  c.lines.push_back({"b", {}, {}, "no deployment"});
  CHECK(gnuplot_data(c) == "# a\n100 20\n50 400\n10 3000\n\n\n# b\n? ?\n");
  std::string gp = gnuplot_script(c, "r.dat", "r.svg");
  CHECK(gp.find("'r.dat' index 0 using 1:2 with linespoints") != std::string::npos);
  CHECK(gp.find("index 1") == std::string::npos);            // no points: not drawn
  CHECK(gp.find("set logscale y 10") != std::string::npos);  // 20 to 3000
  CHECK(gp.find("set xrange [0:*]") != std::string::npos);   // 10 to 100
}

TEST_CASE("report throughput from the command line: JSON and the Markdown section") {
  std::string out, err;
  REQUIRE(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K", "--isl",
               "2K", "--osl", "256", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["load_workload"]["isl"] == 2048);
  CHECK(j["load_workload"]["osl"] == 256);
  CHECK(j["load_workload"]["engine"] == "vllm");
  REQUIRE(j["models"][0]["load"].size() > 3);
  CHECK(j["models"][0]["load"][0]["concurrency"] == 1);
  REQUIRE(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K"}, out, err) ==
          0);
  CHECK(out.find("## Throughput per GPU against throughput per user") != std::string::npos);
  REQUIRE(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K", "--format",
               "csv"},
              out, err) == 0);
  std::string text = out;
  auto at = text.find("\n# load\nmodel,gpu,concurrency,output_tokens_per_s_per_user,");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("\nqwen3-8b,h100-sxm,1,", at) != std::string::npos);
  CHECK(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K", "--osl", "-5"},
            out, err) == 2);
  CHECK(err == "--osl: must be at least 1, got -5\n");
  // 0 is a length given, not "use the default": refused like any other length below 1.
  CHECK(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K", "--isl", "0"},
            out, err) == 2);
  CHECK(err == "--isl: must be at least 1, got 0\n");
}

TEST_CASE("report --engine: a multimodal model's requests lose its vision tower, as capacity's do") {
  // The engine loads the vision tower beside the text model; `capacity` deducts it from the KV
  // budget, and the report, which asks the same engine rules per model, must too (it did not).
  for (const char* length : {"512", "1024"}) {
    CAPTURE(length);
    std::string out, err;
    REQUIRE(run({"report", "--model", "gemma-3-27b-it,qwen3-8b", "--gpu", "h100-sxm", "--engine",
                 "vllm", "--length", length, "--format", "json"},
                out, err) == 0);
    auto r = nlohmann::json::parse(out);
    for (int i = 0; i < 2; ++i) {
      std::string model = r["models"][i]["model"];
      CAPTURE(model);
      REQUIRE(run({"capacity", "--model", model, "--gpu", "h100-sxm", "--engine", "vllm",
                   "--length", length, "--format", "json"},
                  out, err) == 0);
      auto c = nlohmann::json::parse(out);
      if (model == "gemma-3-27b-it") CHECK(c["vision_weight_bytes_per_rank"].get<double>() > 0);
      CHECK(r["models"][i]["points"][0]["requests"].get<double>() ==
            std::floor(c["max_concurrency"].get<double>()));
    }
  }
}

TEST_CASE("report throughput: a tp group past the NVLink domain gets no curve, and says why") {
  model b("llama-3.1-70b");
  report_request q;
  q.gpu = find_gpu("h100-sxm");
  q.lengths = {4096};
  q.workspace = checked(0);
  q.lay = layout{16, 1, 1};
  q.load = vllm_load();
  report_data r = answer_report({&b.g}, q);
  REQUIRE(r.models.size() == 1);
  // `calc serve --tp 16` refuses this layout on H100s; the chart had drawn it anyway.
  CHECK(r.models[0].load.empty());
  CHECK(r.models[0].load_note.find("NVLink domain of 8") != std::string::npos);
  q.lay = layout{8, 2, 1};  // the same cards within the domain: a curve
  CHECK_FALSE(answer_report({&b.g}, q).models[0].load.empty());
}

TEST_CASE("report: one --ep for a dense and a MoE model splits the experts of the MoE one only") {
  std::string out, err;
  // Refused as a whole while the dense model's layout was checked with ep 4 (it has no routed
  // experts to split).
  REQUIRE(run({"report", "--model", "qwen3-8b,qwen3-30b-a3b", "--gpu", "h100-sxm", "--tp", "4",
               "--ep", "4", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["models"][0]["layout"] == "tp 4 x pp 1");
  CHECK(j["models"][1]["layout"] == "tp 4 x pp 1 (ep 4)");
  // One dense model alone: --ep is refused, as every layout command refuses it.
  CHECK(run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--tp", "4", "--ep", "4"}, out,
            err) == 2);
}
