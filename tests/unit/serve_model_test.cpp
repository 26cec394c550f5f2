// Time under load (src/serve/): the step model takes its F and R from the tallies, the steady
// state and the simulation behave as a scheduler must (more load never makes a request faster),
// the SLA search is monotone, and bad inputs are refused with their location.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <tuple>

#include "plan/plan.h"
#include "serve/batching.h"
#include "serve/calibration.h"
#include "serve/measured.h"
#include "serve/simulate.h"
#include "serve/sla.h"
#include "serve/step.h"
#include "serve_support.h"
#include "spec/gpu_spec.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
using testing::error_of;
using testing::run;
using testing::write_temp;
using namespace calc::serve;
using testing::model;

namespace {

batching_config vllm(std::int64_t isl, std::int64_t osl) {
  return engine_batching(find_engine("vllm"), isl, osl, find_gpu("h200"));
}

}  // namespace

TEST_CASE("serve step: F and R per op come from the tallies, split over the TP ranks") {
  model m("llama-3.1-8b");
  gpu_spec h100 = find_gpu("h100-sxm");
  deployment one = make_deployment(m.g, h100, {});
  deployment four = make_deployment(m.g, h100, {.tp = 4});
  step_costs c1 = cost_step(one, {8, 2048, 0, 0});
  step_costs c4 = cost_step(four, {8, 2048, 0, 0});
  forward_tally f = tally_forward(m.g, make_call(*m.g.spec, 8, 2048, 1));
  state_tally st = tally_state(m.g, 2048, 8);
  auto op = [](const step_costs& c, op_class k) { return c.ops[static_cast<std::size_t>(k)]; };
  // Dense GEMMs: every matrix FLOP but attention and the head; attention decode reads the KV.
  CHECK(
      op(c1, op_class::dense_gemm).flops ==
      doctest::Approx((f.flops - f.interaction_flops - f.state_flops - f.vocab_flops).to_double()));
  CHECK(op(c1, op_class::attention_decode).bytes == doctest::Approx(st.decode_read.to_double()));
  CHECK(op(c1, op_class::dense_gemm).bytes ==
        doctest::Approx(tally_params(m.g).shared_read_bytes.to_double()));
  // TP 4: 8 KV heads split 4 ways, weights and FLOPs quartered, and an all-reduce appears.
  CHECK(op(c4, op_class::attention_decode).bytes ==
        doctest::Approx(op(c1, op_class::attention_decode).bytes / 4));
  CHECK(op(c4, op_class::dense_gemm).bytes ==
        doctest::Approx(op(c1, op_class::dense_gemm).bytes / 4));
  CHECK(op(c1, op_class::tp_allreduce).collectives == 0);
  CHECK(op(c4, op_class::tp_allreduce).collectives == 2 * 32);
}

TEST_CASE("serve step: MLA latents are read whole on every TP rank (engine rules)") {
  model m("deepseek-v3");
  gpu_spec h200 = find_gpu("h200");
  deployment d8 = make_deployment(m.g, h200, {.tp = 8, .ep = 8});
  CHECK(d8.kv_share == doctest::Approx(1.0));
  model l("llama-3.1-8b");
  CHECK(make_deployment(l.g, h200, {.tp = 8}).kv_share == doctest::Approx(1.0 / 8));
  CHECK(make_deployment(l.g, h200, {.tp = 16}).kv_share == doctest::Approx(1.0 / 8));  // 8 heads
  // Experts touched grow with the tokens of the step, from calc's routing.
  step_costs small = cost_step(d8, {1, 1024, 0, 0});
  step_costs big = cost_step(d8, {64, 1024, 0, 0});
  auto moe = [](const step_costs& c) {
    return c.ops[static_cast<std::size_t>(op_class::moe_gemm)];
  };
  CHECK(moe(big).bytes > 10 * moe(small).bytes);
  CHECK(moe(big).bytes <= d8.routed_weight_bytes / 8 + 1);
}

TEST_CASE("serve step: time is the slower of compute and memory per op, plus overheads") {
  model m("qwen3-8b");
  gpu_spec h100 = find_gpu("h100-sxm");
  deployment d = make_deployment(m.g, h100, {});
  coefficients k;
  step_costs c = cost_step(d, {1, 1024, 0, 0});
  step_time t = time_step(d, c, k);
  const op_cost& dense = c.ops[0];
  double memory_ms = dense.bytes / (static_cast<double>(h100.bandwidth) * k.gemm_memory) * 1e3;
  CHECK(t.op_ms[0] == doctest::Approx(memory_ms));  // one token: weights dominate
  CHECK(t.total_ms == doctest::Approx(t.weights_ms + t.kv_ms + t.compute_ms + t.communication_ms +
                                      t.overhead_ms));
  // A big prefill chunk is compute-bound.
  step_time p = time_step(d, cost_step(d, {0, 0, 8192, 0}), k);
  CHECK(p.compute_ms > p.weights_ms);
  // Better efficiency is never slower.
  coefficients fast = k;
  fast.gemm_memory = 1;
  CHECK(time_step(d, c, fast).total_ms < t.total_ms);
}

TEST_CASE("serve steady state: more clients never give a faster token or first token") {
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  coefficients k;
  double ttft = 0, tpot = 0, throughput = 0;
  for (std::int64_t c : {1, 2, 4, 16, 64, 256}) {
    steady_state s = solve_steady_state(make_scenario(d, vllm(1024, 1024), c), k);
    CHECK(s.tpot_ms >= tpot);
    CHECK(s.ttft_ms >= ttft * 0.999);
    CHECK(s.output_tokens_per_s > throughput);
    tpot = s.tpot_ms;
    ttft = s.ttft_ms;
    throughput = s.output_tokens_per_s;
  }
  // Little's law ties the three figures of a closed loop.
  steady_state s = solve_steady_state(make_scenario(d, vllm(1024, 1024), 32), k);
  CHECK(s.requests_per_s == doctest::Approx(32 / (s.ttft_ms + 1023 * s.tpot_ms) * 1e3));
}

TEST_CASE("serve steady state: clients past the running cap add waiting, not throughput") {
  // Past the cap the same requests run the same steps: tokens/s stays at the cap's, and a
  // token is never faster for more clients waiting (the wait for a slot once thinned the
  // prefills the decodes share steps with: 4,097 tokens/s at 400 clients, 11,490 at 10^5).
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  coefficients k;
  steady_state at_cap{};
  double tpot = 0;
  std::int64_t cap = make_scenario(d, vllm(1024, 128), 1).kv_requests;
  REQUIRE(cap > 100);
  for (std::int64_t c : {cap + 8, 2 * cap, 8 * cap, std::int64_t{100000}}) {
    scenario sc = make_scenario(d, vllm(1024, 128), c);
    REQUIRE(sc.running < c);
    steady_state s = solve_steady_state(sc, k);
    if (c == cap + 8) at_cap = s;
    CHECK(s.tpot_ms >= tpot * 0.999);
    CHECK(s.output_tokens_per_s < at_cap.output_tokens_per_s * 1.1);
    tpot = s.tpot_ms;
  }
}

TEST_CASE("serve batching: SGLang splits its token budget and running cap over DP groups") {
  // server_args.py divides chunked_prefill_size by dp_size under DP attention, and each worker
  // runs max_running_requests // dp_size; vLLM and TensorRT-LLM apply theirs per rank.
  batching_config sglang = engine_batching(find_engine("sglang"), 1024, 1024, find_gpu("h200"));
  batching_config g = per_attention_group(sglang, 8);
  CHECK(g.max_num_batched_tokens == sglang.max_num_batched_tokens / 8);
  CHECK(g.max_num_seqs == sglang.max_num_seqs / 8);
  CHECK(per_attention_group(sglang, 1).max_num_batched_tokens == sglang.max_num_batched_tokens);
  batching_config trt = engine_batching(find_engine("trtllm"), 1024, 1024, find_gpu("h200"));
  CHECK(per_attention_group(trt, 8).max_num_batched_tokens == trt.max_num_batched_tokens);
  // A typed cap of 16 runs 2 requests per group of a dp 8 layout.
  model m("deepseek-v3");
  deployment d = make_deployment(m.g, find_gpu("h200"), {.tp = 1, .ep = 8, .dp = 8});
  sglang.max_num_seqs = 16;
  sglang.isl = 4096;  // longer than a group's 1024-token budget: prefilled in chunks of it
  scenario s = make_scenario(d, sglang, 16);
  CHECK(s.running == 2);
  CHECK(s.chunk == 8192 / 8);
}

TEST_CASE("serve steady state: a lone client's decode is stretched by no prefill") {
  // Its own prompt prefilled before its decode began: TPOT is the bare decode step.
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h200"), {});
  coefficients k;
  steady_state one = solve_steady_state(make_scenario(d, vllm(32768, 256), 1), k);
  CHECK(one.prefill_busy == 0);
  CHECK(one.tpot_ms == doctest::Approx(one.decode_step.total_ms));
  CHECK(one.ttft_ms > 10 * one.tpot_ms);  // a 32K prompt's prefill, which it waited for
  // A second client's prompts do stretch it.
  steady_state two = solve_steady_state(make_scenario(d, vllm(32768, 256), 2), k);
  CHECK(two.tpot_ms > two.decode_step.total_ms * 1.05);
  // (At most the full batch's step so stretched: clients waiting for a first token do not decode.)
  CHECK(two.tpot_ms <= two.decode_step.total_ms / (1 - two.prefill_busy) * 1.0001);
  // One output token leaves no gap between tokens: no TPOT, as the simulation reports.
  steady_state single = solve_steady_state(make_scenario(d, vllm(1024, 1), 4), k);
  CHECK(single.tpot_ms == 0);
  CHECK(single.ttft_ms > 0);
  CHECK(single.output_tokens_per_s > 0);
}

TEST_CASE("serve step: a 4-bit float format without FP4 units multiplies at the FP8 peak") {
  // As `calc calibrate` costs the measured rows (MXFP4 experts on Hopper): the calibrated
  // efficiencies are relative to that peak. Integer formats stay weight-only (BF16).
  model m("gpt-oss-120b");
  gpu_spec h200 = find_gpu("h200");
  deployment d = make_deployment(m.g, h200, {});
  CHECK(d.moe_peak_flops == doctest::Approx(h200.fp8_tflops * 1e12));
  CHECK(d.peak_flops == doctest::Approx(h200.bf16_tflops * 1e12));
  gpu_spec b200 = find_gpu("b200");
  CHECK(make_deployment(m.g, b200, {}).moe_peak_flops == doctest::Approx(b200.fp4_tflops * 1e12));
  gpu_spec a100 = find_gpu("a100-80gb");  // no FP8 units either
  CHECK(make_deployment(m.g, a100, {}).moe_peak_flops == doctest::Approx(a100.bf16_tflops * 1e12));
}

TEST_CASE("serve steady state: clients waiting for their first token are out of the decode batch") {
  model m("qwen3-32b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {.tp = 2});
  coefficients k;
  // Long prompts and short answers: a client spends much of its cycle waiting for its first
  // token, so fewer requests decode at once than are running and a token comes faster than a
  // full batch's decode step plus the prefill pauses.
  scenario sc = make_scenario(d, vllm(4096, 128), 64);
  steady_state s = solve_steady_state(sc, k);
  double decoding = 127 * s.tpot_ms / (s.ttft_ms + 127 * s.tpot_ms);
  CHECK(decoding < 0.95);
  CHECK(s.tpot_ms < s.decode_step.total_ms / (1 - s.prefill_busy) * 0.999);
  // The costed smaller batches are cheaper steps, in order.
  CHECK(sc.decode_batch[0] < sc.decode_batch[1]);
  CHECK(sc.decode_batch[2] < sc.decode_batch[3]);
  CHECK(time_step(d, sc.decode_part[0], k).total_ms < time_step(d, sc.decode, k).total_ms);
  // Long answers: nearly every client decodes, and the token time is the full batch's.
  steady_state l = solve_steady_state(make_scenario(d, vllm(128, 8192), 64), k);
  CHECK(l.tpot_ms == doctest::Approx(l.decode_step.total_ms / (1 - l.prefill_busy)).epsilon(0.02));
}

TEST_CASE("serve KV pool: the one `calc capacity` estimates with the engine's budget rules") {
  // vLLM deducts its profile run's activation peak, non-torch memory and graph pool; SGLang takes
  // its mem_fraction_static for the card and layout; serve sized both as 0.9 / 0.88 of the card
  // less the weights, so a serve answer could run requests the engine has no room for.
  model m("llama-3.1-70b");
  for (const char* engine : {"vllm", "sglang"}) {
    for (const char* gpu : {"h200", "h100-sxm", "l40s"}) {
      CAPTURE(engine);
      CAPTURE(gpu);
      std::string out, err;
      REQUIRE(run({"capacity", "--model", "llama-3.1-70b", "--gpu", gpu, "--engine", engine, "--tp",
                   "4", "--format", "json"},
                  out, err) == 0);
      auto cap = nlohmann::json::parse(out);
      deployment d = make_deployment(m.g, find_gpu(gpu), {.tp = 4});
      batching_config cfg = engine_batching(find_engine(engine), 1024, 1024, find_gpu(gpu));
      kv_pool_terms t = kv_pool(d, cfg);
      // capacity takes the most loaded card's weights (plan/placement.h), serve the mean rank's:
      // a few MB apart in 35 GB for this dense model at pp 1 (under pp, or MLA's whole-rank
      // tensors, a GB or more: serve's weights per rank are its own, not placement's). What the
      // engine deducts besides them is the same (to rounding).
      double weights = cap["weight_bytes_per_rank"].get<double>();
      CHECK(t.weights == doctest::Approx(weights).epsilon(1e-4));
      CHECK(t.pool + t.weights ==
            doctest::Approx(cap["available_kv_bytes"].get<double>() + weights).epsilon(1e-9));
      if (std::string(engine) == "vllm") CHECK(t.pool < t.card * 0.9 - t.weights - 1e9);
    }
  }
  // A typed chunk sizes SGLang's reserve, the engine's default one included: 8192 typed on a
  // B200 is not SGLang's 16384 there.
  for (const char* gpu : {"b200", "h100-sxm"}) {
    CAPTURE(gpu);
    std::string out, err;
    REQUIRE(run({"capacity", "--model", "llama-3.1-70b", "--gpu", gpu, "--engine", "sglang", "--tp",
                 "4", "--max-num-batched-tokens", "8192", "--format", "json"},
                out, err) == 0);
    auto cap = nlohmann::json::parse(out);
    REQUIRE(run({"serve",
                 "--model",
                 "llama-3.1-70b",
                 "--gpu",
                 gpu,
                 "--engine",
                 "sglang",
                 "--tp",
                 "4",
                 "--max-num-batched-tokens",
                 "8192",
                 "--isl",
                 "1K",
                 "--osl",
                 "1K",
                 "--rate",
                 "1",
                 "--requests",
                 "20",
                 "--format",
                 "json"},
                out, err) == 0);
    auto served = nlohmann::json::parse(out)["points"][0]["kv_pool_bytes"].get<double>();
    double weights = cap["weight_bytes_per_rank"].get<double>();
    deployment d = make_deployment(m.g, find_gpu(gpu), {.tp = 4});
    CHECK(served + d.weight_bytes_per_rank ==
          doctest::Approx(cap["available_kv_bytes"].get<double>() + weights).epsilon(1e-9));
  }
  // TensorRT-LLM keeps free_gpu_memory_fraction of what the weights leave.
  deployment d = make_deployment(m.g, find_gpu("h200"), {.tp = 4});
  kv_pool_terms t =
      kv_pool(d, engine_batching(find_engine("trtllm"), 1024, 1024, find_gpu("h200")));
  CHECK(t.pool == doctest::Approx((t.card - t.weights) * 0.9));
}

TEST_CASE("serve KV pool: a concurrency beyond the pool is reported and waits") {
  model m("llama-3.1-8b");
  deployment d = make_deployment(m.g, find_gpu("rtx-4090"), {});
  scenario s = make_scenario(d, vllm(8192, 8192), 4096);
  CHECK_FALSE(s.kv_pool_fits);
  CHECK(s.running == s.kv_requests);
  // vLLM pages a request's state as it grows: the pool holds requests at their mean occupancy,
  // ISL + OSL / 2; an engine that reserves the whole length at admission holds fewer.
  double per = tally_state(m.g, 8192 + 4096).total.to_double();
  double pool = kv_pool_bytes(d, vllm(8192, 8192));
  REQUIRE(pool > 0);
  CHECK(s.kv_requests == static_cast<std::int64_t>(pool / per));
  batching_config reserving = vllm(8192, 8192);
  reserving.kv = kv_policy::reserve_whole;
  double whole = tally_state(m.g, 16384).total.to_double();
  CHECK(make_scenario(d, reserving, 4096).kv_requests == static_cast<std::int64_t>(pool / whole));
  CHECK(make_scenario(d, vllm(1024, 1024), 8).kv_pool_fits);
  model big("deepseek-v3");
  CHECK(error_of([&] {
          make_scenario(make_deployment(big.g, find_gpu("h100-sxm"), {}), vllm(1024, 1024), 1);
        }).find("no KV pool is left on h100-sxm") != std::string::npos);
}

TEST_CASE("serve simulation: seeded, light load near the unloaded step, heavy load queues") {
  model m("qwen3-8b");
  deployment d = make_deployment(m.g, find_gpu("h100-sxm"), {});
  coefficients k;
  auto a = poisson_arrivals(1, 200, 1024, 128, 7);
  auto b = poisson_arrivals(1, 200, 1024, 128, 7);
  REQUIRE(a.size() == 200);
  CHECK(a[150].time_ms == b[150].time_ms);
  simulation light = simulate(d, vllm(1024, 128), k, a);
  simulation heavy = simulate(d, vllm(1024, 128), k, poisson_arrivals(200, 2000, 1024, 128, 7));
  CHECK(light.requests == 200);
  CHECK(light.tpot.p50 <= light.tpot.p99);
  CHECK(heavy.ttft.mean > 5 * light.ttft.mean);
  CHECK(heavy.tpot.mean > light.tpot.mean);
  step_time unloaded = time_step(d, cost_step(d, {1, 1024, 0, 0}), k);
  CHECK(light.tpot.p50 >= unloaded.total_ms * 0.99);
  CHECK(light.tpot.p50 < unloaded.total_ms * 1.5);
  CHECK(error_of([] { poisson_arrivals(0, 10, 1, 1, 1); }) ==
        "rate: must be a positive number of requests per second");
}

TEST_CASE("serve trace: JSON lines, a bad line named by file:line") {
  std::string good =
      write_temp("calc_serve_trace.jsonl",
                 "{\"arrival_ms\": 0, \"input_tokens\": 100, \"output_tokens\": 10}\n"
                 "\n"
                 "{\"arrival_ms\": 5, \"input_tokens\": 200, \"output_tokens\": 20}\n");
  auto t = read_trace(good);
  REQUIRE(t.size() == 2);
  CHECK(t[1].isl == 200);
  std::string bad = write_temp("calc_serve_bad.jsonl",
                               "{\"arrival_ms\": 0, \"input_tokens\": 100, \"output_tokens\": 10}\n"
                               "{\"arrival_ms\": 1, \"input_tokens\": 0, \"output_tokens\": 10}\n");
  CHECK(error_of([&] { read_trace(bad); }) == bad + ":2:1: input_tokens: must be a number >= 1");
  std::string junk = write_temp("calc_serve_junk.jsonl", "not json\n");
  CHECK(error_of([&] { read_trace(junk); }) == junk + ":1:1: line: not a JSON object");
}

TEST_CASE("serve measured CSV: malformed lines name file:line; a bad row is that row's error") {
  std::string header =
      "id,backend,model_path,system,isl,osl,batch_size,tp_size,pp_size,gemm_quant_mode,"
      "moe_quant_mode,silicon_ttft_ms,silicon_tpot_ms\n";
  std::string f =
      write_temp("calc_serve_rows.csv",
                 header +
                     "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n"
                     "b,vllm,no/such-model,h100_sxm,1024,128,4,1,1,,,50,7\n"
                     "c,vllm,meta-llama/Llama-3.1-8B,tpu_v9,1024,128,4,1,1,,,50,7\n"
                     "d,mystery,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n"
                     "t,trtllm,meta-llama/Llama-3.1-8B,mi300x,1024,128,4,1,1,,,50,7\n");
  auto rows = read_measured(f);
  REQUIRE(rows.size() == 5);
  calibration cal;
  row_mapper mapper(cal);
  CHECK(mapper.map(rows[0]).error == "");
  CHECK(mapper.map(rows[1]).error ==
        "model_path 'no/such-model': no bundled model has its shapes, and the Hugging Face cache "
        "has no snapshot of it");
  CHECK(mapper.map(rows[2]).error == "system 'tpu_v9': no such GPU in the catalogue");
  CHECK(mapper.map(rows[3]).error ==
        "backend 'mystery': no such engine (known: vllm, sglang, trtllm)");
  // TensorRT-LLM builds on CUDA: a row of it on an AMD card is not a run anyone made.
  CHECK(mapper.map(rows[4]).error ==
        "backend: trtllm runs on NVIDIA cards only, and mi300x (AMD Instinct MI300X) is AMD's; "
        "vllm and sglang run there");
  // Another tool's names: the calibration's systems table, and a re-release of a bundled
  // model's shapes under another organisation, format and fine-tune.
  std::string other = write_temp(
      "calc_serve_other.csv",
      header + "e,vllm,nvidia/Llama-3.3-70B-Instruct-FP8,a100_sxm,1024,128,4,4,1,fp8,,50,7\n");
  auto more = read_measured(other);
  REQUIRE(more.size() == 1);
  CHECK(mapper.map(more[0]).error == "system 'a100_sxm': no such GPU in the catalogue");
  calibration named;
  named.systems["a100_sxm"] = "a100-80gb";
  row_mapper renamed(named);
  mapped_row e = renamed.map(more[0]);
  CHECK(e.error == "");
  CHECK(e.gpu == "a100-80gb");
  CHECK(e.model == "llama-3.3-70b-instruct");
  // A name that matches bundles of different shapes (ChatGLM's glm-4-9b-chat and GLM-4-0414's
  // glm-4-9b) is the row's error, never the first bundle's shapes.
  std::string ambiguous = write_temp(
      "calc_serve_ambiguous.csv",
      header + "f,vllm,THUDM/glm-4-9b-chat-hf,h100_sxm,1024,128,4,1,1,,,50,7\n");
  auto amb = read_measured(ambiguous);
  REQUIRE(amb.size() == 1);
  CHECK(mapper.map(amb[0]).error.find("matches bundled models of different shapes") !=
        std::string::npos);
  std::string short_row = write_temp("calc_serve_short.csv", header + "a,vllm,x\n");
  CHECK(error_of([&] { read_measured(short_row); }) ==
        short_row + ":2:1: line: 3 fields where the header has 13");
  std::string no_col = write_temp("calc_serve_nocol.csv", "id,backend\n");
  CHECK(error_of([&] { read_measured(no_col); }) ==
        no_col + ":1:1: model_path: the header lacks this column (see docs/validation/latency.md)");
}

TEST_CASE("serve measured CSV: --tp N --ep N counted twice is read as N ranks") {
  std::string header =
      "id,backend,model_path,system,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,"
      "moe_tp_size,moe_ep_size,gemm_quant_mode,moe_quant_mode,silicon_ttft_ms,silicon_tpot_ms\n";
  std::string f = write_temp("calc_serve_ep_twice.csv",
                             header +
                                 "tp,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,1024,1024,4,64,1,1,8,8,"
                                 "fp8,fp8_block,300,15\n"
                                 "dp,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,1024,1024,2,1,1,64,8,8,"
                                 "fp8,fp8_block,300,15\n"
                                 "ok,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,1024,1024,4,8,1,1,2,4,"
                                 "fp8,fp8_block,300,15\n");
  auto rows = read_measured(f);
  REQUIRE(rows.size() == 3);
  calibration cal = read_calibration(default_calibration_path());
  row_mapper mapper(cal);
  mapped_row tp = mapper.map(rows[0]), dp = mapper.map(rows[1]), ok = mapper.map(rows[2]);
  REQUIRE(tp.error == "");
  REQUIRE(dp.error == "");
  REQUIRE(ok.error == "");
  // 64 = 8 x 8 is wider than the H200's NVLink domain of 8: 8 ranks, experts split 8 ways.
  CHECK(tp.s->d.layout.tp == 8);
  CHECK(tp.s->d.layout.ep == 8);
  CHECK(tp.s->d.layout.gpus() == 8);
  // Attention DP: 8 groups, and the row's 2 x 64 clients stay 128 (16 per group).
  CHECK(dp.s->d.layout.dp == 8);
  CHECK(dp.s->d.layout.tp == 1);
  CHECK(dp.s->concurrency == 16);
  // Within the NVLink domain the columns are taken as written: tp 8, moe_tp 2 x moe_ep 4.
  CHECK(ok.s->d.layout.tp == 8);
  CHECK(ok.s->d.layout.ep == 4);
}

TEST_CASE("serve step: a floor per layer; a cohort waits for its whole step") {
  model m("qwen3-8b");
  gpu_spec h100 = find_gpu("h100-sxm");
  deployment d = make_deployment(m.g, h100, {});
  coefficients k;
  step_costs c = cost_step(d, {1, 1024, 0, 0});
  coefficients slow = k;
  slow.layer_latency_us = k.layer_latency_us + 10;
  double layers = static_cast<double>(m.g.layers.size());
  CHECK(time_step(d, c, slow).overhead_ms - time_step(d, c, k).overhead_ms ==
        doctest::Approx(layers * 10 * 1e-3));
  // Launched from the host: a step with prompt tokens pays prefill_layer_latency_us per layer,
  // a decode step (replayed from a CUDA graph) does not.
  coefficients launches = k;
  launches.prefill_layer_latency_us = k.prefill_layer_latency_us + 100;
  CHECK_FALSE(c.prefills);
  CHECK(time_step(d, c, launches).overhead_ms == time_step(d, c, k).overhead_ms);
  step_costs mixed = cost_step(d, {1, 1024, 512, 0});
  CHECK(mixed.prefills);
  CHECK(time_step(d, mixed, launches).overhead_ms - time_step(d, mixed, k).overhead_ms ==
        doctest::Approx(layers * 100 * 1e-3));
  step_costs prompt_only = cost_step(d, {0, 0, 512, 0});
  CHECK(prompt_only.prefills);
  CHECK(time_step(d, prompt_only, launches).total_ms - time_step(d, prompt_only, k).total_ms ==
        doctest::Approx(layers * 100 * 1e-3));
  // Only latent-attention layers pay mla_prefill_layer_latency_us, and only in a step with
  // prompt tokens: Qwen3-8B has none, DeepSeek-V3 one per layer.
  coefficients latent = k;
  latent.mla_prefill_layer_latency_us = k.mla_prefill_layer_latency_us + 100;
  CHECK(d.mla_layers == 0);
  CHECK(time_step(d, prompt_only, latent).total_ms == time_step(d, prompt_only, k).total_ms);
  model ds("deepseek-v3");
  deployment tp8 = make_deployment(ds.g, find_gpu("h200"), {.tp = 8});
  CHECK(tp8.mla_layers == static_cast<std::int64_t>(ds.g.layers.size()));
  step_costs ds_prompt = cost_step(tp8, {0, 0, 512, 0});
  step_costs ds_decode = cost_step(tp8, {8, 1024, 0, 0});
  CHECK(time_step(tp8, ds_prompt, latent).total_ms - time_step(tp8, ds_prompt, k).total_ms ==
        doctest::Approx(static_cast<double>(tp8.mla_layers) * 100 * 1e-3));
  CHECK(time_step(tp8, ds_decode, latent).total_ms == time_step(tp8, ds_decode, k).total_ms);
  // mla_layer_latency_us, the absorbed form's longer chain of kernels, is paid by every step of
  // an MLA model, decode or prefill, and by no step of a GQA one.
  coefficients absorbed = k;
  absorbed.mla_layer_latency_us = k.mla_layer_latency_us + 10;
  for (const step_costs& step : {ds_prompt, ds_decode})
    CHECK(time_step(tp8, step, absorbed).total_ms - time_step(tp8, step, k).total_ms ==
          doctest::Approx(static_cast<double>(tp8.mla_layers) * 10 * 1e-3));
  CHECK(time_step(d, c, absorbed).total_ms == time_step(d, c, k).total_ms);
  // Several whole prompts in one step: the prefill F is theirs together, the weights read once.
  step_costs one = cost_step(d, {0, 0, 1024, 0, 1});
  step_costs four = cost_step(d, {0, 0, 1024, 0, 4});
  CHECK(four.ops[0].flops == doctest::Approx(4 * one.ops[0].flops));
  CHECK(four.ops[0].bytes == doctest::Approx(one.ops[0].bytes));
  CHECK(four.ops[1].flops == doctest::Approx(4 * one.ops[1].flops));
  // A request that arrives with its cohort waits for the cohort's step: TTFT grows with the share.
  scenario s = make_scenario(d, vllm(1024, 256), 16);
  REQUIRE(s.cohort > 1);
  coefficients alone = k, together = k;
  alone.cohort_share = 0.01;
  together.cohort_share = 1;
  CHECK(solve_steady_state(s, together).ttft_ms > solve_steady_state(s, alone).ttft_ms);
}

TEST_CASE("plan --sla: stricter targets and more load never need fewer GPUs") {
  model m("llama-3.1-8b");
  gpu_spec h100 = find_gpu("h100-sxm");
  coefficients k;
  sla_request r;
  r.cfg = vllm(1024, 256);
  r.rate = 4;
  r.ttft_ms = 2000;
  r.tpot_ms = 40;
  sla_plan base = plan_sla(m.g, h100, k, r);
  REQUIRE(base.feasible);
  std::int64_t gpus = base.best->gpus;
  CHECK(base.best->at.ttft_ms <= r.ttft_ms);
  CHECK(base.best->at.tpot_ms <= r.tpot_ms);
  for (double rate : {8.0, 32.0, 128.0}) {
    r.rate = rate;
    sla_plan p = plan_sla(m.g, h100, k, r);
    REQUIRE(p.feasible);
    CHECK(p.best->gpus >= gpus);
    gpus = p.best->gpus;
  }
  r.tpot_ms = 15;
  sla_plan strict = plan_sla(m.g, h100, k, r);
  if (strict.feasible) CHECK(strict.best->gpus >= gpus);
  r.tpot_ms = 0.01;  // below any step
  sla_plan impossible = plan_sla(m.g, h100, k, r);
  CHECK_FALSE(impossible.feasible);
  CHECK(impossible.binding == "tpot");
}

TEST_CASE("plan --sla --rate: the KV pool keeps room for the Poisson spread of requests") {
  // TensorRT-LLM reserves a request's whole length: at a rate the number in the system swings
  // around its mean, so the plan keeps three standard deviations of the pool free (it had put
  // 67 clients on a pool of 68, and the simulation then held most requests for KV).
  model m("llama-3.1-70b");
  gpu_spec l40s = find_gpu("l40s");
  coefficients k;
  sla_request r;
  r.cfg = engine_batching(find_engine("trtllm"), 1024, 1024, find_gpu("h200"));
  r.rate = 20;
  r.ttft_ms = 3000;
  r.tpot_ms = 100;
  sla_plan p = plan_sla(m.g, l40s, k, r);
  REQUIRE(p.feasible);
  const sla_option& b = *p.best;
  deployment d = make_deployment(m.g, l40s, b.layout);
  auto c = static_cast<double>(b.concurrency_per_group);
  scenario s = make_scenario(d, r.cfg, b.concurrency_per_group);
  CHECK(static_cast<double>(s.kv_requests) >= c + 3 * std::sqrt(c));
  // A closed loop of clients is not a Poisson stream: there the pool may fill.
  r.rate = 0;
  r.concurrency = 64;
  sla_plan closed = plan_sla(m.g, l40s, k, r);
  REQUIRE(closed.feasible);
}

TEST_CASE("serve steady state: batch waiting holds a prompt while others decode") {
  // The held time: a lone prompt (no arrivals) waits the whole timeout; with the threshold one
  // prompt away, the group of two is released by the second arrival, so each waits half of the
  // mean gap 1 / rate when arrivals are frequent; a threshold already met holds nothing.
  CHECK(batch_wait_steps(0, 20, 1) == 20);
  CHECK(batch_wait_steps(1e-9, 20, 1) == doctest::Approx(20).epsilon(1e-6));
  CHECK(batch_wait_steps(50, 20, 1) == doctest::Approx(1.0 / 50 / 2).epsilon(1e-6));
  CHECK(batch_wait_steps(0.5, 20, 0) == 0);
  CHECK(batch_wait_steps(0.5, 0, 3) == 0);
  double last = 21;
  for (double rate : {0.001, 0.01, 0.1, 1.0, 10.0}) {
    double w = batch_wait_steps(rate, 20, 3);
    CHECK(w < last);
    CHECK(w > 0);
    last = w;
  }
  // A threshold far above what arrives in the timeout: every prompt of the group is held until
  // the timeout, the later ones for what is left of it.
  CHECK(batch_wait_steps(0.1, 20, 1000000) < 20);
  CHECK(batch_wait_steps(0.1, 20, 1000000) > 20.0 / 3);
  // Closed forms at any size: a threshold of 2^32 prompts, 10^12 expected arrivals, met after
  // 2^32 / 10^6 steps, half of which a prompt waits on average.
  CHECK(batch_wait_steps(1e6, 1e6, std::int64_t{1} << 32) ==
        doctest::Approx(std::ldexp(1.0, 32) / 1e6 / 2).epsilon(1e-3));
  CHECK(batch_wait_steps(1e-30, 1e6, 5) == doctest::Approx(1e6));

  model m("llama-3.1-70b");
  deployment d = make_deployment(m.g, find_gpu("h200"), {.tp = 2});
  coefficients k;
  batching_config off = engine_batching(find_engine("trtllm"), 922, 922, find_gpu("h200"));
  batching_config on = off;
  on.holds.batch_wait_iters = 20;
  on.holds.batch_wait_tokens_ratio = 0.9;
  on.max_num_batched_tokens = 2048;
  off.max_num_batched_tokens = 2048;
  // One client: nothing else decodes, so nothing holds its prompt.
  CHECK(solve_steady_state(make_scenario(d, on, 1), k).ttft_ms ==
        doctest::Approx(solve_steady_state(make_scenario(d, off, 1), k).ttft_ms));
  // Four clients: arrivals are rare beside a 922-token answer, so a prompt waits nearly the
  // whole timeout of 20 decode steps.
  steady_state held = solve_steady_state(make_scenario(d, on, 4), k);
  steady_state free = solve_steady_state(make_scenario(d, off, 4), k);
  CHECK(held.ttft_ms - free.ttft_ms > 15 * free.tpot_ms);
  CHECK(held.ttft_ms - free.ttft_ms < 20 * held.tpot_ms);
  // Answers of one token leave nothing decoding beside a prompt: nothing holds it.
  batching_config on1 = on, off1 = off;
  on1.osl = off1.osl = 1;
  CHECK(solve_steady_state(make_scenario(d, on1, 8), k).ttft_ms ==
        doctest::Approx(solve_steady_state(make_scenario(d, off1, 8), k).ttft_ms));
  // Clients beyond the running cap: the hold keeps a slot longer, so it never makes a first
  // token or the throughput better (it once shrank the decode batch and read as faster).
  batching_config capped_on = on, capped_off = off;
  capped_on.max_num_seqs = capped_off.max_num_seqs = 16;
  capped_on.holds.batch_wait_iters = 1000;
  steady_state slow = solve_steady_state(make_scenario(d, capped_on, 200), k);
  steady_state fast = solve_steady_state(make_scenario(d, capped_off, 200), k);
  CHECK(slow.ttft_ms > fast.ttft_ms);
  CHECK(slow.output_tokens_per_s < fast.output_tokens_per_s);
  // Attention DP turns batch waiting off.
  model small("llama-3.1-8b");
  deployment dp = make_deployment(small.g, find_gpu("h200"), {.tp = 1, .dp = 2});
  CHECK(solve_steady_state(make_scenario(dp, on, 4), k).ttft_ms ==
        doctest::Approx(solve_steady_state(make_scenario(dp, off, 4), k).ttft_ms));
}

TEST_CASE("serve steady state: the attention-DP balance holds a prompt until every rank has one") {
  // One rank, or no timeout: nothing to wait for. Prompts too rare to fill the ranks: every
  // cycle of the engine's counter runs to the timeout, and a prompt waits half of one.
  CHECK(balance_wait_steps(0.5, 1, 60, 0) == 0);
  CHECK(balance_wait_steps(0.5, 8, 0, 0) == 0);
  CHECK(balance_wait_steps(0, 8, 60, 0) == 30);
  CHECK(balance_wait_steps(1e-9, 8, 60, 0) == doctest::Approx(30).epsilon(1e-6));
  // Two ranks, a timeout never reached: a cycle is the later of two exponential first prompts,
  // mean 1.5 / a and second moment 3.5 / a^2, so a prompt waits 3.5 / (2 x 1.5) / a = 7 / (6a);
  // a batching wait B after each fill: (3.5 / a^2 + 3 B / a + B^2) / (2 (1.5 / a + B)).
  for (double a : {0.01, 0.1, 1.0}) {
    CHECK(balance_wait_steps(a, 2, 1e9, 0) == doctest::Approx(7 / (6 * a)).epsilon(1e-9));
    double b = 10;
    CHECK(balance_wait_steps(a, 2, 1e9, b) ==
          doctest::Approx((3.5 / (a * a) + 3 * b / a + b * b) / (2 * (1.5 / a + b))).epsilon(1e-9));
  }
  // Against the integrals themselves, E[C] = int_0^T P(M > t) dt and E[C^2] = int_0^T 2t
  // P(M > t) dt with P(M > t) = 1 - (1 - e^{-at})^n, by Simpson's rule: 64 ranks and 8, prompts
  // rare (the timeout binds) and frequent, small U (the series) and large (the difference).
  for (const auto& c : {std::tuple{0.002, 64, 60.0}, std::tuple{0.05, 8, 60.0},
                        std::tuple{0.5, 8, 60.0}, std::tuple{0.004, 16, 50.0}}) {
    // Plain locals: CAPTURE's lambda may not name structured bindings before C++20 (clang).
    double a = std::get<0>(c), T = std::get<2>(c);
    int n = std::get<1>(c);
    const int steps = 200000;
    double h = T / steps, m1 = 0, m2 = 0;
    for (int i = 0; i <= steps; ++i) {
      double t = i * h;
      double w = (i == 0 || i == steps) ? 1 : (i % 2 ? 4 : 2);
      double p = 1 - std::pow(-std::expm1(-a * t), n);
      m1 += w * p;
      m2 += w * 2 * t * p;
    }
    m1 *= h / 3;
    m2 *= h / 3;
    CAPTURE(a);
    CAPTURE(n);
    CHECK(balance_wait_steps(a, n, T, 0) == doctest::Approx(m2 / (2 * m1)).epsilon(1e-6));
  }
  // More ranks wait longer, more prompts shorter, and a prompt never past timeout + batching.
  CHECK(balance_wait_steps(0.05, 8, 60, 0) > balance_wait_steps(0.05, 4, 60, 0));
  CHECK(balance_wait_steps(0.05, 8, 60, 0) > balance_wait_steps(0.5, 8, 60, 0));
  CHECK(balance_wait_steps(0.05, 8, 60, 10) > balance_wait_steps(0.05, 8, 60, 0));

  // In the closed loop: DeepSeek-R1's InferenceX runs, 8 attention-DP ranks on B200, balance
  // timeout 60 and no batching wait. Few clients a rank: a prompt waits tens of decode steps
  // for the other ranks' prompts, which the first token pays and the decode step does not.
  model m("deepseek-r1");
  deployment d = make_deployment(m.g, find_gpu("b200"), {.tp = 1, .ep = 8, .dp = 8});
  coefficients k;
  batching_config off = engine_batching(find_engine("trtllm"), 922, 922, find_gpu("b200"));
  batching_config on = off;
  on.holds.adp_balance = true;
  on.holds.adp_balance_timeout_iters = 60;
  on.holds.adp_balance_batching_iters = 0;
  steady_state held = solve_steady_state(make_scenario(d, on, 4), k);
  steady_state free = solve_steady_state(make_scenario(d, off, 4), k);
  // Four clients a rank, 922-token answers: a rank sees a prompt every ~230 steps, so the eight
  // rarely fill within 60 steps and a prompt waits about half a cycle of the counter.
  CHECK(held.ttft_ms - free.ttft_ms > 20 * free.tpot_ms);
  CHECK(held.ttft_ms - free.ttft_ms < 32 * held.tpot_ms);
  // A lone client a rank: its rank decodes nothing when its prompt comes, which releases it.
  CHECK(solve_steady_state(make_scenario(d, on, 1), k).ttft_ms ==
        doctest::Approx(solve_steady_state(make_scenario(d, off, 1), k).ttft_ms));
  // The batching wait adds its steps on top.
  batching_config batching = on;
  batching.holds.adp_balance_batching_iters = 10;
  CHECK(solve_steady_state(make_scenario(d, batching, 4), k).ttft_ms > held.ttft_ms);
  // Without attention DP there is nothing to balance.
  deployment tp8 = make_deployment(m.g, find_gpu("b200"), {.tp = 8, .ep = 8});
  CHECK(solve_steady_state(make_scenario(tp8, on, 4), k).ttft_ms ==
        doctest::Approx(solve_steady_state(make_scenario(tp8, off, 4), k).ttft_ms));
}

TEST_CASE("calibration file: strict keys, efficiencies in (0, 1]") {
  std::string ok = write_temp("calc_cal_ok.yaml",
                              "source: test\nentries:\n  - family: any\n    engine: any\n"
                              "    gemm_compute: 0.5\n    gemm_memory: 0.8\n    moe_compute: 0.4\n"
                              "    moe_memory: 0.7\n    attention_compute: 0.3\n"
                              "    attention_memory: 0.6\n    comm_bandwidth: 0.5\n"
                              "    collective_latency_us: 8\n    step_overhead_ms: 1.5\n"
                              "    request_overhead_us: 5\n    request_latency_ms: 12\n"
                              "    burst_share: 0.1\n    gemm_half_rows: 16\n");
  calibration c = read_calibration(ok);
  CHECK(c.lookup("hopper", "vllm").gemm_compute == 0.5);
  // A file written before cohort_share takes its built-in value ...
  CHECK(c.lookup("any", "any").cohort_share == coefficients{}.cohort_share);
  // ... but the launch floors per layer, which such a file's other coefficients already hold, 0.
  CHECK(c.lookup("any", "any").layer_latency_us == 0);
  CHECK(c.lookup("any", "any").moe_layer_latency_us == 0);
  CHECK(c.lookup("any", "any").prefill_layer_latency_us == 0);
  CHECK(c.lookup("any", "any").mla_prefill_layer_latency_us == 0);
  CHECK(c.lookup("any", "any").mla_layer_latency_us == 0);
  CHECK(coefficients{}.layer_latency_us > 0);
  CHECK(coefficients{}.moe_layer_latency_us > 0);
  CHECK(coefficients{}.prefill_layer_latency_us > 0);
  CHECK(coefficients{}.mla_prefill_layer_latency_us > 0);
  CHECK(coefficients{}.mla_layer_latency_us > 0);
  std::ifstream in(ok);
  std::stringstream text_ok;
  text_ok << in.rdbuf();
  std::string share =
      write_temp("calc_cal_share.yaml", text_ok.str() + "    cohort_share: 1.5\n");
  CHECK(error_of([&] { read_calibration(share); }) ==
        share + ":18:19: entries[0].cohort_share: a fraction must be a number in (0, 1]");
  c.systems["a100_sxm"] = "a100-80gb";
  c.models["meta-llama/Meta-Llama-3.1-8B"] = "llama-3.1-8b";
  calibration back = read_calibration(write_temp("calc_cal_back.yaml", write_calibration(c)));
  CHECK(back.lookup("any", "any").values() == c.lookup("any", "any").values());
  CHECK(back.systems == c.systems);
  CHECK(back.models == c.models);
  std::string text = std::string("source: test\nentries:\n  - family: any\n    engine: any\n") +
                     "    gemm_compute: 1.5\n";
  std::string bad = write_temp("calc_cal_bad.yaml", text);
  CHECK(error_of([&] { read_calibration(bad); }) ==
        bad + ":5:19: entries[0].gemm_compute: a fraction must be a number in (0, 1]");
  // A GEMM of one full tile of rows is past half its efficiency: gemm_half_rows is bounded.
  std::string rows = write_temp(
      "calc_cal_rows.yaml",
      std::regex_replace(text_ok.str(), std::regex("gemm_half_rows: 16"), "gemm_half_rows: 200"));
  CHECK(error_of([&] { read_calibration(rows); }) ==
        rows + ":17:21: entries[0].gemm_half_rows: must be a number in [0, 128]");
}

TEST_CASE("calibration file: the accuracy it records, read back and quoted by serve and plan") {
  std::string entry =
      "source: test\nfamilies:\n  hopper: [h100-sxm, h200]\nentries:\n"
      "  - family: hopper\n    engine: vllm\n    gemm_compute: 0.5\n    gemm_memory: 0.8\n"
      "    moe_compute: 0.4\n    moe_memory: 0.7\n    attention_compute: 0.3\n"
      "    attention_memory: 0.6\n    comm_bandwidth: 0.5\n    collective_latency_us: 8\n"
      "    step_overhead_ms: 1.5\n    request_overhead_us: 5\n    request_latency_ms: 12\n"
      "    burst_share: 0.1\n    gemm_half_rows: 16\n";
  auto serve = [](const std::string& model, const std::string& gpu, const std::string& file,
                  bool json, std::string& out) {
    std::string err;
    std::vector<std::string> args = {
        "serve", "--model",       model, "--gpu",         gpu, "--isl", "1K", "--osl",
        "256",   "--concurrency", "8",   "--calibration", file};
    if (json) args.insert(args.end(), {"--format", "json"});
    REQUIRE(run(args, out, err) == 0);
    return json ? nlohmann::json::parse(out)["calibration"]["accuracy"] : nlohmann::json();
  };
  // A file without the records (written before them, or fitted without --cross-validate) still
  // reads, and serve says nothing of an accuracy it does not know.
  std::string bare = write_temp("calc_cal_acc_bare.yaml", entry);
  std::string out;
  auto none = serve("qwen3-8b", "a100-80gb", bare, true, out);
  CHECK(none["in_sample"].is_null());
  CHECK(none["leave_one_model_out"].is_null());
  serve("qwen3-8b", "a100-80gb", bare, false, out);
  CHECK(out.find("|error|") == std::string::npos);

  calibration c = read_calibration(bare);
  c.entries[0].rows = 40;
  c.entries[0].in_sample = {40, 12.5, 60.25, 4.5, 20.75};  // rows, TTFT med / p90, TPOT med / p90
  c.entries[0].measured_models = {"llama-3.1-8b"};
  c.entries[0].measured_gpus = {"h100-sxm"};
  c.held_out["leave_one_gpu_out"].all = {40, 30.5, 90, 11.5, 40};
  c.held_out["leave_one_model_out"].all = {40, 33.5, 99, 17.25, 50};
  c.held_out["leave_one_model_out"].by_engine["vllm"] = {40, 31.5, 95, 15.75, 45};
  std::string file = write_temp("calc_cal_acc.yaml", write_calibration(c));
  calibration back = read_calibration(file);
  CHECK(back.entries[0].in_sample.rows == 40);
  CHECK(back.entries[0].in_sample.ttft_p90 == 60.25);
  CHECK(back.entries[0].in_sample.tpot_median == 4.5);
  CHECK(back.entries[0].measured_models == c.entries[0].measured_models);
  CHECK(back.entries[0].measured_gpus == c.entries[0].measured_gpus);
  REQUIRE(back.held_out_by("leave_one_gpu_out"));
  CHECK(back.held_out_by("leave_one_gpu_out")->all.tpot_median == 11.5);
  CHECK(back.held_out_by("leave_one_gpu_out")->by_engine.empty());
  CHECK(back.held_out_by("leave_one_family_out") == nullptr);
  CHECK(back.held_out_by("leave_one_model_out")->by_engine.at("vllm").tpot_median == 15.75);
  CHECK(write_calibration(back) == write_calibration(c));

  // A measured model on a measured GPU: the entry's own figures.
  auto seen = serve("llama-3.1-8b", "h100-sxm", file, true, out);
  CHECK(seen["gpu_measured"] == true);
  CHECK(seen["model_measured"] == true);
  CHECK(seen["in_sample"]["rows"] == 40);
  CHECK(seen["in_sample"]["tpot_median_pct"] == 4.5);
  serve("llama-3.1-8b", "h100-sxm", file, false, out);
  CHECK(out.find("(hopper/vllm). On its 40 measured runs the hopper/vllm entry's median |error| "
                 "is TPOT 4.5 % (p90 21 %), TTFT 12.5 % (p90 60 %). Step") != std::string::npos);
  // Another GPU of the family: not the entry's runs, but what a GPU left out reached (over every
  // engine where the file has no figure of this one's, and said so).
  auto sibling = serve("llama-3.1-8b", "h200", file, true, out);
  CHECK(sibling["gpu_measured"] == false);
  CHECK(sibling["gpu_family_measured"] == true);
  CHECK(sibling["in_sample"].is_null());
  CHECK(sibling["leave_one_gpu_out"]["engines"] == "all runs, none vllm");
  serve("llama-3.1-8b", "h200", file, false, out);
  CHECK(out.find("h200 has no measured vllm runs; its family hopper has (h100-sxm), and a GPU "
                 "left out of the fit is predicted to a median |error| of TPOT 11.5 % (p90 40 %), "
                 "TTFT 30.5 % (p90 90 %) (all runs, none vllm).") != std::string::npos);
  // The bundled file by its path, or the model by its name in another case, is the measured one;
  // a --set that changes more than formats makes another model, whatever its name.
  CHECK(serve(models_dir() + "/llama-3.1-8b.yaml", "h100-sxm", file, true, out)["model_measured"] ==
        true);
  CHECK(serve("Llama-3.1-8B", "h100-sxm", file, true, out)["model_measured"] == true);
  std::string err;
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--set", "layers.count=16", "--gpu", "h100-sxm",
               "--isl", "1K", "--osl", "256", "--concurrency", "8", "--calibration", file},
              out, err) == 0);
  CHECK(out.find("llama-3.1-8b (as given: its own file, or --set) is not among this entry's "
                 "measured models (llama-3.1-8b)") != std::string::npos);
  REQUIRE(
      run({"serve", "--model", "llama-3.1-8b", "--set", "precision.weights=fp8", "--gpu",
           "h100-sxm", "--isl", "1K", "--osl", "256", "--concurrency", "8", "--calibration", file},
          out, err) == 0);
  CHECK(out.find("not among") == std::string::npos);
  // Neither measured: the held-out figures, the engine's where the file has them.
  auto unseen = serve("qwen3-8b", "a100-80gb", file, true, out);
  CHECK(unseen["gpu_family_measured"] == false);
  CHECK(unseen["model_measured"] == false);
  CHECK(unseen["in_sample"].is_null());
  CHECK(unseen["leave_one_gpu_out"]["tpot_median_pct"] == 11.5);
  CHECK(unseen["models_not_measured"] == nlohmann::json::array({"qwen3-8b"}));
  CHECK(unseen["leave_one_model_out"]["tpot_median_pct"] == 15.75);  // vllm's
  CHECK(unseen["leave_one_model_out"]["engines"] == "vllm");
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=100", "--concurrency", "8", "--isl", "1K", "--osl",
               "256", "--model", "qwen3-8b", "--gpu", "a100-80gb", "--calibration", file},
              out, err) == 0);
  CHECK(out.find("a100-80gb has no measured vllm runs and is in no calibrated family (they are "
                 "on h100-sxm): it is costed from its datasheet peaks with calc's built-in "
                 "coefficients; a GPU left out of the fit is predicted to a median |error| of TPOT "
                 "11.5 % (p90 40 %), TTFT 30.5 % (p90 90 %) (all runs, none vllm), and a GPU "
                 "unlike the measured ones may be further off.") != std::string::npos);
  CHECK(out.find("qwen3-8b is not among the measured vllm models (llama-3.1-8b): a model left out "
                 "of the fit is predicted to a median |error| of TPOT 15.8 % (p90 45 %), TTFT "
                 "31.5 % (p90 95 %) (vllm).") != std::string::npos);
  // The same GPU under an engine the file has no runs of.
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang",
               "--isl", "1K", "--osl", "256", "--concurrency", "8", "--calibration", file},
              out, err) == 0);
  CHECK(out.find("h100-sxm has no measured sglang runs, nor has its family hopper (the file has "
                 "none of sglang)") != std::string::npos);
  // A GPU file is not the card that was measured, whatever its name.
  REQUIRE(run({"serve", "--model", "llama-3.1-8b", "--gpu", models_dir() + "/gpus/h100-sxm.yaml",
               "--isl", "1K", "--osl", "256", "--concurrency", "8", "--calibration", file},
              out, err) == 0);
  CHECK(out.find("h100-sxm as given (its own file) has no measured vllm runs") !=
        std::string::npos);
  // A simulated answer says whose figures they are.
  REQUIRE(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "256",
               "--rate", "2", "--requests", "50", "--calibration", file},
              out, err) == 0);
  CHECK(out.find("These are the steady state's figures on closed-loop runs, not a simulation's.") !=
        std::string::npos);

  // Strict like the rest of the file: each line names the file, its place and the field.
  std::string text = write_calibration(c);
  auto refused = [&](const char* name, const std::string& from, const std::string& to) {
    std::string bad = write_temp(name, std::regex_replace(text, std::regex(from), to));
    return error_of([&] { read_calibration(bad); });
  };
  CHECK(refused("calc_cal_acc_neg.yaml", "tpot_median_pct: 4.5", "tpot_median_pct: -4.5")
            .find("entries[0].in_sample.tpot_median_pct: an |error| must be a percentage in [0, "
                  "1e+06]") != std::string::npos);
  CHECK(refused("calc_cal_acc_huge.yaml", "tpot_median_pct: 4.5", "tpot_median_pct: 1e300")
            .find("a percentage in [0, 1e+06]") != std::string::npos);
  CHECK(refused("calc_cal_acc_p90.yaml", "tpot_p90_pct: 20.75", "tpot_p90_pct: 2")
            .find("entries[0].in_sample.tpot_p90_pct: below tpot_median_pct") != std::string::npos);
  CHECK(refused("calc_cal_acc_missing.yaml", "tpot_median_pct: 4.5, ", "")
            .find("entries[0].in_sample.tpot_median_pct: missing") != std::string::npos);
  CHECK(refused("calc_cal_acc_rows.yaml", "\\{rows: 40", "{rows: 41")
            .find("entries[0].in_sample.rows: 41 rows, more than the entry's 40") !=
        std::string::npos);
  CHECK(refused("calc_cal_acc_typo.yaml", "leave_one_model_out:", "leave_one_modle_out:")
            .find("held_out.leave_one_modle_out") != std::string::npos);
  CHECK(refused("calc_cal_acc_engine.yaml", "      vllm: \\{", "      vlm: {")
            .find("held_out.leave_one_model_out.by_engine.vlm: unknown engine 'vlm'") !=
        std::string::npos);
  CHECK(refused("calc_cal_acc_gpu.yaml", "measured_gpus: \\[h100-sxm\\]", "measured_gpus: [h100]")
            .find("entries[0].measured_gpus: unknown GPU 'h100'") != std::string::npos);
  CHECK(
      refused("calc_cal_acc_case.yaml", "measured_gpus: \\[h100-sxm\\]",
              "measured_gpus: [H100-SXM]")
          .find("'H100-SXM' is not a GPU of the catalogue as `calc gpus` names it ('h100-sxm')") !=
      std::string::npos);
  CHECK(refused("calc_cal_acc_twice.yaml", "measured_models: \\[llama-3.1-8b\\]",
                "measured_models: [llama-3.1-8b, llama-3.1-8b]")
            .find("entries[0].measured_models: 'llama-3.1-8b' is listed twice") !=
        std::string::npos);
}

TEST_CASE("calibration file: a bundle of a measured model's shapes, mapped in its models table") {
  // The file costs DeepSeek-R1's runs as deepseek-v3 (its models table), so the bundled
  // deepseek-r1, of the same repository and shapes, is a measured model, and so is deepseek-v3.1
  // (the table maps nvidia/DeepSeek-V3.1-NVFP4, the same shape name and shapes); deepseek-v3.2
  // (sparse attention) is not, nor deepseek-r1 under a file without that row.
  calibration c;
  c.file = "test";
  c.families["hopper"] = {"h200"};
  calibration_entry e;
  e.family = "hopper";
  e.engine = "sglang";
  e.rows = 30;
  e.in_sample = {30, 20, 60, 8, 30};
  e.measured_models = {"deepseek-v3"};
  e.measured_gpus = {"h200"};
  c.entries.push_back(e);
  c.held_out["leave_one_model_out"].all = {30, 40, 99, 20, 50};
  auto accuracy = [](const std::string& model, const calibration& cal) {
    std::string file = write_temp("calc_cal_twins.yaml", write_calibration(cal));
    std::string out, err;
    REQUIRE(
        run({"serve", "--model", model, "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--isl",
             "1K", "--osl", "256", "--concurrency", "8", "--format", "json", "--calibration", file},
            out, err) == 0);
    return nlohmann::json::parse(out)["calibration"]["accuracy"];
  };
  c.models["deepseek-ai/DeepSeek-R1"] = "deepseek-v3";
  c.models["nvidia/DeepSeek-V3.1-NVFP4"] = "deepseek-v3";
  auto r1 = accuracy("deepseek-r1", c);
  CHECK(r1["model_measured"] == true);
  CHECK(r1["models_measured_as"] == nlohmann::json({{"deepseek-r1", "deepseek-v3"}}));
  CHECK(r1["in_sample"]["rows"] == 30);
  CHECK(accuracy("deepseek-v3.1", c)["model_measured"] == true);
  CHECK(accuracy("deepseek-v3", c)["models_measured_as"].empty());
  auto sparse = accuracy("deepseek-v3.2", c);
  CHECK(sparse["model_measured"] == false);
  CHECK(sparse["models_not_measured"] == nlohmann::json::array({"deepseek-v3.2"}));
  c.models.clear();
  CHECK(accuracy("deepseek-r1", c)["model_measured"] == false);
}

TEST_CASE("serve, calibrate and plan --sla from the command line: JSON keys and bad input") {
  std::string out, err;
  REQUIRE(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "1K", "--osl", "256",
               "--concurrency", "1,32", "--format", "json"},
              out, err) == 0);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j["points"].size() == 2);
  for (const char* key : {"concurrency", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms",
                          "output_tokens_per_s", "output_tokens_per_s_per_gpu",
                          "output_tokens_per_s_per_user", "requests_per_s", "kv_pool_fits", "step"})
    CHECK_MESSAGE(j["points"][1].contains(key), key);
  CHECK(j["points"][1]["tpot_ms"].get<double>() > j["points"][0]["tpot_ms"].get<double>());
  // --kv is the cache's format whichever engine is named (with --engine it was dropped: the
  // pool held a BF16 cache's requests).
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    std::string pools[2];
    for (int fp8 = 0; fp8 < 2; ++fp8) {
      std::vector<std::string> args = {"serve",   "--model", "qwen3-8b", "--gpu",
                                       "h100-sxm", "--isl",  "1K",       "--osl",
                                       "256",      "--concurrency", "8", "--engine",
                                       engine,     "--format", "json"};
      if (fp8 == 1) args.insert(args.end(), {"--kv", "fp8"});
      REQUIRE(run(args, out, err) == 0);
      auto k = nlohmann::json::parse(out);
      CHECK(k["kv_format"] == (fp8 == 1 ? "fp8" : "bf16"));
      pools[fp8] = k["points"][0]["kv_pool_requests"].dump();
    }
    CHECK_MESSAGE(std::stoll(pools[1]) > std::stoll(pools[0]) * 19 / 10, engine);
  }
  std::string plans[2];
  for (int fp8 = 0; fp8 < 2; ++fp8) {
    std::vector<std::string> args = {"plan",  "--sla",     "ttft=3000,tpot=40", "--concurrency",
                                     "64",    "--isl",     "1024",              "--osl",
                                     "1024",  "--model",   "qwen3-8b",          "--gpu",
                                     "h100-sxm", "--engine", "sglang",          "--format",
                                     "json"};
    if (fp8 == 1) args.insert(args.end(), {"--kv", "fp8"});
    REQUIRE(run(args, out, err) == 0);
    plans[fp8] = nlohmann::json::parse(out)["tpot_ms"].dump();
  }
  CHECK(std::stod(plans[1]) < std::stod(plans[0]));  // half the cache bytes read per step
  CHECK(run({"serve", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--isl", "0", "--osl", "10",
             "--concurrency", "1"},
            out, err) == 2);
  CHECK(err == "--isl: must be at least 1, got 0\n");
  // A model one card cannot hold: the error names the narrowest tensor-parallel group that
  // leaves a KV pool, and that layout runs.
  REQUIRE(run({"serve", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--isl", "1K", "--osl",
               "256", "--concurrency", "8"},
              out, err) == 2);
  auto at = err.find("; --tp ");
  REQUIRE(at != std::string::npos);
  std::string tp = err.substr(at + 7, err.find(' ', at + 7) - at - 7);
  CHECK(std::stoi(tp) > 1);
  CHECK(run({"serve", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--tp", tp, "--isl", "1K",
             "--osl", "256", "--concurrency", "8"},
            out, err) == 0);
  CHECK(run({"serve", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--tp",
             std::to_string(std::stoi(tp) / 2), "--isl", "1K", "--osl", "256", "--concurrency",
             "8"},
            out, err) == 2);
  // A pool that holds no whole request is refused as well (it would print hours of TTFT), and
  // the layout named holds one.
  CHECK(run({"serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2", "--isl",
             "32K", "--osl", "8K", "--concurrency", "64"},
            out, err) == 2);
  CHECK(err.rfind("--isl: a request of 32768 + 8192 tokens needs more KV than the pool", 0) == 0);
  at = err.find("; --tp ");
  REQUIRE(at != std::string::npos);
  tp = err.substr(at + 7, err.find(' ', at + 7) - at - 7);
  CHECK(run({"serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", tp, "--isl", "32K",
             "--osl", "8K", "--concurrency", "64"},
            out, err) == 0);
  REQUIRE(run({"plan", "--sla", "ttft=2000,tpot=50", "--rate", "2", "--isl", "1024", "--osl", "256",
               "--model", "qwen3-8b", "--gpu", "h100-sxm", "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["feasible"] == true);
  for (const char* key : {"gpus", "tp", "pp", "ep", "dp", "reason"})
    CHECK_MESSAGE(j.contains(key), key);
  // A plan's layout is in the flags that run it: fed back to serve, it runs and predicts the
  // same point (SGLang DP attention: --tp 8 --dp 8, not tp 1 dp 8).
  REQUIRE(run({"plan", "--sla", "ttft=3000,tpot=40", "--concurrency", "512", "--isl", "1024",
               "--osl", "1024", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang",
               "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j["feasible"] == true);
  auto flag = [&](const char* key) { return std::to_string(j[key].get<std::int64_t>()); };
  std::int64_t dp = j["dp"].get<std::int64_t>();
  REQUIRE(dp > 1);  // the layout this checks: DP attention with experts split
  REQUIRE(j["ep"].get<std::int64_t>() > 1);
  CHECK(j["launch_flags"] == "--tp-size " + flag("tp") + " --dp-size " + flag("dp") +
                                 " --enable-dp-attention --ep-size " + flag("ep"));
  CHECK(j["concurrency_per_attention_group"].get<std::int64_t>() * dp ==
        j["concurrency_per_instance"].get<std::int64_t>());
  CHECK(j["tp"].get<std::int64_t>() == j["attention_tp"].get<std::int64_t>() * dp);
  std::string clients = std::to_string(j["concurrency_per_instance"].get<std::int64_t>() / dp);
  double tpot = j["tpot_ms"].get<double>(), ttft = j["ttft_ms"].get<double>();
  std::int64_t gpus = j["gpus_per_instance"].get<std::int64_t>();
  REQUIRE(run({"serve", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp",
               flag("tp"), "--dp", flag("dp"), "--ep", flag("ep"), "--pp", flag("pp"), "--isl",
               "1024", "--osl", "1024", "--concurrency", clients, "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["gpus"].get<std::int64_t>() == gpus);
  CHECK(j["layout"]["dp"].get<std::int64_t>() == dp);
  CHECK(j["layout"]["tp"].get<std::int64_t>() == j["layout"]["attention_tp"].get<std::int64_t>() * dp);
  CHECK(j["points"][0]["tpot_ms"].get<double>() == doctest::Approx(tpot).epsilon(1e-9));
  CHECK(j["points"][0]["ttft_ms"].get<double>() == doctest::Approx(ttft).epsilon(1e-9));
  // vLLM counts the same cards as one attention group's tp times dp.
  REQUIRE(run({"serve", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "8",
               "--dp", "8", "--ep", "8", "--isl", "1024", "--osl", "1024", "--concurrency", "4",
               "--format", "json"},
              out, err) == 0);
  j = nlohmann::json::parse(out);
  CHECK(j["launch_flags"] ==
        "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel");
  std::string rows =
      write_temp("calc_cli_rows.csv",
                 "id,backend,model_path,system,isl,osl,batch_size,tp_size,pp_size,gemm_quant_mode,"
                 "moe_quant_mode,silicon_ttft_ms,silicon_tpot_ms\n"
                 "a,vllm,meta-llama/Llama-3.1-8B,h100_sxm,1024,128,4,1,1,,,50,7\n"
                 "b,vllm,meta-llama/Llama-3.1-8B,tpu_v9,1024,128,4,1,1,,,50,7\n");
  REQUIRE(run({"calibrate", "--evaluate", rows, "--format", "json"}, out, err) == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0].contains("tpot_ms"));
  CHECK(j["rows"][0]["measured_tpot_ms"] == 7);
  CHECK(j["rows"][1]["error"] == "system 'tpu_v9': no such GPU in the catalogue");
  CHECK(j["summary"]["all"]["rows"] == 1);
}
