// Exact-integer tests of DeepSeek sparse attention, CED, Engram and mHC rules (§2.3.3, §2.3.6,
// §2.5.2, §2.5.3): block boundaries, candidate-pool bounds, Full/Reindex/Reuse scans.
#include <doctest/doctest.h>

#include "common/dtype.h"
#include "graph/graph.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

using testing::model;

namespace {

checked component(const state_tally& s, const std::string& name) {
  for (const state_item& i : s.items)
    if (i.name == name) return i.bytes;
  return -1;
}

}  // namespace

TEST_CASE("sum_floor_div is the exact stair-step sum") {
  auto brute = [](std::int64_t lo, std::int64_t hi, std::int64_t r, std::int64_t cap) {
    std::int64_t s = 0;
    for (std::int64_t k = lo; k <= hi; ++k) s += cap < 0 ? k / r : std::min(k / r, cap);
    return s;
  };
  for (std::int64_t r : {1, 2, 4, 128})
    for (std::int64_t cap : {-1, 0, 3, 512})
      for (std::int64_t lo : {0, 1, 5, 127, 128, 129})
        for (std::int64_t hi : {0, 4, 127, 128, 129, 1000, 8193})
          CHECK(sum_floor_div(lo, hi, r, cap).value() == brute(lo, hi, r, cap));
}

TEST_CASE("compressed entries complete at block boundaries (V4-Flash, BF16 reference)") {
  model m("deepseek-v4-flash");
  // CSA completes an entry every 4 tokens, HCA every 128; the window caps at 128.
  struct row {
    std::int64_t length, csa, hca, window;
  };
  for (row r : {row{127, 31, 0, 127}, row{128, 32, 1, 128}, row{129, 32, 1, 128},
                row{8191, 2047, 63, 128}, row{8192, 2048, 64, 128}, row{8193, 2048, 64, 128}}) {
    state_tally s = tally_state(m.g, r.length);
    CHECK(component(s, "compressed_r4_main").value() == 21 * r.csa * 1024);
    CHECK(component(s, "compressed_r4_index").value() == 21 * r.csa * 256);
    CHECK(component(s, "compressed_r128_main").value() == 20 * r.hca * 1024);
    CHECK(component(s, "window").value() == 43 * r.window * 1024);
  }
  CHECK(tally_state(m.g, 8192).fixed.value() == 12'206'080);  // FP32 compressor buffers
}

TEST_CASE("production records fall out of the byte rule") {
  CHECK(parse_dtype("fp8:g64:e8m0*448+bf16*64@8").bytes(512).value() == 584);
  CHECK(parse_dtype("fp8:g64:e8m0*448+bf16*64@8").bytes(1024).value() == 2 * 584);
  model v4("deepseek-v4-flash");
  model prod("deepseek-v4-flash",
             {"precision.kv=fp8:g64:e8m0*448+bf16*64@8", "precision.index=mxfp4"});
  state_tally p = tally_state(prod.g, 8192);
  CHECK(p.history_per_token.num.value() == 14057);  // 3,514.25 B/token = 14057 / 4
  CHECK(p.history_per_token.den.value() == 4);
  CHECK(p.global_history.value() == 28'788'736);
}

TEST_CASE("V4-Flash decode at 8K: main attention pairs and rectangular index scans") {
  model m("deepseek-v4-flash");
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  // 43 windows of 128, 21 CSA x top-512, 20 HCA x 64 entries
  CHECK(d.attention_pairs.value() == 43 * 128 + 21 * 512 + 20 * 64);
  CHECK(d.index_scans.value() == 21 * 2048);
  CHECK(d.interaction_flops.value() == 3'003'121'664);
  call causal = make_call(m.spec, 1, 0, 8192);
  causal.exec.index_scan = pair_counting::causal;
  call rect = make_call(m.spec, 1, 0, 8192);
  CHECK(tally_forward(m.g, rect).index_scans.value() == 21LL * 8192 * 2048);
  CHECK(tally_forward(m.g, causal).index_scans < tally_forward(m.g, rect).index_scans);
}

TEST_CASE("V4.1: Full, Reindex and Reuse layers scan differently; the pool bounds Reindex") {
  model m("deepseek-v4.1-flash");
  // At 1M history: 2:1 sources scan (t+1)/2, layer 20 scans t+1, Reindex at most 16,384.
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 1'048'575, 1));
  CHECK(d.index_scans.value() == 3LL * (1'048'576 / 2) + 1'048'576 + 4LL * 16'384);
  forward_tally short_ctx = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  CHECK(short_ctx.index_scans.value() == 3LL * 4096 + 5LL * 8193);  // pool not reached
  // Every one of the 38 global layers reads at most 512 entries; all 40 read a 128 window.
  CHECK(d.attention_pairs.value() == 40 * 128 + 38 * 512);
}

TEST_CASE("V4.1 CED: the decoder body replays the last 128 prompt positions") {
  model m("deepseek-v4.1-flash");
  call ced = make_call(m.spec, 1, 0, 8192);
  call ref = ced;
  ref.exec.ced = false;
  ref.exec.index_scan = pair_counting::rectangular;
  forward_tally a = tally_forward(m.g, ced), b = tally_forward(m.g, ref);
  CHECK(a.flops.value() == 143'946'626'891'776);
  CHECK(b.flops.value() == 282'386'229'624'832);
  // A prompt no longer than the replay is processed whole: CED changes only the index rule.
  call short_ced = make_call(m.spec, 1, 0, 128);
  call short_causal = short_ced;
  short_causal.exec.ced = false;
  CHECK(tally_forward(m.g, short_ced).flops == tally_forward(m.g, short_causal).flops);
}

TEST_CASE("V4.1 state: BF16 records, FP32 buffers of the 2:1 sources, int64 token ids") {
  model m("deepseek-v4.1-flash");
  state_tally s = tally_state(m.g, 8192);
  CHECK(s.fixed.value() == 3 * 2 * 2 * 512 * 4);
  CHECK(component(s, "token_history").value() == 8 * 8192);
  CHECK(s.total.value() == 31'547'392);
  CHECK(s.window_write.value() == 40 * 1024);
}

TEST_CASE("mHC matrix and non-matrix work (§2.5.2) and the MTP block (§2.5.3)") {
  model m("deepseek-v4-flash");
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 0, 8192));
  CHECK(f.connection_flops.value() == 2LL * 8192 * 16384 * 24 * 86 + 2LL * 8192 * 16384 * 4);
  CHECK(f.mhc_nonmatrix.value() == 148'981'473'280);
  forward_tally mtp = tally_mtp(m.g, make_call(m.spec, 1, 0, 1));
  CHECK(mtp.flops.value() == 1'796'997'120);
  CHECK(mtp.vocab_flops.value() == 1'059'061'760);
  model k3("kimi-k3");
  CHECK_THROWS_AS(tally_mtp(k3.g, make_call(k3.spec, 1, 0, 1)), spec_error);
}

TEST_CASE("Engram: table lookups are bytes, projections are FLOPs") {
  model m("deepseek-v4.1-flash");
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::engram].value() == 196'928'504'320);
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 8192, 1));
  CHECK(f.engram_read_bytes.value() == 2LL * 24 * 256 * 2);  // two layers, 24 rows of 256 BF16
}

TEST_CASE("a layer must read entries that an earlier layer stores") {
  CHECK_THROWS_AS(model("deepseek-v4.1-flash", {"layers.attention.global.source=39"}), spec_error);
}
