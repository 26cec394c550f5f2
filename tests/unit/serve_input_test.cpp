// Time under load as a demanding user drives it: layouts no engine runs (a tp group past the
// NVLink domain, a tp that does not divide the heads), malformed traces and measurement files,
// repeated or contradictory options. Each is one line naming the file:line or the option, exit 2;
// what serve and plan --sla answer for a layout they accept agrees.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/dtype.h"
#include "common/limits.h"
#include "serve/calibration.h"
#include "serve/measured.h"
#include "serve/simulate.h"
#include "serve/step.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "test_model.h"

using namespace calc;
using testing::error_of;
using testing::run;
using testing::serve_args;
using testing::write_temp;
using namespace calc::serve;
using testing::model;

namespace {

const std::string kHeader =
    "id,backend,model_path,system,isl,osl,batch_size,tp_size,pp_size,gemm_quant_mode,"
    "moe_quant_mode,silicon_ttft_ms,silicon_tpot_ms\n";

}  // namespace

TEST_CASE("serve layout: a tp group stays within the NVLink domain, or one server over PCIe") {
  gpu_spec h100 = find_gpu("h100-sxm"), l40s = find_gpu("l40s"), gb200 = find_gpu("gb200");
  CHECK(tp_domain(h100, 8) == 8);
  CHECK(tp_domain(gb200, 8) == 72);  // an NVL72 rack is one domain, wider than a server
  CHECK(tp_domain(l40s, 8) == 8);    // no NVLink: tensor parallelism over the server's PCIe
  CHECK(domain_problem(h100, {8, 1, 1, 1}, 8) == "");
  CHECK(domain_problem(h100, {2, 8, 8, 1}, 8) != "");  // --tp 16 --dp 8: 16 cards
  CHECK(domain_problem(gb200, {1, 16, 16, 1}, 8) == "");
  CHECK(domain_problem(h100, {8, 1, 1, 4}, 8) == "");  // pipeline stages may cross nodes

  std::string out, err;
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--tp", "4096", "--isl", "1K", "--osl", "256", "--concurrency", "1"}),
            out, err) == 2);
  CHECK(err ==
        "--tp: the tp group of 4096 cards exceeds h100-sxm's NVLink domain of 8; across nodes its "
        "collectives would cross a network the catalogue has no bandwidth for: use --pp for more "
        "cards, or replicas (`calc plan --sla`)\n");
  CHECK(run(serve_args("deepseek-v3", "h200",
                       {"--tp", "16", "--dp", "16", "--ep", "16", "--isl", "1K", "--osl", "256",
                        "--concurrency", "1"}),
            out, err) == 2);
  CHECK(err.rfind("--tp: the tp group of 16 cards exceeds h200's NVLink domain of 8", 0) == 0);
  // The same layout on GB200's NVL72 runs; a PCIe card runs tp within a server.
  CHECK(run(serve_args("deepseek-v3", "gb200",
                       {"--tp", "16", "--dp", "16", "--ep", "16", "--isl", "1K", "--osl", "256",
                        "--concurrency", "1"}),
            out, err) == 0);
  CHECK(run(serve_args("qwen3-8b", "l40s",
                       {"--tp", "2", "--isl", "1K", "--osl", "256", "--concurrency", "1"}),
            out, err) == 0);
  CHECK(run(serve_args("qwen3-8b", "l40s",
                       {"--tp", "16", "--isl", "1K", "--osl", "256", "--concurrency", "1"}),
            out, err) == 2);
  CHECK(err.rfind("--tp: the tp group of 16 cards exceeds one server of 8 l40s cards", 0) == 0);
  // A model one card cannot hold: the hint widens tp as far as serve takes it (a PCIe server's
  // 8 L40S, where it once stopped at 1 and named 16 pipeline stages), then adds stages.
  CHECK(run(serve_args("qwen3-235b-a22b", "l40s",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "1"}),
            out, err) == 2);
  CHECK(err.find("; --tp 8 --pp 2 holds one") != std::string::npos);
}

TEST_CASE("plan --sla: layouts stay within one server, as serve requires") {
  // An H100 PCIe server joins its cards in 2-card NVLink bridges and runs tp 8 over PCIe (it was
  // capped at the bridge: Llama-3.1-405B planned infeasible); a server of 4 caps tp at 4.
  std::string out, err;
  REQUIRE(run({"plan", "--sla", "ttft=5000,tpot=100", "--rate", "2", "--isl", "1024", "--osl",
               "1024", "--model", "llama-3.1-405b", "--gpu", "h100-pcie", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  CHECK(j["tp"].get<std::int64_t>() > 2);
  CHECK(j["tp"].get<std::int64_t>() <= 8);
  REQUIRE(run({"plan", "--sla", "ttft=3000,tpot=60", "--concurrency", "64", "--isl", "1024",
               "--osl", "256", "--model", "llama-3.1-70b", "--gpu", "h100-pcie", "--node-gpus", "4",
               "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  CHECK(j["tp"].get<std::int64_t>() <= 4);
  // Fed back to serve, the layout runs and predicts the plan's point.
  REQUIRE(run(serve_args("llama-3.1-70b", "h100-pcie",
                         {"--tp", std::to_string(j["tp"].get<std::int64_t>()), "--pp",
                          std::to_string(j["pp"].get<std::int64_t>()), "--isl", "1024", "--osl",
                          "256", "--concurrency",
                          std::to_string(j["concurrency_per_attention_group"].get<std::int64_t>()),
                          "--format", "json"}),
              out, err) == 0);
  auto s = nlohmann::json::parse(out);
  CHECK(s["points"][0]["tpot_ms"].get<double>() ==
        doctest::Approx(j["tpot_ms"].get<double>()).epsilon(1e-9));
  CHECK(s["points"][0]["ttft_ms"].get<double>() ==
        doctest::Approx(j["ttft_ms"].get<double>()).epsilon(1e-9));
  // Infeasible: the reason says which layouts "any layout" means. The target is a tenth of the
  // fastest step serve gives at one request on the widest group, so no calibration meets it.
  REQUIRE(run(serve_args("llama-3.1-70b", "h100-pcie",
                         {"--tp", "4", "--isl", "1024", "--osl", "256", "--concurrency", "1",
                          "--format", "json"}),
              out, err) == 0);
  double fastest = nlohmann::json::parse(out)["points"][0]["tpot_ms"].get<double>();
  REQUIRE(run({"plan", "--sla", fmt::format("ttft=60000,tpot={:.3f}", fastest / 10), "--rate", "5",
               "--isl", "1024", "--osl", "256", "--model", "llama-3.1-70b", "--gpu", "h100-pcie",
               "--node-gpus", "4", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == false);
  CHECK(j["binding"] == "tpot");
  CHECK(j["reason"].get<std::string>().find("tp groups within one server of 4 h100-pcie cards") !=
        std::string::npos);
}

TEST_CASE("a card's server: GH200 nodes hold one superchip, so tp stops at one card") {
  // The catalogue's server_gpus bounds tp past the NVLink domain: 8 on HGX and PCIe servers,
  // 1 for GH200 (it was taken as a card of a server of 8, its tp over the nodes' network costed
  // at its NVLink-C2C figure), 4 for an MI300A node. --node-gpus overrides it in plan.
  CHECK(find_gpu("gh200").server_gpus == 1);
  CHECK(find_gpu("mi300a").server_gpus == 4);
  CHECK(find_gpu("h100-pcie").server_gpus == limits::default_server_gpus);
  for (const gpu_spec& g : gpu_catalogue()) CHECK(g.server_gpus >= 1);
  std::string out, err;
  CHECK(run(serve_args("llama-3.1-70b", "gh200",
                       {"--tp", "2", "--isl", "1024", "--osl", "256", "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err.find("--tp: the tp group of 2 cards exceeds one gh200 node, which holds one card") ==
        0);
  // A node of two superchips, given, runs it; a PCIe server of 4 refuses tp 8.
  CHECK(run(serve_args("llama-3.1-70b", "gh200",
                       {"--tp", "2", "--node-gpus", "2", "--isl", "1024", "--osl", "256",
                        "--concurrency", "8"}),
            out, err) == 0);
  CHECK(run(serve_args("llama-3.1-70b", "l40s",
                       {"--tp", "8", "--node-gpus", "4", "--isl", "1024", "--osl", "256",
                        "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err.find("exceeds one server of 4 l40s cards") != std::string::npos);
  CHECK(run(serve_args("llama-3.1-70b", "l40s",
                       {"--tp", "8", "--node-gpus", "0", "--isl", "1024", "--osl", "256",
                        "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err == "--node-gpus: must be at least 1, got 0\n");
  // Too big for one card, serve's hint names pipeline stages, not a tp group.
  CHECK(run(serve_args("llama-3.1-70b", "gh200",
                       {"--isl", "1024", "--osl", "256", "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err.find("--tp 1 --pp 2 holds one") != std::string::npos);
  // Plain plan and plan --sla keep tp 1 across nodes; a server of 4 given allows tp 2.
  auto plan = [&](std::vector<std::string> extra, std::string model = "llama-3.1-70b",
                  std::string gpu = "gh200") {
    std::vector<std::string> a = {"plan", "--model", model, "--gpu", gpu, "--format", "json"};
    a.insert(a.end(), extra.begin(), extra.end());
    REQUIRE(run(a, out, err) == 0);
    return nlohmann::json::parse(out);
  };
  auto j = plan({"--requests", "16", "--length", "8192"});
  CHECK(j["tp"] == 1);
  CHECK(j["pp"] == 2);
  j = plan({"--requests", "16", "--length", "8192", "--node-gpus", "4"});
  CHECK(j["tp"] == 2);
  CHECK(j["pp"] == 1);
  j = plan({"--sla", "ttft=2000,tpot=50", "--concurrency", "64", "--isl", "1024", "--osl", "256"});
  REQUIRE(j["feasible"] == true);
  CHECK(j["tp"] == 1);
  CHECK(j["pp"].get<std::int64_t>() >= 2);
  // report resolves each card's server on its own: GH200 pipeline stages beside an HGX tp 8.
  REQUIRE(run({"report", "--model", "llama-3.1-70b", "--gpu", "gh200,h100-sxm", "--length", "1M",
               "--format", "json"},
              out, err) == 0);
  auto reports = nlohmann::json::parse(out)["reports"];
  REQUIRE(reports.size() == 2);
  CHECK(reports[0]["models"][0]["layout"].get<std::string>().starts_with("tp 1 x pp "));
  CHECK(reports[1]["models"][0]["layout"] == "tp 8 x pp 1");
  // An NVL72 rack's NVLink domain is wider than any server: plan --sla keeps a 5.5 TB model's
  // group within it (tp x dp up to 64, no pipeline stages), where a server of 8 would need 8
  // stages.
  j = plan({"--sla", "ttft=5000,tpot=100", "--concurrency", "64", "--isl", "1024", "--osl", "256"},
           "kimi-k3", "gb200");
  REQUIRE(j["feasible"] == true);
  CHECK(j["pp"] == 1);
  CHECK(j["gpus"].get<std::int64_t>() <= 72);
  // A catalogue file's server_gpus is checked like nvlink_domain.
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "calc-server-gpus";
  std::filesystem::create_directories(dir);
  std::string file = (dir / "zero.yaml").string();
  {
    std::ofstream f(file);
    f << "name: zero\nmemory: 24GB\nbandwidth: 1TB\nbf16_tflops: 100\nnvlink_domain: 1\n"
         "server_gpus: 0\nsource: test\n";
  }
  CHECK_THROWS_WITH(read_gpu_file(file), doctest::Contains("server_gpus"));
}

TEST_CASE("an engine serves on the cards of the makers it builds for") {
  // Every catalogue card names its maker: that is what lets serve refuse TensorRT-LLM on AMD.
  for (const gpu_spec& g : gpu_catalogue()) {
    CAPTURE(g.name);
    CHECK((g.vendor == "nvidia" || g.vendor == "amd" || g.vendor == "intel"));
  }
  const engine_defaults& trt = find_engine("trtllm");
  CHECK(engine_gpu_problem(trt, find_gpu("h200")) == "");
  CHECK(engine_gpu_problem(trt, find_gpu("rtx-4090")) == "");
  CHECK(engine_gpu_problem(trt, find_gpu("gaudi3")) ==
        "trtllm runs on NVIDIA cards only, and gaudi3 (Intel Gaudi 3 (OAM)) is Intel's; "
        "vllm and sglang run there");
  for (const char* e : {"vllm", "sglang"})
    for (const char* g : {"h200", "mi300x", "mi355x", "gaudi3"}) {
      CAPTURE(e);
      CAPTURE(g);
      CHECK(engine_gpu_problem(find_engine(e), find_gpu(g)) == "");
    }
  // A card file without a maker is refused nothing; a maker outside the three is an input error.
  gpu_spec unnamed = find_gpu("mi300x");
  unnamed.vendor.clear();
  CHECK(engine_gpu_problem(trt, unnamed) == "");
  std::string file = write_temp("calc_gpu_vendor.yaml",
                                "name: odd\nvendor: acme\nmemory: 24GB\nbandwidth: 1TB\n"
                                "bf16_tflops: 100\nsource: test\n");
  CHECK_THROWS_WITH(read_gpu_file(file),
                    doctest::Contains("vendor: 'acme' is not one of nvidia, amd, intel"));
  // Case aside, as catalogue names are.
  std::string upper = write_temp("calc_gpu_vendor_upper.yaml",
                                 "name: odd\nvendor: AMD\nmemory: 24GB\nbandwidth: 1TB\n"
                                 "bf16_tflops: 100\nnvlink_domain: 1\nsource: test\n");
  CHECK(read_gpu_file(upper).vendor == "amd");
}

TEST_CASE("collectives past a card's NVLink bridge run over its PCIe") {
  gpu_spec pcie = find_gpu("h100-pcie");  // 2-card NVLink bridge at 300 GB/s, PCIe 5.0 x16
  CHECK(collective_link(pcie, 2) == 300e9);
  CHECK(collective_link(pcie, 4) == 64e9);
  CHECK(collective_link(find_gpu("h100-sxm"), 8) == 450e9);
  CHECK(collective_link(find_gpu("l40s"), 4) == 32e9);  // no NVLink: interconnect is PCIe
  // Every bridged card records its PCIe link (else tp past the bridge would cost at bridge
  // speed), slower than the bridge.
  for (const gpu_spec& g : gpu_catalogue()) {
    CAPTURE(g.name);
    if (g.nvlink_domain > 1 && g.nvlink_domain < g.server_gpus) {
      CHECK(g.pcie > 0);
      CHECK(g.pcie < g.interconnect);
    }
  }
  // serve: tp 4 on H100 PCIe spends its all-reduces at PCIe speed, not the bridge's, and tp 2
  // x pp 2 its hand-offs between bridged pairs; compared with a copy of the card whose PCIe
  // link were as fast as its bridge.
  auto op_ms = [](const std::string& gpu, const std::string& tp, const std::string& pp,
                  const char* op) {
    std::string out, err;
    REQUIRE(run(serve_args("llama-3.1-70b", gpu,
                           {"--tp", tp, "--pp", pp, "--weights", "fp8", "--isl", "1024", "--osl",
                            "256", "--concurrency", "32", "--format", "json"}),
                out, err) == 0);
    return nlohmann::json::parse(out)["points"][0]["step"]["ops_ms"][op].get<double>();
  };
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "calc-pcie";
  std::filesystem::create_directories(dir);
  auto copy = [&](const std::string& name, const std::string& pcie_line) {
    std::string file = (dir / (name + ".yaml")).string();
    std::ifstream in(pcie.file);
    std::ofstream out(file);
    for (std::string line; std::getline(in, line);)
      out << (line.rfind("pcie:", 0) == 0 ? pcie_line : line) << "\n";
    return file;
  };
  std::string fast = copy("fast-pcie", "pcie: 300GB");
  REQUIRE(find_gpu(fast).pcie == 300'000'000'000);
  CHECK(op_ms("h100-pcie", "4", "1", "tp_allreduce") > 2 * op_ms(fast, "4", "1", "tp_allreduce"));
  CHECK(op_ms("h100-pcie", "2", "1", "tp_allreduce") == op_ms(fast, "2", "1", "tp_allreduce"));
  CHECK(op_ms("h100-pcie", "2", "2", "pp_handoff") > op_ms(fast, "2", "2", "pp_handoff"));
  // Without a PCIe figure a bridged card's tp stops at its bridge: nothing to cost it with.
  std::string unknown = copy("no-pcie", "");
  REQUIRE(find_gpu(unknown).pcie == 0);
  std::string out, err;
  CHECK(run(serve_args("llama-3.1-70b", unknown,
                       {"--tp", "4", "--isl", "1024", "--osl", "256", "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err.find("exceeds h100-pcie's NVLink domain of 2") != std::string::npos);
  // Nor does an HGX card's, whatever server --node-gpus claims.
  CHECK(run(serve_args("llama-3.1-70b", "h100-sxm",
                       {"--tp", "16", "--node-gpus", "16", "--isl", "1024", "--osl", "256",
                        "--concurrency", "8"}),
            out, err) == 2);
  CHECK(err.find("exceeds h100-sxm's NVLink domain of 8") != std::string::npos);
}

TEST_CASE("serve layout: tp divides every layer's heads, ep needs experts, as engines require") {
  model m("qwen3-8b");  // 32 query heads
  CHECK(layout_problem(m.g, {3, 1, 1, 1}) == "tp 3 does not divide the 32 heads of layer 0");
  CHECK(layout_problem(m.g, {8, 1, 1, 1}) == "");
  std::string out, err;
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--tp", "3", "--isl", "1K", "--osl", "256", "--concurrency", "1"}),
            out, err) == 2);
  CHECK(err == "--tp/--pp/--ep/--dp: tp 3 does not divide the 32 heads of layer 0\n");
  // DP attention: each group's share of the tp group splits the heads.
  model ds("deepseek-v3");  // 128 heads
  CHECK(layout_problem(ds.g, {1, 8, 8, 1}) == "");
  // Expert parallelism of a dense model printed --enable-expert-parallel and timed nothing.
  CHECK(layout_problem(m.g, {8, 8, 1, 1}) == "ep 8: the model has no routed experts");
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--tp", "8", "--ep", "8", "--isl", "1K", "--osl", "256", "--concurrency",
                        "1"}),
            out, err) == 2);
  CHECK(err == "--tp/--pp/--ep/--dp: ep 8: the model has no routed experts\n");
}

TEST_CASE("serve and capacity refuse a layout within one server in the same line") {
  // The same flags name the same cards in both (--tp the tp group, --dp its attention groups):
  // a layout engines cannot run is refused by one rule, in the same words, whichever asks.
  std::string out, err_serve, err_capacity;
  int refused = 0;
  for (const char* tp : {"1", "2", "3", "4", "8"})
    for (const char* ep : {"1", "3", "4", "8", "16"})
      for (const char* dp : {"1", "3", "8"})
        for (const char* pp : {"1", "2", "100"}) {
          std::vector<std::string> lay = {"--tp", tp, "--ep", ep, "--dp", dp, "--pp", pp};
          std::vector<std::string> serve = {
              "serve", "--model", "kimi-k2-instruct", "--gpu", "b200", "--isl", "1K",
              "--osl", "1K",      "--concurrency",    "1"};
          std::vector<std::string> capacity = {
              "capacity", "--model", "kimi-k2-instruct", "--gpu", "b200", "--length", "2K"};
          serve.insert(serve.end(), lay.begin(), lay.end());
          capacity.insert(capacity.end(), lay.begin(), lay.end());
          int s = run(serve, out, err_serve), c = run(capacity, out, err_capacity);
          if (!err_capacity.starts_with("--tp/--pp/--ep/--dp:")) continue;  // a fit, not a layout
          INFO("tp ", tp, " ep ", ep, " dp ", dp, " pp ", pp);
          CHECK(s == 2);
          CHECK(c == 2);
          CHECK(err_serve == err_capacity);
          ++refused;
        }
  CHECK(refused > 100);  // dp 3, ep 3, ep past the tp group and pp 100 each refuse
}

TEST_CASE("serve trace and measurements: a folder is named as one") {
  std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(error_of([&] { read_trace(dir); }) == dir + ": trace: is a folder, not a file");
  CHECK(error_of([&] { read_measured(dir); }) == dir + ": measurements: is a folder, not a file");
}

TEST_CASE("serve trace: token counts are whole, a refused request is named by its line") {
  std::string frac = write_temp(
      "calc_in_frac.jsonl", "{\"arrival_ms\": 0, \"input_tokens\": 10.5, \"output_tokens\": 5}\n");
  CHECK(error_of([&] { read_trace(frac); }) ==
        frac + ":1:1: input_tokens: 10.5 is not a whole number of tokens");
  std::string big = write_temp(
      "calc_in_big.jsonl", "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 1e11}\n");
  CHECK(error_of([&] { read_trace(big); }) ==
        big + ":1:1: output_tokens: 100000000000 is more than the limit of 4294967296 tokens");
  std::string late = write_temp(
      "calc_in_late.jsonl", "{\"arrival_ms\": 1e300, \"input_tokens\": 10, \"output_tokens\": 5}\n");
  CHECK(error_of([&] { read_trace(late); }) ==
        late + ":1:1: arrival_ms: 1e+300 ms is more than the limit of 1e12");
  // CRLF line ends and any arrival order are a trace like any other.
  std::string crlf = write_temp("calc_in_crlf.jsonl",
                                "{\"arrival_ms\": 9, \"input_tokens\": 10, \"output_tokens\": 5}\r\n"
                                "{\"arrival_ms\": 1, \"input_tokens\": 20, \"output_tokens\": 5}\r\n");
  auto t = read_trace(crlf);
  REQUIRE(t.size() == 2);
  CHECK(t[1].line == 2);
  // The pool cannot hold line 2's request: file:line, not only its field.
  std::string out, err;
  std::string refused =
      write_temp("calc_in_refused.jsonl",
                 "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 5}\n"
                 "{\"arrival_ms\": 1, \"input_tokens\": 10, \"output_tokens\": 100000000}\n");
  CHECK(run(serve_args("qwen3-8b", "h100-sxm", {"--trace", refused}), out, err) == 2);
  CHECK(err.rfind(refused + ":2:1: input_tokens: a request of 10 + 100000000 tokens needs ", 0) ==
        0);
  // Too much work in a trace names the trace, not a --requests the user did not give.
  std::string huge =
      write_temp("calc_in_huge.jsonl",
                 "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 150000000}\n"
                 "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 150000000}\n");
  CHECK(run(serve_args("qwen3-8b", "h100-sxm", {"--trace", huge}), out, err) == 2);
  CHECK(err.rfind(huge + ": trace: 3e+08 output tokens to simulate is more than the limit", 0) ==
        0);
}

TEST_CASE("serve options: a repeated count, --requests without --rate, a negative --requests") {
  std::string out, err;
  // --isl with a trace was read only to refuse a trace of short requests for a long --isl.
  std::string trace = write_temp(
      "calc_in_short.jsonl", "{\"arrival_ms\": 0, \"input_tokens\": 10, \"output_tokens\": 5}\n");
  CHECK(run(serve_args("qwen3-8b", "h100-sxm", {"--trace", trace, "--isl", "10M"}), out, err) ==
        2);
  CHECK(err ==
        "--isl: is not read with --trace: each line carries its request's input_tokens and "
        "output_tokens\n");
  CHECK(run(serve_args("qwen3-8b", "h100-sxm", {"--trace", trace}), out, err) == 0);
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "1,8,1"}),
            out, err) == 2);
  CHECK(err == "--concurrency: 1 is given twice\n");
  // An empty item was dropped: 1,,8 ran the points 1 and 8, a lost count unremarked.
  for (const char* list : {"1,,8", "1,", ",8", ",", "1, ,8"}) {
    CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                         {"--isl", "1K", "--osl", "256", "--concurrency", list}),
              out, err) == 2);
    CHECK(err == fmt::format("--concurrency: '{}' has an empty item: separate the values by "
                             "single commas, e.g. 1,8,64\n",
                             list));
  }
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "4", "--requests", "5"}),
            out, err) == 2);
  CHECK(err ==
        "--requests: applies only with --rate or --simulate (a trace carries its requests; "
        "--concurrency alone is a steady state)\n");
  // A negative count was read as "not given" and simulated 1000 requests.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "1", "--requests", "-5"}),
            out, err) == 2);
  CHECK(err == "--requests: must be between 1 and 1,000,000\n");
  // --seed seeds the Poisson arrivals: with --concurrency it changed nothing.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "1", "--seed", "5"}),
            out, err) == 2);
  CHECK(err ==
        "--seed: applies only with --rate (it seeds the Poisson arrivals and any drawn lengths) "
        "or with --simulate and --range-ratio below 1 (the lengths)\n");
  // -1 is the option's "not given": typed, it is refused like any other count below 1.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "1", "--requests", "-1"}),
            out, err) == 2);
  CHECK(err == "--requests: must be between 1 and 1,000,000\n");
  // A rate so small its gaps are infinite printed NaN; one merely tiny, a clock past the ms.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "5e-324", "--requests", "10"}),
            out, err) == 2);
  CHECK(err.rfind("--rate: 10 requests at 5e-324 requests/s arrive over inf s, beyond the 10^9 s",
                  0) == 0);
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "1e-9", "--requests", "1000"}),
            out, err) == 2);
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "1e-6", "--requests", "1000",
                        "--format", "json"}),
            out, err) == 0);
  CHECK(nlohmann::json::parse(out)["points"][0]["ttft_ms"].get<double>() > 0);
  // The engine knobs in their own units.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "1", "--max-num-seqs",
                        "1000000000000"}),
            out, err) == 2);
  CHECK(err == "--max-num-seqs: 1000000000000 is more than the limit of 4294967296 requests\n");
  CHECK(run({"plan", "--sla", "ttft=1000,tpot=30", "--rate", "5", "--isl", "1K", "--osl", "256",
             "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--max-num-seqs",
             "-3"},
            out, err) == 2);
  CHECK(err == "--max-num-seqs: must be at least 1, got -3\n");
}

TEST_CASE("serve options: a typed 0 is a value to check, never the option left unset") {
  // --rate 0 once read as no --rate (serve then asked for one of three modes; plan without
  // --sla let it pass), and a typed --max-num-seqs 0 as the engine's default.
  std::string out, err;
  auto with = [&](const std::string& command, std::vector<std::string> more) {
    std::vector<std::string> a = {command, "--model", "qwen3-8b", "--gpu", "h100-sxm"};
    a.insert(a.end(), more.begin(), more.end());
    return run(a, out, err);
  };
  CHECK(with("serve", {"--isl", "1K", "--osl", "128", "--rate", "0"}) == 2);
  CHECK(err == "--rate: 0 is not a positive number of requests per second\n");
  CHECK(with("serve", {"--isl", "1K", "--osl", "128", "--rate", "0", "--concurrency", "4"}) == 2);
  CHECK(err == "--rate: 0 is not a positive number of requests per second\n");
  CHECK(with("plan", {"--length", "8K", "--requests", "4", "--rate", "0"}) == 2);
  CHECK(err == "--rate: applies only with --sla ttft=MS,tpot=MS (plan for time under load)\n");
  CHECK(with("serve",
             {"--isl", "1K", "--osl", "128", "--concurrency", "4", "--max-num-seqs", "0"}) == 2);
  CHECK(err == "--max-num-seqs: must be at least 1, got 0\n");
  CHECK(with("serve", {"--isl", "1K", "--osl", "128", "--concurrency", "4",
                       "--max-num-batched-tokens", "0"}) == 2);
  CHECK(err == "--max-num-batched-tokens: must be at least 1, got 0\n");
  CHECK(with("plan", {"--sla", "ttft=1000,tpot=30", "--rate", "1", "--isl", "1K", "--osl", "128",
                      "--max-num-seqs", "0"}) == 2);
  CHECK(err == "--max-num-seqs: must be at least 1, got 0\n");
  // plan --sla reads the two batching knobs under its default engine, as with --engine.
  CHECK(with("plan", {"--sla", "ttft=1000,tpot=30", "--rate", "1", "--isl", "1K", "--osl", "128",
                      "--max-num-seqs", "4", "--format", "json"}) == 0);
  CHECK(with("plan", {"--length", "8K", "--requests", "4", "--max-num-seqs", "4"}) == 2);
  CHECK(err ==
        "--max-num-seqs: applies only with --engine vllm or sglang (`calc plan` without --engine "
        "does not read it)\n");
  // Left out, the engine's own defaults apply.
  CHECK(with("serve", {"--isl", "1K", "--osl", "128", "--concurrency", "4"}) == 0);
  CHECK(with("serve",
             {"--isl", "1K", "--osl", "128", "--concurrency", "4", "--max-num-seqs", "1"}) == 0);
}

TEST_CASE("serve --batch-wait-*: TensorRT-LLM's hold of new prompts, costed or refused") {
  std::string out, err;
  auto at4 = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = {"--engine", "trtllm",  "--weights",     "fp8",
                                  "--isl",    "922",     "--osl",         "922",
                                  "--concurrency", "1,4", "--format", "json"};
    a.insert(a.end(), more.begin(), more.end());
    REQUIRE(run(serve_args("llama-3.1-70b", "h200", a), out, err) == 0);
    return nlohmann::json::parse(out);
  };
  nlohmann::json off = at4({});
  nlohmann::json on = at4({"--batch-wait-timeout-iters", "20", "--batch-wait-max-tokens-ratio",
                           "0.9"});
  CHECK(on["batch_wait_timeout_iters"] == 20);
  CHECK(on["batch_wait_max_tokens_ratio"] == 0.9);
  CHECK_FALSE(off.contains("batch_wait_timeout_iters"));
  // Markdown says so where it says how to launch the engine.
  REQUIRE(run(serve_args("llama-3.1-70b", "h200",
                         {"--engine", "trtllm", "--weights", "fp8", "--isl", "922", "--osl", "922",
                          "--concurrency", "4", "--batch-wait-timeout-iters", "20",
                          "--batch-wait-max-tokens-ratio", "0.9"}),
              out, err) == 0);
  CHECK(out.find("extra_llm_api_options: batch_wait_timeout_iters: 20, "
                 "batch_wait_max_tokens_ratio: 0.9") != std::string::npos);
  // A lone client has nothing decoding beside it; at four, a prompt waits for the timeout.
  CHECK(on["points"][0]["ttft_ms"] == off["points"][0]["ttft_ms"]);
  double tpot = off["points"][1]["tpot_ms"];
  CHECK(on["points"][1]["ttft_ms"].get<double>() - off["points"][1]["ttft_ms"].get<double>() >
        10 * tpot);
  struct refusal {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<refusal> refused = {
      {{"--engine", "vllm", "--concurrency", "4", "--batch-wait-timeout-iters", "20",
        "--batch-wait-max-tokens-ratio", "0.9"},
       "--batch-wait-timeout-iters: is TensorRT-LLM's scheduler option: give --engine trtllm"},
      {{"--engine", "trtllm", "--rate", "2", "--batch-wait-timeout-iters", "20",
        "--batch-wait-max-tokens-ratio", "0.9"},
       "--batch-wait-timeout-iters: is costed in the closed loop's steady state (--concurrency), "
       "not in the --rate / --trace / --simulate simulation"},
      {{"--engine", "trtllm", "--concurrency", "4", "--simulate", "--batch-wait-timeout-iters",
        "20", "--batch-wait-max-tokens-ratio", "0.9"},
       "--batch-wait-timeout-iters: is costed in the closed loop's steady state (--concurrency), "
       "not in the --rate / --trace / --simulate simulation"},
      {{"--engine", "trtllm", "--concurrency", "4", "--batch-wait-timeout-iters", "20"},
       "--batch-wait-max-tokens-ratio: give both above 0: a prompt is held until the iterations "
       "pass or the tokens reach the ratio, and either at 0 releases it at once"},
      {{"--engine", "trtllm", "--concurrency", "4", "--batch-wait-timeout-iters", "20",
        "--batch-wait-max-tokens-ratio", "1.5"},
       "--batch-wait-max-tokens-ratio: must be a fraction in [0, 1] of the step's token budget"},
      {{"--engine", "trtllm", "--concurrency", "4", "--batch-wait-timeout-iters", "-1",
        "--batch-wait-max-tokens-ratio", "0.5"},
       "--batch-wait-timeout-iters: must be at least 0, got -1"}};
  for (const refusal& r : refused) {
    std::vector<std::string> a = {"--isl", "1K", "--osl", "256"};
    a.insert(a.end(), r.args.begin(), r.args.end());
    CAPTURE(r.error);
    CHECK(run(serve_args("llama-3.1-70b", "h200", a), out, err) == 2);
    CHECK(err == r.error + "\n");
  }
}

TEST_CASE("serve --attention-dp-balance: TensorRT-LLM's hold across attention-DP ranks") {
  std::string out, err;
  auto at = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = {"--engine",      "trtllm", "--tp",     "8",   "--dp",  "8",
                                  "--ep",          "8",      "--isl",    "1K",  "--osl", "1K",
                                  "--concurrency", "1,8",    "--format", "json"};
    a.insert(a.end(), more.begin(), more.end());
    REQUIRE(run(serve_args("deepseek-v3", "b200", a), out, err) == 0);
    return nlohmann::json::parse(out);
  };
  nlohmann::json off = at({});
  nlohmann::json on = at({"--attention-dp-balance"});
  nlohmann::json quick = at({"--attention-dp-balance", "--attention-dp-balance-timeout-iters", "5",
                             "--attention-dp-balance-batching-iters", "0"});
  CHECK_FALSE(off.contains("attention_dp_balance"));
  CHECK(on["attention_dp_balance"]["timeout_iters"] == 50);  // the engine's defaults
  CHECK(on["attention_dp_balance"]["batching_wait_iters"] == 10);
  CHECK(quick["attention_dp_balance"]["timeout_iters"] == 5);
  nlohmann::json no_batching =
      at({"--attention-dp-balance", "--attention-dp-balance-batching-iters", "0"});
  // One client a rank: a rank that decodes nothing releases its prompt at once.
  CHECK(on["points"][0]["ttft_ms"] == off["points"][0]["ttft_ms"]);
  // Eight a rank: prompts wait decode steps for the other ranks, and less with a shorter timeout.
  double t_off = off["points"][1]["ttft_ms"], t_on = on["points"][1]["ttft_ms"],
         t_quick = quick["points"][1]["ttft_ms"];
  CHECK(t_on - t_off > 5 * off["points"][1]["tpot_ms"].get<double>());
  CHECK(t_quick > t_off);
  CHECK(t_quick < t_on);
  // The batching wait after every rank has a prompt adds to the hold.
  CHECK(no_batching["points"][1]["ttft_ms"].get<double>() < t_on);
  REQUIRE(run(serve_args("deepseek-v3", "b200",
                         {"--engine", "trtllm", "--tp", "8", "--dp", "8", "--ep", "8", "--isl",
                          "1K", "--osl", "1K", "--concurrency", "8", "--attention-dp-balance"}),
              out, err) == 0);
  CHECK(out.find("extra_llm_api_options: attention_dp_config: {enable_balance: true, "
                 "timeout_iters: 50, batching_wait_iters: 10}") != std::string::npos);
  struct refusal {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<refusal> refused = {
      {{"--engine", "vllm", "--dp", "8", "--concurrency", "4", "--attention-dp-balance"},
       "--attention-dp-balance: is TensorRT-LLM's scheduler option: give --engine trtllm"},
      {{"--engine", "trtllm", "--dp", "1", "--concurrency", "4", "--attention-dp-balance"},
       "--attention-dp-balance: balances the prompts of attention-DP ranks: give --dp (2 or "
       "more) with --tp, as trtllm-serve's enable_attention_dp runs them"},
      {{"--engine", "trtllm", "--dp", "8", "--rate", "2", "--attention-dp-balance"},
       "--attention-dp-balance: is costed in the closed loop's steady state (--concurrency), not "
       "in the --rate / --trace / --simulate simulation"},
      {{"--engine", "trtllm", "--dp", "8", "--concurrency", "4", "--simulate",
        "--attention-dp-balance"},
       "--attention-dp-balance: is costed in the closed loop's steady state (--concurrency), not "
       "in the --rate / --trace / --simulate simulation"},
      // TensorRT-LLM's batch wait holds prompts only without attention DP.
      {{"--engine", "trtllm", "--dp", "8", "--concurrency", "4", "--attention-dp-balance",
        "--batch-wait-timeout-iters", "20", "--batch-wait-max-tokens-ratio", "0.9"},
       "--batch-wait-timeout-iters: TensorRT-LLM holds prompts so only without attention DP "
       "(--dp 1); its ranks are balanced with --attention-dp-balance"},
      {{"--engine", "trtllm", "--dp", "8", "--concurrency", "4",
        "--attention-dp-balance-timeout-iters", "60"},
       "--attention-dp-balance-timeout-iters: sets a wait of the balance: give "
       "--attention-dp-balance"},
      {{"--engine", "trtllm", "--dp", "8", "--concurrency", "4", "--attention-dp-balance",
        "--attention-dp-balance-batching-iters", "-1"},
       "--attention-dp-balance-batching-iters: must be at least 0, got -1"}};
  for (const refusal& r : refused) {
    std::vector<std::string> a = {"--tp", "8", "--ep", "8", "--isl", "1K", "--osl", "256"};
    a.insert(a.end(), r.args.begin(), r.args.end());
    CAPTURE(r.error);
    CHECK(run(serve_args("deepseek-v3", "b200", a), out, err) == 2);
    CHECK(err == r.error + "\n");
  }
}

TEST_CASE("lists: an empty item in any list option is refused; spaces around items are not read") {
  std::string out, err;
  struct refusal {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<refusal> refused = {
      {{"state", "--model", "qwen3-8b,,qwen3-32b", "--length", "8K"},
       "--model: 'qwen3-8b,,qwen3-32b' has an empty item: separate the values by single commas, "
       "e.g. qwen3-8b,qwen3-32b"},
      {{"state", "--model", "qwen3-8b", "--length", "8K,,16K"},
       "--length: '8K,,16K' has an empty item: separate the values by single commas, e.g. 4K,8K"},
      {{"report", "--model", "qwen3-8b", "--gpu", "h100-sxm,,h200"},
       "--gpu: 'h100-sxm,,h200' has an empty item: separate the values by single commas, e.g. "
       "h100-sxm,h200"},
      {{"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--max-model-len", "8K",
        "--kv-memory", "18GiB,"},
       "--kv-memory: '18GiB,' has an empty item: separate the values by single commas, e.g. "
       "18.69GiB,18.5GiB"}};
  for (const refusal& r : refused) {
    CAPTURE(r.error);
    CHECK(run(r.args, out, err) == 2);
    CHECK(err == r.error + "\n");
  }
  CHECK(
      run(serve_args("qwen3-8b", "h100-sxm",
                     {"--isl", "1K", "--osl", "256", "--concurrency", "1, 8", "--format", "json"}),
          out, err) == 0);
  CHECK(nlohmann::json::parse(out)["points"].size() == 2);
}

TEST_CASE("options: a value typed empty is named, never read as the option left unset") {
  std::string out, err;
  std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      // Empty --concurrency beside --rate ran the rate, and empty --gpu the default GPU.
      {serve_args("qwen3-8b", "h100-sxm",
                  {"--isl", "1K", "--osl", "256", "--rate", "1", "--concurrency", ""}),
       "--concurrency: is empty: give a value (`calc serve --help` says what it takes)"},
      {serve_args("qwen3-8b", "h100-sxm", {"--isl", "1K", "--osl", "256", "--trace", " "}),
       "--trace: is empty: give a value (`calc serve --help` says what it takes)"},
      {{"report", "--model", "qwen3-8b", "--gpu", ""},
       "--gpu: is empty: give a value (`calc report --help` says what it takes)"},
      {{"plan", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--sla", "ttft=1000,tpot=50", "--isl",
        "1K", "--osl", "1K", "--concurrency", ""},
       "--concurrency: is empty: give a value (`calc plan --help` says what it takes)"},
      // A whole number past 64 bits is quoted as typed, not as the int64 CLI11 clamps it to.
      {serve_args("qwen3-8b", "h100-sxm",
                  {"--isl", "99999999999999999999", "--osl", "256", "--concurrency", "1"}),
       "--isl: '99999999999999999999' does not fit in 64 bits"},
      {serve_args(
           "qwen3-8b", "h100-sxm",
           {"--isl", "1K", "--osl", "256", "--concurrency", "1", "--tp", "-99999999999999999999"}),
       "--tp: '-99999999999999999999' does not fit in 64 bits"},
      // CLI11 reads integers in base 0: hex overflows the same way.
      {serve_args(
           "qwen3-8b", "h100-sxm",
           {"--isl", "1K", "--osl", "256", "--concurrency", "1", "--tp", "0x99999999999999999999"}),
       "--tp: '0x99999999999999999999' does not fit in 64 bits"},
      // `--gpu=` would take the next word as its value; a validated option would answer in
      // CLI11's words.
      {{"serve", "--model", "qwen3-8b", "--gpu=", "--isl", "1K", "--osl", "256", "--concurrency",
        "1"},
       "--gpu: is empty: give a value (`calc serve --help` says what it takes)"},
      {serve_args("qwen3-8b", "h100-sxm",
                  {"--isl", "1K", "--osl", "256", "--concurrency", "1", "-f", ""}),
       "-f: is empty: give a value (`calc serve --help` says what it takes)"}};
  for (const auto& r : refused) {  // not a structured binding: clang's CAPTURE cannot take one
    CAPTURE(r.second);
    CHECK(run(r.first, out, err) == 2);
    CHECK(err == r.second + "\n");
  }
  // The largest int64 itself is a number CLI11 reads: the option's own limit answers it.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--concurrency", "1", "--tp",
                        "9223372036854775807"}),
            out, err) == 2);
  CHECK(err == "--tp: 9223372036854775807 is more than the limit of 4096 cards\n");
  // An unsigned option (--seed) holds all 64 bits.
  CHECK(run(serve_args("qwen3-8b", "h100-sxm",
                       {"--isl", "1K", "--osl", "256", "--rate", "1", "--requests", "20", "--seed",
                        "18446744073709551615", "--format", "json"}),
            out, err) == 0);
}

TEST_CASE("plan --sla options: targets once each, the load's sign, plain plan's options refused") {
  std::string out, err;
  std::vector<std::string> base = {"plan", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl",
                                   "1024", "--osl", "256"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return run(a, out, err);
  };
  CHECK(with({"--sla", "ttft=1000,tpot=30,ttft=5", "--rate", "1"}) == 2);
  CHECK(err == "--sla: ttft is given twice\n");
  CHECK(with({"--sla", "ttft=1000, tpot=30", "--rate", "1", "--format", "json"}) == 0);
  CHECK(nlohmann::json::parse(out)["sla"]["tpot_ms"] == 30);
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "-2"}) == 2);
  CHECK(err == "--rate: -2 is not a positive number of requests per second\n");
  // A typed 0 is a rate, refused as one, not read as "no --rate".
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "0"}) == 2);
  CHECK(err == "--rate: 0 is not a positive number of requests per second\n");
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "0", "--concurrency", "8"}) == 2);
  CHECK(err == "--rate: 0 is not a positive number of requests per second\n");
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "1", "--requests", "4"}) == 2);
  CHECK(err == "--requests: is not read with --sla: give the load as --rate R or --concurrency C\n");
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "1", "--length", "4K"}) == 2);
  CHECK(err == "--length: is not read with --sla: give --isl N --osl N\n");
  // The same option as the engines spell it is named as typed.
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "1", "--max-model-len", "4K"}) == 2);
  CHECK(err == "--max-model-len: is not read with --sla: give --isl N --osl N\n");
  // An empty target was dropped: ttft=500,,tpot=30 planned as if the comma were single.
  CHECK(with({"--sla", "ttft=1000,,tpot=30", "--rate", "1"}) == 2);
  CHECK(err ==
        "--sla: 'ttft=1000,,tpot=30' has an empty item: separate the values by single commas, "
        "e.g. ttft=500,tpot=30\n");
  CHECK(with({"--sla", "ttft=1000,tpot=30,", "--rate", "1"}) == 2);
  CHECK(err.rfind("--sla: 'ttft=1000,tpot=30,' has an empty item", 0) == 0);
  CHECK(with({"--sla", "ttft=1000,tpot=30", "--rate", "1", "--node-gpus", "0"}) == 2);
  CHECK(err == "--node-gpus: must be at least 1, got 0\n");
  // TensorRT-LLM, which serve times, is planned too; plain plan still refuses it.
  REQUIRE(with({"--sla", "ttft=1000,tpot=30", "--rate", "5", "--engine", "trtllm", "--format",
                "json"}) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["engine"] == "trtllm");
  CHECK(j["launch_flags"].get<std::string>().rfind("--tp_size ", 0) == 0);
  CHECK(run({"plan", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "4K", "--requests",
             "4", "--engine", "trtllm"},
            out, err) == 2);
  CHECK(err == "--engine: trtllm is taken only with --sla (plan's KV rules cover vllm and sglang)\n");
}

TEST_CASE("plan --sla: an option of plain plan's engine question is refused, not ignored") {
  std::string out, err;
  // --block-size 32 would give the same plan as without it (the time model pages by the
  // engine's own block); the refusal names the option by its first spelling.
  CHECK(run({"plan", "--sla", "ttft=3000,tpot=40", "--rate", "2", "--isl", "1K", "--osl", "256",
             "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--block-size", "32"},
            out, err) == 2);
  CHECK(err.rfind("--page-tokens: is not read with --sla", 0) == 0);
  // What it reads runs: the engine's batching limits among them.
  CHECK(run({"plan", "--sla", "ttft=3000,tpot=40", "--rate", "2", "--isl", "1K", "--osl", "256",
             "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--max-num-seqs",
             "64", "--kv", "fp8", "--node-gpus", "4", "--format", "json"},
            out, err) == 0);
}

TEST_CASE("serve, plan --sla, report: the engine's memory fraction sizes the KV pool") {
  // vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static were plain plan's and
  // capacity's only: serve refused them and report's load chart kept the default pool.
  std::string out, err;
  auto pool = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = {"serve", "--model",    "llama-3.1-8b", "--gpu",    "h100-sxm",
                                  "--isl", "1K",         "--osl",        "1K",       "--rate",
                                  "1",     "--requests", "20",           "--format", "json"};
    a.insert(a.end(), more.begin(), more.end());
    REQUIRE(run(a, out, err) == 0);
    auto j = nlohmann::json::parse(out);
    return std::pair{j["points"][0]["kv_pool_bytes"].get<double>(),
                     j["launch_flags"].get<std::string>()};
  };
  auto [vllm_default, flags] = pool({"--engine", "vllm"});
  auto [vllm_half, half_flags] = pool({"--engine", "vllm", "--gpu-memory-utilization", "0.5"});
  // 0.4 of the card (80 GB as sold, 79.6 GiB visible) less, the rest unchanged.
  CHECK(vllm_default - vllm_half ==
        doctest::Approx(0.4 * static_cast<double>(engine_visible_memory(find_gpu("h100-sxm"))))
            .epsilon(1e-6));
  CHECK(flags.find("--gpu-memory-utilization") == std::string::npos);
  CHECK(half_flags.find("--gpu-memory-utilization 0.5") != std::string::npos);
  auto [sglang_default, f1] = pool({"--engine", "sglang"});
  auto [sglang_typed, f2] = pool({"--engine", "sglang", "--mem-fraction-static", "0.6"});
  CHECK(sglang_typed < sglang_default);
  CHECK(f2.find("--mem-fraction-static 0.6") != std::string::npos);
  // TensorRT-LLM's fraction is of what the weights leave (free_gpu_memory_fraction): at 0.45
  // the pool is half its default 0.9's, on trtllm-serve's launch line.
  auto [trt_default, f3] = pool({"--engine", "trtllm"});
  auto [trt_half, f4] = pool({"--engine", "trtllm", "--kv-cache-free-gpu-memory-fraction", "0.45"});
  CHECK(trt_half == doctest::Approx(trt_default / 2).epsilon(1e-9));
  CHECK(f3.find("--kv_cache_free_gpu_memory_fraction") == std::string::npos);
  CHECK(f4.find("--kv_cache_free_gpu_memory_fraction 0.45") != std::string::npos);
  // Each engine's own knob, in (0, 1].
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--engine", "sglang", "--gpu-memory-utilization", "0.5"},
            "--gpu-memory-utilization: is vllm's knob"},
           {{"--engine", "trtllm", "--gpu-memory-utilization", "0.5"},
            "--gpu-memory-utilization: is vllm's knob"},
           {{"--mem-fraction-static", "0.5"}, "--mem-fraction-static: is sglang's knob"},
           {{"--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization: must be in (0, 1]"},
           {{"--kv-cache-free-gpu-memory-fraction", "0.5"},
            "--kv-cache-free-gpu-memory-fraction: is trtllm's knob"},
           {{"--engine", "trtllm", "--kv-cache-free-gpu-memory-fraction", "0"},
            "--kv-cache-free-gpu-memory-fraction: must be in (0, 1]"}}) {
    std::vector<std::string> a = {"serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                                  "--isl", "1K",      "--osl",        "1K",    "--concurrency",
                                  "8"};
    a.insert(a.end(), args.begin(), args.end());
    CHECK(run(a, out, err) == 2);
    CHECK_MESSAGE(err.rfind(message, 0) == 0, err);
  }
  // plan --sla: less memory never needs fewer GPUs.
  auto gpus = [&](const char* fraction) {
    REQUIRE(run({"plan", "--sla", "ttft=3000,tpot=60", "--rate", "40", "--isl", "8K", "--osl", "1K",
                 "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpu-memory-utilization",
                 fraction, "--format", "json"},
                out, err) == 0);
    return nlohmann::json::parse(out)["gpus"].get<std::int64_t>();
  };
  CHECK(gpus("0.6") >= gpus("0.95"));
  auto trt_gpus = [&](const char* fraction) {
    REQUIRE(run({"plan", "--sla", "ttft=3000,tpot=60", "--rate", "40", "--isl", "8K", "--osl", "1K",
                 "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--engine", "trtllm",
                 "--kv-cache-free-gpu-memory-fraction", fraction, "--format", "json"},
                out, err) == 0);
    auto j = nlohmann::json::parse(out);
    CHECK(j["launch_flags"].get<std::string>().find(
              std::string("--kv_cache_free_gpu_memory_fraction ") + fraction) != std::string::npos);
    return j["gpus"].get<std::int64_t>();
  };
  CHECK(trt_gpus("0.3") >= trt_gpus("0.9"));
  // Plain plan (KV rules of vLLM and SGLang) does not read it: refused, not ignored.
  CHECK(run({"plan", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--requests", "4", "--length",
             "1K", "--kv-cache-free-gpu-memory-fraction", "0.5"},
            out, err) == 2);
  CHECK(err.rfind("--kv-cache-free-gpu-memory-fraction: applies only with --sla", 0) == 0);
  // trtllm-serve's own spelling is the same option.
  auto [trt_pasted, f5] =
      pool({"--engine", "trtllm", "--kv_cache_free_gpu_memory_fraction", "0.45"});
  CHECK(trt_pasted == trt_half);
  // report: the load chart's pool follows the fraction its capacity rows take.
  auto chart = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = {"report",   "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                                  "--engine", "vllm",    "--format",     "json"};
    a.insert(a.end(), more.begin(), more.end());
    REQUIRE(run(a, out, err) == 0);
    auto load = nlohmann::json::parse(out)["models"][0]["load"];
    REQUIRE(!load.empty());
    return load.back()["concurrency"].get<std::int64_t>();  // the most clients charted
  };
  CHECK(chart({"--gpu-memory-utilization", "0.5"}) < chart({}));
}

TEST_CASE("calibrate: a user's fit keeps the base file's entries for what its rows lack") {
  // Forty vLLM Llama-3.1-70B runs on H200 refit hopper/vllm and the pooled entries; B200 SGLang
  // still answers from the shipped blackwell/sglang entry, not from a pool of dense vLLM rows.
  std::ifstream in(std::string(CALC_SOURCE_DIR) + "/tests/fixtures/latency/measured.csv");
  REQUIRE(in);
  std::string header, line, rows;
  std::getline(in, header);
  int n = 0;
  while (n < 40 && std::getline(in, line))
    if (line.find(",vllm,") != std::string::npos && line.find("h200_sxm") != std::string::npos &&
        line.find("Llama-3.1-70B") != std::string::npos) {
      rows += line + "\n";
      ++n;
    }
  REQUIRE(n == 40);
  std::string csv = write_temp("calc_user_runs.csv", header + "\n" + rows);
  std::string yaml = write_temp("calc_user_cal.yaml", "");
  std::string out, err;
  REQUIRE(run({"calibrate", "--measurements", csv, "--out", yaml, "--format", "json"}, out, err) ==
          0);
  auto fit = nlohmann::json::parse(out);
  CHECK(fit["entries_kept_from_base"].get<std::int64_t>() >= 4);
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=50", "--concurrency", "64", "--isl", "1024",
               "--osl", "1024", "--model", "llama-3.1-8b", "--gpu", "b200", "--engine", "sglang",
               "--calibration", yaml, "--format", "json"},
              out, err) == 0);
  CHECK(nlohmann::json::parse(out)["calibration"]["entry"] == "blackwell/sglang");
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=50", "--concurrency", "64", "--isl", "1024",
               "--osl", "1024", "--model", "llama-3.1-8b", "--gpu", "h200", "--calibration", yaml,
               "--format", "json"},
              out, err) == 0);
  CHECK(nlohmann::json::parse(out)["calibration"]["entry"] == "hopper/vllm");
  // Dense rows leave the expert popularity where the base file had it.
  std::ifstream y(yaml);
  std::stringstream text;
  text << y.rdbuf();
  CHECK(text.str().find("the rows hold no mixture-of-experts model") != std::string::npos);
  CHECK(text.str().find("kept from models/calibration/default.yaml") != std::string::npos);
  // A hand-edited file naming a (family, engine) twice: lookup would take the first silently.
  std::string all = text.str();
  auto first = all.find("  - family: hopper\n    engine: vllm");
  REQUIRE(first != std::string::npos);
  auto next = all.find("  - family:", first + 10);
  REQUIRE(next != std::string::npos);
  std::string twice =
      write_temp("calc_user_twice.yaml",
                 all.substr(0, next) + all.substr(first, next - first) + all.substr(next));
  CHECK(run({"serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "1K",
             "--concurrency", "1", "--calibration", twice},
            out, err) == 2);
  CHECK(err.find("a second entry for family hopper and engine vllm") != std::string::npos);
  // A file without the measured times' columns says so.
  std::string untimed;
  for (const std::string& text_line : {header, rows.substr(0, rows.find('\n'))}) {
    std::string cut = text_line;
    for (int drop = 0; drop < 2; ++drop) cut = cut.substr(0, cut.rfind(','));
    untimed += cut + "\n";
  }
  std::string bare = write_temp("calc_user_untimed.csv", untimed);
  CHECK(run({"calibrate", "--measurements", bare}, out, err) == 2);
  CHECK(err.find("its header lacks silicon_ttft_ms or silicon_tpot_ms") != std::string::npos);
}

TEST_CASE("plan --sla --rate: the plan's point is what serve --rate simulates on its layout") {
  // Arrivals at a rate have no opening burst and no cohorts in step with it (the fitted
  // closed-loop terms): with them, TTFT-bound rate plans asked for 1.6-5x the GPUs that calc's
  // own --rate simulation shows meeting the targets (26 H200s here, where 12 do).
  std::string out, err;
  REQUIRE(
      run({"plan", "--sla", "ttft=300,tpot=30", "--rate", "20", "--isl", "1024", "--osl", "1024",
           "--model", "llama-3.1-70b", "--gpu", "h200", "--weights", "fp8", "--format", "json"},
          out, err) == 0);
  auto plan = nlohmann::json::parse(out);
  REQUIRE(plan["feasible"] == true);
  double share = 20.0 / plan["instances"].get<double>();
  REQUIRE(run({"serve",
               "--model",
               "llama-3.1-70b",
               "--gpu",
               "h200",
               "--weights",
               "fp8",
               "--tp",
               std::to_string(plan["tp"].get<std::int64_t>()),
               "--pp",
               std::to_string(plan["pp"].get<std::int64_t>()),
               "--isl",
               "1024",
               "--osl",
               "1024",
               "--rate",
               std::to_string(share),
               "--requests",
               "3000",
               "--format",
               "json"},
              out, err) == 0);
  auto sim = nlohmann::json::parse(out)["points"][0];
  CHECK(plan["ttft_ms"].get<double>() ==
        doctest::Approx(sim["ttft_ms"].get<double>()).epsilon(0.25));
  CHECK(plan["tpot_ms"].get<double>() ==
        doctest::Approx(sim["tpot_ms"].get<double>()).epsilon(0.1));
  CHECK(sim["ttft_ms"].get<double>() <= 300);
  CHECK(sim["tpot_ms"].get<double>() <= 30 * 1.05);
}

TEST_CASE("plan --sla: the numbers of a reason read on their side of the target they miss") {
  // 95 L40S serve 4.99... requests/s: "at most 5 requests/s, below 5" read as a contradiction.
  std::string out, err;
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=40", "--rate", "5", "--isl", "1024", "--osl",
               "256", "--model", "llama-3.1-70b", "--gpu", "l40s", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  std::string reason = j["reason"];
  auto at = reason.find("at most ");
  REQUIRE(at != std::string::npos);
  double most = std::stod(reason.substr(at + 8));
  CHECK(most < 5);
  // Infeasible by a hair: DeepSeek-V3's first token on A10s misses its edge (read from a target
  // far below it, since a refit moves the edge) by under a ms, and read "below the fastest first
  // token any layout reaches (1.93e+03 ms)", and then "(1925 ms)".
  auto plan_at = [&](const std::string& ttft, std::int64_t isl) {
    REQUIRE(run({"plan", "--sla", "ttft=" + ttft + ",tpot=50", "--rate", "1", "--isl",
                 std::to_string(isl), "--osl", "512", "--model", "deepseek-v3", "--gpu", "a10",
                 "--format", "json"},
                out, err) == 0);
    j = nlohmann::json::parse(out);
    return j["feasible"] == false && j["binding"] == "ttft";
  };
  auto edge_of = [&](const std::string& ttft, std::int64_t isl) {
    REQUIRE(plan_at(ttft, isl));
    reason = j["reason"].get<std::string>();
    at = reason.find("reaches (");
    REQUIRE(at != std::string::npos);
    return std::stod(reason.substr(at + 9));
  };
  // Far from the target the edge prints to the ms. Where it rounds down (the first token still
  // binds at the printed value), that value as the target needs more digits to read below the
  // edge. Whether it rounds down turns on the edge's last digits, which a refit moves: prompts a
  // token longer move the edge until one does.
  bool tried = false;
  for (std::int64_t isl = 2048; isl < 2080 && !tried; ++isl) {
    double printed = edge_of("100", isl);
    REQUIRE(printed > 500);
    std::string hair = fmt::format("{:.0f}", printed);
    if (!plan_at(hair, isl)) continue;
    tried = true;
    CAPTURE(isl);
    CHECK(edge_of(hair, isl) > printed);
    CHECK(edge_of(hair, isl) < printed + 1);
  }
  CHECK(tried);
  CHECK(reason.find("e+") == std::string::npos);
  // No layout holds the model at all: memory binds, not "tpot 1000 ms is below the fastest step
  // any layout reaches (inf ms)".
  REQUIRE(run({"plan", "--sla", "ttft=100000,tpot=1000", "--rate", "1", "--isl", "1K", "--osl",
               "1K", "--model", "kimi-k2-instruct", "--gpu", "t4", "--max-gpus", "8", "--format",
               "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["feasible"] == false);
  CHECK(j["binding"] == "memory");
  CHECK(j["reason"].get<std::string>().find("inf") == std::string::npos);
  // A model no layout of fewer GPUs holds: said so, not "7 GPUs hold at most 0 clients".
  REQUIRE(run({"plan", "--sla", "ttft=3000,tpot=50", "--concurrency", "100", "--isl", "1K",
               "--osl", "1K", "--model", "kimi-k2-instruct", "--gpu", "gb200", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  REQUIRE(j["gpus"] == 8);
  CHECK(j["reason"] ==
        "no layout of 7 GPUs or fewer meets the targets (the smallest that does has 8)");
}

TEST_CASE("plan --sla fed back to serve: a vLLM MoE with DP attention, TTFT and TPOT alike") {
  std::string out, err;
  // A plan for clients feeds back exactly (a plan for a rate is the open loop's, which
  // `serve --rate` simulates: "plan --sla --rate" above).
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=25", "--concurrency", "512", "--isl", "1024",
               "--osl", "1024", "--model", "gpt-oss-120b", "--gpu", "h200", "--engine", "vllm",
               "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  for (const char* key : {"gpus", "tp", "pp", "ep", "dp", "feasible", "ttft_ms", "tpot_ms",
                          "launch_flags", "concurrency_per_attention_group"})
    CHECK_MESSAGE(j.contains(key), key);
  std::int64_t dp = j["dp"].get<std::int64_t>();
  REQUIRE(dp > 1);  // the case this checks: vLLM's --data-parallel-size with experts split
  auto flag = [&](const char* key) { return std::to_string(j[key].get<std::int64_t>()); };
  REQUIRE(run(serve_args("gpt-oss-120b", "h200",
                         {"--engine", "vllm", "--tp", flag("tp"), "--dp", flag("dp"), "--ep",
                          flag("ep"), "--pp", flag("pp"), "--isl", "1024", "--osl", "1024",
                          "--concurrency", flag("concurrency_per_attention_group"), "--format",
                          "json"}),
              out, err) == 0);
  auto s = nlohmann::json::parse(out);
  CHECK(s["launch_flags"] == j["launch_flags"]);
  auto p = s["points"][0];
  CHECK(p["ttft_ms"].get<double>() == doctest::Approx(j["ttft_ms"].get<double>()).epsilon(1e-9));
  CHECK(p["tpot_ms"].get<double>() == doctest::Approx(j["tpot_ms"].get<double>()).epsilon(1e-9));
  for (const char* key : {"concurrency", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms",
                          "output_tokens_per_s", "output_tokens_per_s_per_gpu",
                          "output_tokens_per_s_per_user", "requests_per_s", "kv_pool_fits"})
    CHECK_MESSAGE(p.contains(key), key);
  for (const char* key :
       {"total_ms", "weights_ms", "kv_ms", "compute_ms", "communication_ms", "overhead_ms"})
    CHECK_MESSAGE(p["step"].contains(key), key);
}

TEST_CASE("plan --sla fed back to serve: every bundled model on each engine") {
  // "The commands work on every bundled model": a plan is feasible for each (targets any
  // bundled model meets on H200s within the search), and its operating point is what serve
  // prints on the layout the plan names. A plan whose layout serve refuses, or whose TTFT /
  // TPOT serve computes otherwise, fails here.
  std::string out, err;
  for (const std::string& m : bundled_models()) {
    for (const char* engine : {"vllm", "sglang", "trtllm"}) {
      std::string what = fmt::format("{} on {}", m, engine);
      REQUIRE_MESSAGE(run({"plan", "--sla", "ttft=3000,tpot=60", "--concurrency", "32", "--isl",
                           "2048", "--osl", "256", "--model", m, "--gpu", "h200", "--engine",
                           engine, "--format", "json"},
                          out, err) == 0,
                      what, err);
      auto j = nlohmann::json::parse(out);
      REQUIRE_MESSAGE(j["feasible"] == true, what, ": ", j["reason"].get<std::string>());
      double ttft = j["ttft_ms"].get<double>(), tpot = j["tpot_ms"].get<double>();
      CHECK_MESSAGE((ttft > 0 && ttft <= 3000 && tpot > 0 && tpot <= 60), what);
      auto flag = [&](const char* key) { return std::to_string(j[key].get<std::int64_t>()); };
      REQUIRE_MESSAGE(run(serve_args(m, "h200",
                                     {"--engine", engine, "--tp", flag("tp"), "--dp", flag("dp"),
                                      "--ep", flag("ep"), "--pp", flag("pp"), "--isl", "2048",
                                      "--osl", "256", "--concurrency",
                                      flag("concurrency_per_attention_group"), "--format", "json"}),
                          out, err) == 0,
                      what, err);
      auto s = nlohmann::json::parse(out);
      CHECK_MESSAGE(s["launch_flags"] == j["launch_flags"], what);
      auto p = s["points"][0];
      CHECK_MESSAGE(p["ttft_ms"].get<double>() == doctest::Approx(ttft).epsilon(1e-9), what);
      CHECK_MESSAGE(p["tpot_ms"].get<double>() == doctest::Approx(tpot).epsilon(1e-9), what);
    }
  }
}

TEST_CASE("plan --sla fed back to serve: every catalogue card on each engine") {
  // "... and GPU": each card of the catalogue either runs the engine, where a plan for a small
  // model meets loose targets and serve on its layout prints the plan's point and a simulation
  // of its load, or refuses it (TensorRT-LLM off NVIDIA) in the one line engine_gpu_problem
  // gives, with exit 2 from serve and plan alike.
  std::string out, err;
  for (const gpu_spec& g : gpu_catalogue()) {
    for (const char* engine : {"vllm", "sglang", "trtllm"}) {
      std::string what = fmt::format("qwen3-8b on {} with {}", g.name, engine);
      std::vector<std::string> plan = {"plan",          "--sla",    "ttft=5000,tpot=200",
                                       "--concurrency", "16",       "--isl",
                                       "1024",          "--osl",    "256",
                                       "--model",       "qwen3-8b", "--gpu",
                                       g.name,          "--engine", engine,
                                       "--format",      "json"};
      std::string problem = engine_gpu_problem(find_engine(engine), g);
      if (!problem.empty()) {
        CHECK_MESSAGE(run(plan, out, err) == 2, what);
        CHECK_MESSAGE(err == "--engine: " + problem + "\n", what);
        CHECK_MESSAGE(run(serve_args("qwen3-8b", g.name,
                                     {"--engine", engine, "--isl", "1024", "--osl", "256",
                                      "--concurrency", "16"}),
                          out, err) == 2,
                      what);
        CHECK_MESSAGE(err == "--engine: " + problem + "\n", what);
        continue;
      }
      REQUIRE_MESSAGE(run(plan, out, err) == 0, what, err);
      auto j = nlohmann::json::parse(out);
      REQUIRE_MESSAGE(j["feasible"] == true, what, ": ", j["reason"].get<std::string>());
      double ttft = j["ttft_ms"].get<double>(), tpot = j["tpot_ms"].get<double>();
      CHECK_MESSAGE((ttft > 0 && ttft <= 5000 && tpot > 0 && tpot <= 200), what);
      auto flag = [&](const char* key) { return std::to_string(j[key].get<std::int64_t>()); };
      std::vector<std::string> layout = {
          "--engine", engine,     "--tp",  flag("tp"), "--dp",  flag("dp"), "--ep",     flag("ep"),
          "--pp",     flag("pp"), "--isl", "1024",     "--osl", "256",      "--format", "json"};
      std::vector<std::string> steady = layout;
      steady.insert(steady.end(), {"--concurrency", flag("concurrency_per_attention_group")});
      REQUIRE_MESSAGE(run(serve_args("qwen3-8b", g.name, steady), out, err) == 0, what, err);
      auto p = nlohmann::json::parse(out)["points"][0];
      CHECK_MESSAGE(p["ttft_ms"].get<double>() == doctest::Approx(ttft).epsilon(1e-9), what);
      CHECK_MESSAGE(p["tpot_ms"].get<double>() == doctest::Approx(tpot).epsilon(1e-9), what);
      // The same card under Poisson arrivals: a finite simulated point, every request served.
      std::vector<std::string> poisson = layout;
      poisson.insert(poisson.end(), {"--rate", "2", "--requests", "50"});
      REQUIRE_MESSAGE(run(serve_args("qwen3-8b", g.name, poisson), out, err) == 0, what, err);
      auto r = nlohmann::json::parse(out)["points"][0];
      for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms", "output_tokens_per_s"}) {
        double v = r[key].get<double>();
        CHECK_MESSAGE((std::isfinite(v) && v > 0), what, " ", key);
      }
      CHECK_MESSAGE(r["requests"] == 50, what);
    }
  }
}

TEST_CASE("serve measured CSV: a byte-order mark, rows past the limits, layouts no engine runs") {
  std::string bom = write_temp(
      "calc_in_bom.csv",
      "\xEF\xBB\xBF" + kHeader + "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n");
  auto rows = read_measured(bom);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].id == "a");
  std::string f = write_temp("calc_in_rows.csv",
                             kHeader +
                                 "wide,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,4096,1,,,50,7\n"
                                 "odd,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,3,1,,,50,7\n"
                                 "many,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,1e12,1,1,,,50,7\n"
                                 "ok,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,8,1,,,50,7\n");
  rows = read_measured(f);
  REQUIRE(rows.size() == 4);
  calibration cal = read_calibration(default_calibration_path());
  row_mapper mapper(cal);
  CHECK(mapper.map(rows[0]).error.rfind(
            "layout: the tp group of 4096 cards exceeds h100-sxm's NVLink domain of 8", 0) == 0);
  CHECK(mapper.map(rows[1]).error ==
        "deployment.layout: tp 3 does not divide the 32 heads of layer 0");
  CHECK(mapper.map(rows[2]).error == "batch_size: 1e12 is more than the limit of 4294967296");
  CHECK(mapper.map(rows[3]).error == "");
  // A model_path that is a file but no model: the row names the column and where it broke.
  std::string not_model = write_temp("calc_in_not_model.txt", "just words\n");
  std::string odd = write_temp(
      "calc_in_odd.csv",
      kHeader + "p," + "vllm," + not_model + ",h100_sxm,1024,128,4,1,1,,,50,7\n");
  rows = read_measured(odd);
  REQUIRE(rows.size() == 1);
  CHECK(mapper.map(rows[0]).error.rfind("model_path '" + not_model + "': " + not_model + ":1:", 0) ==
        0);
}

TEST_CASE("measured CSV: an optional kv_cache_dtype column prices the cache in the run's format") {
  // Llama-3.1-70B FP8 on one H200, 1024 + 8192 tokens at 32 clients: a BF16 cache holds fewer
  // than 32 whole requests (TensorRT-LLM reserves each one's whole length), an FP8 cache all.
  std::string row = ",trtllm,meta-llama/Llama-3.1-70B,h200_sxm,1024,8192,32,1,1,fp8,fp8,449,27,";
  std::string f = write_temp(
      "calc_in_kv.csv", kHeader.substr(0, kHeader.size() - 1) + ",kv_cache_dtype\n" + "none" + row +
                            "\n" + "auto" + row + "auto\n" + "fp8" + row + "fp8\n" + "e4m3" + row +
                            "FP8_E4M3\n" + "odd" + row + "fp7\n");
  auto rows = read_measured(f);
  REQUIRE(rows.size() == 5);
  calibration cal = read_calibration(default_calibration_path());
  row_mapper mapper(cal);
  std::vector<steady_state> at;
  for (int i = 0; i < 4; ++i) {
    mapped_row m = mapper.map(rows[i]);
    REQUIRE_MESSAGE(m.error.empty(), m.error);
    at.push_back(predict(m, cal));
  }
  CHECK(at[1].ttft_ms == at[0].ttft_ms);  // auto: the model's own format
  CHECK(at[3].ttft_ms == at[2].ttft_ms);  // the engines' spelling of FP8
  CHECK(at[3].tpot_ms == at[2].tpot_ms);
  // The BF16 pool caps the running requests, so new ones queue for seconds; FP8 runs them all.
  CHECK(at[0].ttft_ms > 10 * at[2].ttft_ms);
  CHECK(at[2].tpot_ms < at[0].tpot_ms * 1.05);
  CHECK(mapper.map(rows[4]).error == "kv_cache_dtype 'fp7': no calc format");
  // The engines' other spellings of a cache format (vLLM, SGLang) read as calc's.
  CHECK(engine_format_name("fp8_inc") == "fp8");
  CHECK(engine_format_name("fp4_e2m1") == "fp4");
  CHECK(engine_format_name("bfloat16") == "bf16");
  CHECK(engine_format_name("auto") == "auto");
}

TEST_CASE("measured rows: a client's lowest length is floor(0.8 n) exactly, as its floats give it") {
  // mean_length floors the double product as the client's int(len * 0.8) does; at 0.8 that is
  // the integer floor(4 n / 5) for every length calc takes (src/serve/measured.cpp says why).
  auto exact = [](std::int64_t n) { return (4 * n / 5 + n + 1) / 2; };
  std::int64_t wrong = 0;
  for (std::int64_t n = 1; n <= (1 << 20); ++n) wrong += mean_length(n, 0.8) != exact(n);
  for (std::int64_t n = limits::tokens - 100000; n <= limits::tokens; ++n)
    wrong += mean_length(n, 0.8) != exact(n);
  CHECK(wrong == 0);
  CHECK(mean_length(1024, 0.8) == 922);
  CHECK(mean_length(8192, 0.8) == 7373);
}

TEST_CASE("calibrate: nothing to fit is refused, not written as a fitted file") {
  std::string out, err;
  std::string none = write_temp("calc_in_none.csv", kHeader);
  CHECK(run({"calibrate", "--measurements", none}, out, err) == 2);
  CHECK(err == none + ": measurements: nothing to fit: it has no rows\n");
  std::string unmeasured = write_temp(
      "calc_in_unmeasured.csv",
      kHeader + "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,,\n");
  CHECK(run({"calibrate", "--measurements", unmeasured}, out, err) == 2);
  CHECK(err == unmeasured +
                   ": measurements: nothing to fit: no modelled row has both silicon_ttft_ms and "
                   "silicon_tpot_ms\n");
  std::string wide = write_temp(
      "calc_in_wide.csv",
      kHeader + "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,4096,1,,,50,7\n");
  CHECK(run({"calibrate", "--measurements", wide}, out, err) == 2);
  CHECK(err.rfind(wide + ": measurements: nothing to fit: calc models none of its 1 rows (the "
                         "first: layout: the tp group of 4096 cards",
                  0) == 0);
  // Evaluated, the same rows are each their own line, and the command answers.
  CHECK(run({"calibrate", "--evaluate", wide, "--format", "json"}, out, err) == 0);
  CHECK(nlohmann::json::parse(out)["rows"][0].contains("error"));
  // No row modelled is no error figure, not 0 %.
  CHECK(nlohmann::json::parse(out)["summary"]["all"]["tpot_median_pct"].is_null());
  CHECK(run({"calibrate", "--evaluate", wide}, out, err) == 0);
  CHECK(out.find("| **all** | 0 | - |") != std::string::npos);
  CHECK(run({"calibrate", "--evaluate", wide, "--out", "x.yaml"}, out, err) == 2);
  CHECK(err.rfind("--out: applies only with --measurements", 0) == 0);
  std::string one = write_temp(
      "calc_in_one.csv",
      kHeader + "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n");
  // Cross-validated, a fit records what it predicted without each GPU and model; rows of one GPU
  // and one model leave no fold anything to fit, so neither is run, nor recorded as if it were.
  std::string fitted = write_temp("calc_in_one_cv.yaml", "");
  REQUIRE(run({"calibrate", "--measurements", one, "--cross-validate", "--out", fitted}, out,
              err) == 0);
  CHECK(out.find("### Leave one GPU out (fit without the GPU, predict it)\n\nNot run: the rows "
                 "are of one GPU.") != std::string::npos);
  CHECK(out.find("Not run: the rows are of one GPU family.") != std::string::npos);
  CHECK(out.find("Not run: the rows are of one model.") != std::string::npos);
  calibration c = read_calibration(fitted);
  CHECK(c.held_out.empty());
  // The entry the row fitted has seen its model and GPU; the shipped file's entries kept for the
  // other families and engines keep what they had seen.
  const calibration shipped = read_calibration(default_calibration_path());
  for (const calibration_entry& e : c.entries) {
    CAPTURE(e.family + "/" + e.engine);
    if (e.family == "hopper" && e.engine == "vllm") {
      CHECK(e.measured_models == std::vector<std::string>{"llama-3.1-8b"});
      CHECK(e.measured_gpus == std::vector<std::string>{"h100-sxm"});
    }
    for (const calibration_entry& k : shipped.entries)
      if (k.family == e.family && k.engine == e.engine && e.source.starts_with("kept from"))
        CHECK(e.measured_gpus == k.measured_gpus);
  }
  REQUIRE(run({"calibrate", "--measurements", one, "--cross-validate", "--format", "json"}, out,
              err) == 0);
  CHECK(nlohmann::json::parse(out)["cross_validation"]["leave_one_gpu_out"].is_null());
}

TEST_CASE("serve --rate: a simulated point has the JSON fields of a steady one, its step the run's mean") {
  std::string out, err;
  REQUIRE(run(serve_args("llama-3.1-8b", "h100-sxm",
                         {"--isl", "1024", "--osl", "256", "--rate", "8", "--requests", "300",
                          "--format", "json"}),
              out, err) == 0);
  auto p = nlohmann::json::parse(out)["points"][0];
  for (const char* key : {"rate", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "output_tokens_per_s",
                          "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user",
                          "requests_per_s", "kv_pool_fits", "step", "steps"})
    CHECK_MESSAGE(p.contains(key), key);
  const auto& st = p["step"];
  double parts = st["weights_ms"].get<double>() + st["kv_ms"].get<double>() +
                 st["compute_ms"].get<double>() + st["communication_ms"].get<double>() +
                 st["overhead_ms"].get<double>();
  CHECK(parts == doctest::Approx(st["total_ms"].get<double>()));
  // A mean step lies between the lightest step (one decode token) and the heaviest (a chunk).
  CHECK(st["total_ms"].get<double>() > 0);
  CHECK(st["total_ms"].get<double>() < p["tpot"]["max"].get<double>() + p["ttft"]["max"].get<double>());
  // The steps fill at most the run: steps x mean step <= first arrival to last token.
  double busy = st["total_ms"].get<double>() * p["steps"].get<double>();
  double run_ms = 300 / p["requests_per_s"].get<double>() * 1e3;
  CHECK(busy <= run_ms * (1 + 1e-9));
  CHECK(busy > 0.5 * run_ms);  // 8 requests/s keeps this card busy most of the time
}

TEST_CASE(
    "vLLM's batch defaults by card: 2048 tokens and 256 sequences below 70 GiB and on A100s") {
  // `vllm serve` (EngineArgs.get_batch_defaults) keeps the smaller budget on cards under 70 GiB
  // as the runtime reports them and on any card named A100; serve and capacity (and plan --sla,
  // report, plan --engine, which share their paths) take the same, and a launch line names a
  // knob only where it departs from that card's default.
  std::string out, err;
  auto serve_on = [&](const std::string& gpu, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"serve", "--model",  "llama-3.1-8b", "--gpu", gpu,
                                     "--isl", "1024",     "--osl",        "128",   "--concurrency",
                                     "8",     "--format", "json"};
    args.insert(args.end(), more.begin(), more.end());
    REQUIRE(run(args, out, err) == 0);
    return nlohmann::json::parse(out);
  };
  for (const char* small : {"l40s", "rtx-4090", "a100-80gb", "a100-40gb"}) {
    CAPTURE(small);
    auto j = serve_on(small);
    CHECK(j["max_num_batched_tokens"] == 2048);
    CHECK(j["max_num_seqs"] == 256);
    CHECK(j["launch_flags"].get<std::string>().find("--max-num") == std::string::npos);
  }
  for (const char* large : {"h100-sxm", "h200", "a800-80gb", "mi300x"}) {
    CAPTURE(large);
    auto j = serve_on(large);
    CHECK(j["max_num_batched_tokens"] == 8192);
    CHECK(j["max_num_seqs"] == 1024);
  }
  // What the card's default is not goes into the launch line; SGLang keeps its own defaults.
  auto typed = serve_on("a100-80gb", {"--max-num-batched-tokens", "8192"});
  CHECK(typed["launch_flags"].get<std::string>().find("--max-num-batched-tokens 8192") !=
        std::string::npos);
  auto sglang = serve_on("l40s", {"--engine", "sglang"});
  CHECK(sglang["max_num_batched_tokens"] == 8192);
  CHECK(sglang["max_num_seqs"] == 4096);
  // On A100s the smaller cap binds: 300 clients run 256 at once, the same decode batch, and the
  // 44 beyond it wait for a slot (uncapped, the batch grows and nobody waits for one).
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--gpu", "a100-80gb", "--isl", "128", "--osl",
               "128", "--concurrency", "256,300", "--format", "json"},
              out, err) == 0);
  auto points = nlohmann::json::parse(out)["points"];
  CHECK(points[1]["tpot_ms"].get<double>() ==
        doctest::Approx(points[0]["tpot_ms"].get<double>()).epsilon(1e-9));
  CHECK(points[1]["ttft_ms"].get<double>() > 3 * points[0]["ttft_ms"].get<double>());
  // capacity --engine vllm sizes its profile run with the same defaults.
  REQUIRE(run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "a100-80gb",
               "--max-model-len", "8192", "--format", "json"},
              out, err) == 0);
  auto cap = nlohmann::json::parse(out)["budget"];
  CHECK(cap["batched_tokens"] == 2048);
  CHECK(cap["sampler_rows"] == 256);
  REQUIRE(run({"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
               "--max-model-len", "8192", "--format", "json"},
              out, err) == 0);
  cap = nlohmann::json::parse(out)["budget"];
  CHECK(cap["batched_tokens"] == 8192);
  CHECK(cap["sampler_rows"] == 1024);
  // ... and so does its sliding-window charge (window + one step's tokens): Gemma 3 on an A100
  // holds what it holds with --max-num-batched-tokens 2048 typed, more than at 8192.
  auto concurrency = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"capacity",       "--engine", "vllm",      "--model",
                                     "gemma-3-27b-it", "--gpu",    "a100-80gb", "--max-model-len",
                                     "32768",          "--format", "json"};
    args.insert(args.end(), more.begin(), more.end());
    REQUIRE(run(args, out, err) == 0);
    return nlohmann::json::parse(out)["max_concurrency"].get<double>();
  };
  double untyped = concurrency({});
  CHECK(untyped == concurrency({"--max-num-batched-tokens", "2048"}));
  CHECK(untyped > 1.5 * concurrency({"--max-num-batched-tokens", "8192"}));
}
