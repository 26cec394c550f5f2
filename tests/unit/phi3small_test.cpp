// Phi-3-small (phi3small) and block-sparse attention (`block_sparse`): read from the published
// configs (tests/fixtures/hf/microsoft--Phi-3-small-*, sources in SOURCES.md there), the
// parameters checked against the published total, the state at 8K and 128K worked by hand, the
// block pattern's pair counts checked against a brute-force loop over query and key positions,
// and the reference executor proving the counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "../cli/run_cli.h"
#include "exec/validate.h"
#include "hf_counts.h"
#include "scratch.h"
#include "spec/hf/import.h"
#include "tally/block_sparse.h"
#include "tally/call.h"
#include "tally/closed_form.h"
#include "tally/kinds.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

const char* const k8k = "microsoft--Phi-3-small-8k-instruct";
const char* const k128k = "microsoft--Phi-3-small-128k-instruct";

/// The reference rule, written out here apart from src/: head h (of n heads) at query position t
/// scores key k when k <= t and the key's block is one of the local_blocks up to the query's, or
/// (kb + h * step + 1) % vert_stride == 0 with step = max(1, vert_stride / n) (0 when homo).
bool reference_sees(std::int64_t block, std::int64_t local, std::int64_t vert, bool homo,
                    std::int64_t n, std::int64_t h, std::int64_t t, std::int64_t k) {
  if (k > t) return false;
  std::int64_t step = homo ? 0 : std::max<std::int64_t>(1, vert / n);
  std::int64_t qb = t / block, kb = k / block;
  return qb - kb < local || (kb + h * step + 1) % vert == 0;
}

/// A tiny GQA layer with a block pattern.
attention_gqa tiny(std::int64_t block, std::int64_t local, std::int64_t vert, bool homo,
                   std::int64_t q_heads, std::int64_t kv_heads) {
  attention_gqa a;
  a.q_heads = q_heads;
  a.kv_heads = kv_heads;
  a.head_dim = 4;
  a.block_sparse = block_sparse_spec{block, local, vert, homo};
  return a;
}

}  // namespace

TEST_CASE("block_sparse: pair counts equal a brute-force loop over query and key positions") {
  // Shapes that exercise every branch: a band wider than the stride, a band of one block, a
  // stride of one (every block vertical: dense), a stride above the heads (step 2), homogeneous
  // heads, and more heads than the stride (phases wrap).
  struct shape {
    std::int64_t block, local, vert;
    bool homo;
    std::int64_t q_heads, kv_heads;
  };
  for (shape sh :
       {shape{4, 2, 3, false, 4, 2}, shape{3, 1, 4, false, 4, 4}, shape{2, 3, 1, false, 2, 1},
        shape{4, 2, 8, false, 4, 2}, shape{5, 2, 3, true, 6, 3}, shape{2, 4, 3, false, 8, 2}}) {
    CAPTURE(sh.block);
    CAPTURE(sh.local);
    CAPTURE(sh.vert);
    CAPTURE(sh.homo);
    CAPTURE(sh.q_heads);
    attention_gqa a = tiny(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, sh.kv_heads);
    const block_sparse_spec& b = *a.block_sparse;
    const std::int64_t n = 67;  // positions: 13+ blocks, a partial last one
    // Per head, the keys of each query and their prefix sums.
    for (std::int64_t h = 0; h < sh.q_heads; ++h) {
      std::int64_t phase = block_sparse_phase(b, sh.q_heads, h);
      std::int64_t prefix = 0;
      for (std::int64_t t = 0; t < n; ++t) {
        std::int64_t keys = 0;
        for (std::int64_t k = 0; k <= t; ++k)
          keys += reference_sees(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, h, t, k);
        CHECK(block_sparse_keys(b, phase, t).value() == keys);
        for (std::int64_t k = 0; k < n; ++k)
          CHECK(block_sparse_sees(b, phase, t, k) ==
                reference_sees(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, h, t, k));
        CHECK(block_sparse_pairs_prefix(b, phase, t).value() == prefix);
        prefix += keys;
      }
      CHECK(block_sparse_pairs_prefix(b, phase, n).value() == prefix);
    }
    // A call's pairs summed over heads, prefill and decode, two requests: brute force again.
    auto brute = [&](std::int64_t s, std::int64_t p) {
      std::int64_t sum = 0;
      for (std::int64_t h = 0; h < sh.q_heads; ++h)
        for (std::int64_t t = s; t < s + p; ++t)
          for (std::int64_t k = 0; k <= t; ++k)
            sum += reference_sees(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, h, t, k);
      return 2 * sum;
    };
    for (auto [s, p] : {std::pair<std::int64_t, std::int64_t>{0, 67},
                        {0, 1},
                        {13, 29},
                        {40, 1},
                        {66, 1},
                        {9, 0}}) {
      call c;
      c.batch = 2;
      c.context = s;
      c.tokens = p;
      std::int64_t want = brute(s, p);
      CHECK(block_sparse_head_pairs(c, a).value() == want);
    }
    // The closed form's decode step and read series, at every context: keys over heads, and per
    // KV head the union of its group's earlier keys.
    length_series step = block_sparse_step_series(a, 1);
    length_series read = block_sparse_read_series(a, 1);
    const std::int64_t group = sh.q_heads / sh.kv_heads;
    for (std::int64_t x = 0; x < n; ++x) {
      CAPTURE(x);
      std::int64_t keys = 0, records = 0;
      for (std::int64_t h = 0; h < sh.q_heads; ++h)
        for (std::int64_t k = 0; k <= x; ++k)
          keys += reference_sees(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, h, x, k);
      for (std::int64_t g = 0; g < sh.kv_heads; ++g)
        for (std::int64_t k = 0; k < x; ++k) {
          bool any = false;
          for (std::int64_t h = g * group; h < (g + 1) * group; ++h)
            any = any || reference_sees(sh.block, sh.local, sh.vert, sh.homo, sh.q_heads, h, x, k);
          records += any;
        }
      CHECK(step.at(x).value() == keys);
      CHECK(read.at(x).value() == records);
      CHECK(block_sparse_read_records(a, x).value() == records);
    }
  }
}

TEST_CASE("block_sparse: a schema field of GQA, never beside a window or a chunk") {
  const std::string base =
      "schema: 1\nname: t\nsource: test\nvocab: 16\nhidden: 8\nprecision: {weights: bf16, kv: "
      "bf16}\nlayers:\n  count: 2\n  attention: {kind: gqa, q_heads: 4, kv_heads: 2, head_dim: "
      "2, ";
  const std::string tail = "}\n  ffn: {kind: swiglu, intermediate: 16, bias: true}\n  norms: 2\n";
  testing::model m = testing::model::from_text(
      base + "block_sparse: {block: 4, local_blocks: 2, vert_stride: 3}" + tail);
  const auto& a = std::get<attention_gqa>(m.g.layers[0].attention);
  REQUIRE(a.block_sparse);
  CHECK(a.block_sparse->block == 4);
  CHECK(!a.block_sparse->homo_heads);
  CHECK(attention_mode(m.g.layers[0].attention) == "block_sparse");
  CHECK(!kv_cap(a));  // the whole history is cached
  // State as full attention's: 2 layers x (K + V of 2 heads x 2) x 2 B = 32 B a token.
  CHECK(state(m, 37) == 32 * 37);
  // The closed form agrees with the itemised tally at every length and call.
  closed_form cf(m.g);
  for (std::int64_t n = 0; n <= 30; ++n) {
    CAPTURE(n);
    CHECK(cf.state(n).total == tally_state(m.g, n).total);
    CHECK(cf.state(n).decode_read == tally_state(m.g, n).decode_read);
    call d = make_call(m.spec, 1, n, 1);
    CHECK(cf.forward(d).flops == tally_forward(m.g, d).flops);
    call p = make_call(m.spec, 3, n, 7);
    CHECK(cf.forward(p).flops == tally_forward(m.g, p).flops);
  }
  // Bad input: one line at the field.
  auto err = [&](const std::string& bs) { return testing::error_of(base + bs + tail); };
  std::string e = err("block_sparse: {block: 4, local_blocks: 0, vert_stride: 3}");
  CAPTURE(e);
  CHECK(e.find("local_blocks") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  e = err("block_sparse: {block: 4, local_blocks: 2, vert_stride: 0}");
  CHECK(e.find("vert_stride") != std::string::npos);
  e = err("block_sparse: {block: 2000000, local_blocks: 2, vert_stride: 3}");
  CHECK(e.find("block") != std::string::npos);
  CHECK(e.find("limit") != std::string::npos);
  e = err("window: 8, block_sparse: {block: 4, local_blocks: 2, vert_stride: 3}");
  CHECK(e.find("block_sparse") != std::string::npos);
  e = err("block_sparse: {block: 4, local_blocks: 2, vert_stride: 3, stride: 1}");
  CHECK(e.find("stride") != std::string::npos);
}

TEST_CASE("phi3small 8K: 7,392,272,384 parameters, the card's 7.39B (tied head, biases)") {
  testing::model m(fixture(k8k));
  // By hand, 32 layers of hidden 4096: query_key_value 4096 x (32 + 2 x 8) x 128 = 25,165,824
  // with its 6,144-wide bias, dense 4096 x 4096 + 4,096; gegelu up_proj 4096 x 2 x 14336 with
  // 28,672 biases and down_proj 14336 x 4096 with 4,096: 176,160,768 + 32,768; two LayerNorms
  // of weight and bias 4 x 4096: 218,163,200 a layer, 6,981,222,400 in all; the embedding
  // 100352 x 4096 = 411,041,792 (the head tied to it), the final LayerNorm 8,192.
  CHECK(params(m) == 7'392'272'384);
  // BF16, one stored table: 14,784,544,768 B, which the four published shards (4.83 + 4.8 + 4.8
  // + 0.352 GB, the repository's file listing) add up to at their printed precision.
  CHECK(testing::weight_bytes(m) == 14'784'544'768);
  CHECK(m.spec.tie_embeddings);
  CHECK(m.spec.layer_norm);
  CHECK(m.spec.max_position_embeddings == 8192);
  // Layers 1, 3, ..., 31 dense; 0, 2, ..., 30 block-sparse (64-token blocks, 16 local, every
  // 8th, per-head phases).
  for (const layer& l : m.g.layers) {
    CAPTURE(l.index);
    const auto& a = std::get<attention_gqa>(l.attention);
    CHECK(a.qkv_bias);
    CHECK(a.o_bias);
    CHECK(a.block_sparse.has_value() == (l.index % 2 == 0));
    if (a.block_sparse) CHECK(*a.block_sparse == block_sparse_spec{64, 16, 8, false});
    const auto& f = std::get<ffn_swiglu>(l.ffn);
    CHECK(f.intermediate == 14336);
    CHECK(f.bias);
  }
  // State: every layer keeps the whole history, K + V of 8 heads x 128 in BF16 = 4,096 B a token
  // a layer, 131,072 B a token. 8K: 8192 x 131072 = 1,073,741,824 B (1 GiB); 128K: 131072 x
  // 131072 = 17,179,869,184 B (16 GiB), as full attention's.
  CHECK(state(m, 8192) == 1'073'741'824);
  CHECK(state(m, 131072) == 17'179'869'184);
}

TEST_CASE("phi3small 128K: the same weights, the context limit 131072, the same state") {
  testing::model m(fixture(k128k));
  CHECK(params(m) == 7'392'272'384);
  CHECK(m.spec.max_position_embeddings == 131072);
  CHECK(state(m, 8192) == 1'073'741'824);
  CHECK(state(m, 131072) == 17'179'869'184);
}

TEST_CASE("phi3small: an 8K prefill's attention work and an 8K decode's reads, by hand") {
  testing::model m(fixture(k8k));
  // 4 x 128 = 512 FLOPs a pair and head. A dense layer: 32 heads x 8192 x 8193 / 2 =
  // 1,073,872,896 pairs. A block-sparse layer over 128 blocks of 64, per head of phase c: its own
  // block, 128 x (1 + ... + 64) = 266,240 pairs; then 64 x 64 pairs for every earlier block seen
  // from every query block: min(qb, 15) local ones, sum 120 + 112 x 15 = 1,800, and the vertical
  // ones below the band, sum over j = 1..112 of floor((j + c - 1) / 8) = F(112 + c) with
  // F(n) = sum_{i<n} floor(i / 8): 742, 756, 770, 784, 798, 812, 826, 840 for c = 1..8 (6,328).
  // step = max(1, 8 / 32) = 1: head h has c = h mod 8 + 1, four heads each phase. Over heads:
  // 32 x 266,240 + 4096 x (32 x 1,800 + 4 x 6,328) = 8,519,680 + 4096 x 82,912 = 348,127,232.
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 0, 8192));
  const std::int64_t dense = 1'073'872'896, sparse = 348'127'232;
  CHECK(f.interaction_flops.value() == 512LL * 16 * (dense + sparse));
  // The same from the block masks, counted block by block here.
  std::int64_t blocks = 0;
  for (std::int64_t h = 0; h < 32; ++h)
    for (std::int64_t qb = 0; qb < 128; ++qb)
      for (std::int64_t kb = 0; kb < qb; ++kb)
        blocks += (qb - kb < 16 || (kb + h + 1) % 8 == 0) ? 1 : 0;
  CHECK(32LL * 266'240 + 4096 * blocks == sparse);
  // A decode query at position 8192 (block 128): each KV head reads its 15 local blocks
  // (960 records) and the vertical blocks of its four query heads below the band (blocks
  // 0..112): phases 1-4 (even KV heads) 14 each, 5-8 (odd) 14, 14, 14 and 15: 8 x 960 + 64 x
  // (4 x 56 + 4 x 57) = 36,608 records of 512 B (K + V of one head x 128, BF16) = 18,743,296 B;
  // a dense layer its 8192 x 4096 B = 33,554,432 B.
  CHECK(tally_state(m.g, 8192).decode_read.value() == 16LL * (18'743'296 + 33'554'432));
  closed_form cf(m.g);
  CHECK(cf.state(8192).decode_read == tally_state(m.g, 8192).decode_read);
  call d = make_call(m.spec, 1, 8192, 1);
  CHECK(cf.forward(d).flops == tally_forward(m.g, d).flops);
}

TEST_CASE("phi3small: out-of-range blocksparse fields are one-line errors at the field") {
  std::ifstream in(fixture(k8k) + "/config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    std::size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  struct bad {
    const char* from;
    const char* to;
    const char* field;
  };
  for (bad b :
       {bad{"\"blocksparse_num_local_blocks\": 16", "\"blocksparse_num_local_blocks\": 0",
            "blocksparse_num_local_blocks"},
        bad{"\"blocksparse_vert_stride\": 8", "\"blocksparse_vert_stride\": 0",
            "blocksparse_vert_stride"},
        bad{"\"blocksparse_block_size\": 64", "\"blocksparse_block_size\": -64",
            "blocksparse_block_size"},
        bad{"\"blocksparse_block_size\": 64", "\"blocksparse_block_size\": 4194304",
            "blocksparse_block_size"},
        bad{"\"blocksparse_homo_head_pattern\": false", "\"blocksparse_homo_head_pattern\": 2",
            "blocksparse_homo_head_pattern"},
        bad{"\"hidden_act\": \"gegelu\"", "\"hidden_act\": \"gelu\"", "hidden_act"},
        bad{"\"ff_dim_multiplier\": null", "\"ff_dim_multiplier\": 3.5", "ff_dim_multiplier"}}) {
    std::string e = testing::import_error(with(b.from, b.to));
    CAPTURE(b.to);
    CAPTURE(e);
    CHECK(e.find(b.field) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  // From the command line: exit code 2 and one line on stderr naming file, line and field.
  auto dir = testing::scratch_dir("phi3small-bad");
  {
    std::ofstream out(dir / "config.json");
    out << with("\"blocksparse_num_local_blocks\": 16", "\"blocksparse_num_local_blocks\": 0");
  }
  cli_testing::outcome o = cli_testing::run({"params", "--model", (dir / "config.json").string()});
  CHECK(o.code == 2);
  CAPTURE(o.err);
  CHECK(o.err.find("config.json:") != std::string::npos);
  CHECK(o.err.find("blocksparse_num_local_blocks") != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

TEST_CASE("phi3small: dense_attention_every_n_layers says which layers are block-sparse") {
  const std::string head = R"({"model_type": "phi3small", "hidden_size": 64,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "ff_intermediate_size": 32, "vocab_size": 100, "hidden_act": "gegelu", )";
  auto kinds = [&](const std::string& extra) {
    hf::imported im = hf::import_text(head + extra + "}", "config.json", "t");
    testing::model m = testing::model::from_text(im.plain);
    std::string s;
    for (const layer& l : m.g.layers) s += attention_mode(l.attention) + " ";
    return s;
  };
  CHECK(kinds(R"("dense_attention_every_n_layers": 2)") == "block_sparse gqa block_sparse gqa ");
  CHECK(kinds(R"("dense_attention_every_n_layers": 3)") ==
        "block_sparse block_sparse gqa block_sparse ");
  CHECK(kinds(R"("dense_attention_every_n_layers": 0)") ==
        "block_sparse block_sparse block_sparse block_sparse ");
  CHECK(kinds(R"("dense_attention_every_n_layers": null)") ==
        "block_sparse block_sparse block_sparse block_sparse ");
}

TEST_CASE("phi3small: the reference executor proves the block-sparse counts (calc validate)") {
  // Phi-3-small scaled by 8 (4 query heads, 1 KV head) with blocks of 4, a band of 2 and a stride
  // of 3: a 40-token prefill spans 10 blocks and the decode steps cross a block boundary; every
  // counted quantity (state allocated, pairs, FLOPs) must equal the tally's.
  model_spec spec = testing::model(fixture(k8k)).spec;
  auto shrink = [](block_spec& b) {
    if (!b.attention) return;
    if (auto* a = std::get_if<attention_gqa>(&*b.attention); a && a->block_sparse)
      a->block_sparse = block_sparse_spec{4, 2, 3, false};
  };
  shrink(spec.layers.base);
  for (auto& [name, v] : spec.layers.variants) shrink(v);
  validation v = validate_model(spec, 8, 40, 3, 11);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  CHECK(v.pass);
}
