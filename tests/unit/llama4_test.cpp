// Llama 4 (Scout 17B-16E, Maverick 17B-128E) and chunked local attention (`chunk`): read from the
// published configs (tests/fixtures/hf/meta-llama--Llama-4-*, sources in SOURCES.md there), the
// parameters checked against the published totals, the state at 8K and 128K and the attention
// work worked by hand, and the reference executor proving the chunk's counts.
#include <doctest/doctest.h>

#include <string>

#include "exec/validate.h"
#include "spec/hf/import.h"
#include "tally/call.h"
#include "tally/closed_form.h"
#include "tally/kinds.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

const char* const kScout = "meta-llama--Llama-4-Scout-17B-16E-Instruct";
const char* const kMaverick = "meta-llama--Llama-4-Maverick-17B-128E-Instruct";

}  // namespace

TEST_CASE("chunked pairs: a query sees (t mod chunk) + 1 keys, resetting at each boundary") {
  call c;
  c.batch = 1;
  c.context = 0;
  c.tokens = 10;
  // chunk 4: positions 0..9 see 1,2,3,4 | 1,2,3,4 | 1,2.
  CHECK(chunked_attention_pairs(c, 4).value() == 10 + 10 + 3);
  CHECK(chunked_pairs_prefix(10, 4).value() == 23);
  // A window of 4 would see 1,2,3,4,4,4,4,4,4,4 = 34: a chunk is not a window.
  CHECK(attention_pairs(c, 4).value() == 34);
  // Decode at context 8 (position 8 opens the third chunk): one key; at 11, four.
  c.context = 8;
  c.tokens = 1;
  CHECK(chunked_attention_pairs(c, 4).value() == 1);
  c.context = 11;
  CHECK(chunked_attention_pairs(c, 4).value() == 4);
  // Two requests, a prefill of 3 over 6 cached (positions 6, 7, 8: 3 + 4 + 1 keys).
  c.batch = 2;
  c.context = 6;
  c.tokens = 3;
  CHECK(chunked_attention_pairs(c, 4).value() == 2 * 8);
  c.exec.pairs = pair_counting::rectangular;  // the eager rectangle masks afterwards
  CHECK(chunked_attention_pairs(c, 4).value() == 2 * 3 * 9);
}

TEST_CASE("chunk: a schema field of GQA, never beside a window") {
  const std::string base =
      "schema: 1\nname: t\nsource: test\nvocab: 16\nhidden: 8\nprecision: {weights: bf16, kv: "
      "bf16}\nlayers:\n  count: 2\n  attention: {kind: gqa, q_heads: 2, kv_heads: 1, head_dim: "
      "4, ";
  const std::string tail = "}\n  ffn: {kind: swiglu, intermediate: 16}\n  norms: 2\n";
  testing::model m = testing::model::from_text(base + "chunk: 4" + tail);
  const auto& a = std::get<attention_gqa>(m.g.layers[0].attention);
  CHECK(a.chunk == 4);
  CHECK(attention_mode(m.g.layers[0].attention) == "chunked");
  CHECK(kv_cap(a) == 4);
  std::string e = testing::error_of(base + "window: 4, chunk: 4" + tail);
  CAPTURE(e);
  CHECK(e.find("chunk") != std::string::npos);
  CHECK(e.find("not both") != std::string::npos);
  // State: 2 layers x 2 B x (K + V of 1 head x 4) = 32 B a token, min(N, 4) tokens kept; a
  // decode query at N reads N mod 4 records.
  CHECK(state(m, 3) == 32 * 3);
  CHECK(state(m, 9) == 32 * 4);
  CHECK(tally_state(m.g, 9).decode_read.value() == 32 * 1);
  CHECK(tally_state(m.g, 8).decode_read.value() == 0);
  CHECK(tally_state(m.g, 9).window_write.value() == 32);  // one record a layer, a step
  // The closed form agrees with the tally at every length across two boundaries.
  closed_form cf(m.g);
  for (std::int64_t n = 0; n <= 12; ++n) {
    CAPTURE(n);
    CHECK(cf.state(n).total == tally_state(m.g, n).total);
    CHECK(cf.state(n).decode_read == tally_state(m.g, n).decode_read);
    call d = make_call(m.spec, 1, n, 1);
    CHECK(cf.forward(d).flops == tally_forward(m.g, d).flops);
  }
}

TEST_CASE("llama4 Scout: 107,769,861,120 text parameters, the card's 109B with the vision tower") {
  testing::model m(fixture(kScout));
  // By hand, 48 layers of hidden 5120: attention q 5120 x 5120, k and v 5120 x 1024, o 5120 x
  // 5120 = 62,914,560 (use_qk_norm is a weightless L2 norm); MoE on every layer
  // (interleave_moe_layer_step 1): 16 experts + 1 shared of 3 x 5120 x 8192 = 125,829,120 each,
  // router 5120 x 16, two norms 2 x 5120: 2,202,101,760 a layer, 105,700,884,480 in all;
  // embedding and untied head 2 x 202048 x 5120 = 2,068,971,520; final norm 5120.
  CHECK(params(m) == 107'769'861'120);
  // The vision tower not counted (vision_config of the published file, by hand): patch
  // embedding 588 x 1408, class embedding 1408, positions 577 x 1408, pre/post LayerNorms
  // 4 x 1408, 34 blocks of 23,807,872 (q/k/v/o 1408 x 1408 with biases, fc1 1408 x 5632 and fc2
  // 5632 x 1408 with biases, two LayerNorms), the pixel-shuffle MLP 5632 x 4096 + 4096 x 4096 and
  // the projector 4096 x 5120: 871,932,416. Together 108,641,793,536: the model card's "109B
  // (Total)".
  CHECK(params(m) + 871'932'416 == 108'641'793'536);
  // Active: one routed and the shared expert a token, the head, not the embedding table: 48 x
  // (62,914,560 + 2 x 125,829,120 + 81,920 + 10,240) + 202048 x 5120 + 5120 = 16,138,408,960
  // (17,172,894,720 with the embedding row table: the card's "17B (Activated)").
  CHECK(tally_params(m.g).active.value() == 16'138'408'960);
  // Layers: NoPE (full) every 4th layer (no_rope_layer_interval 4, the list absent), the others
  // chunked at attention_chunk_size 8192.
  std::int64_t chunked = 0;
  for (const layer& l : m.g.layers) {
    const auto& a = std::get<attention_gqa>(l.attention);
    CHECK(!a.window);
    CHECK(a.chunk == ((l.index + 1) % 4 != 0 ? std::optional<std::int64_t>(8192) : std::nullopt));
    chunked += a.chunk ? 1 : 0;
  }
  CHECK(chunked == 36);
  // State, K + V of 8 heads x 128 in BF16 = 4,096 B a token a layer. At 8K every layer holds
  // all 8192 tokens (the chunk is full): 48 x 8192 x 4096 = 1,610,612,736 B (1.5 GiB). At 128K
  // the 12 NoPE layers hold 131072 tokens and the 36 chunked layers one chunk of 8192:
  // 12 x 131072 x 4096 + 36 x 8192 x 4096 = 6,442,450,944 + 1,207,959,552 = 7,650,410,496 B
  // (7.125 GiB; full attention everywhere would be 25,769,803,776). 131072 = 16 x 8192, so the
  // live chunk is full too: (131072 - 1) mod 8192 + 1 = 8192.
  CHECK(state(m, 8192) == 1'610'612'736);
  CHECK(state(m, 131072) == 7'650'410'496);
  // A decode query right after 131072 tokens opens a new chunk: the chunked layers read nothing,
  // the NoPE layers their whole history.
  CHECK(tally_state(m.g, 131072).decode_read.value() == 12LL * 131072 * 4096);
}

TEST_CASE("llama4 Maverick: 400,711,848,960 text parameters, dense and MoE layers alternating") {
  testing::model m(fixture(kMaverick));
  // interleave_moe_layer_step 2: layers 1, 3, ..., 47 MoE (128 experts + 1 shared of 3 x 5120 x
  // 8192, router 5120 x 128): 62,914,560 + 129 x 125,829,120 + 655,360 + 10,240 =
  // 16,295,536,640; layers 0, 2, ..., 46 dense SwiGLU of intermediate_size_mlp 16384:
  // 62,914,560 + 3 x 5120 x 16384 + 10,240 = 314,583,040; 24 of each, plus 2,068,971,520 and
  // 5120: 400,711,848,960. With the same vision tower (871,932,416): 401,583,781,376, which the
  // card rounds to "400B (Total)" (0.4% under; Scout's 108.64B it gives as "109B").
  CHECK(params(m) == 400'711'848'960);
  CHECK(params(m) + 871'932'416 == 401'583'781'376);
  for (const layer& l : m.g.layers) {
    CAPTURE(l.index);
    CHECK((std::get_if<ffn_moe>(&l.ffn) != nullptr) == (l.index % 2 == 1));
  }
  // Active: 24 x (62,914,560 + 2 x 125,829,120 + 655,360 + 10,240) + 24 x 314,583,040 +
  // 202048 x 5120 + 5120 = 16,150,205,440 (17.18B with the embedding table: "17B").
  CHECK(tally_params(m.g).active.value() == 16'150'205'440);
  // The attention is Scout's: the same state at 8K and 128K.
  CHECK(state(m, 8192) == 1'610'612'736);
  CHECK(state(m, 131072) == 7'650'410'496);
}

TEST_CASE("llama4: attention FLOPs of a 16K prefill count each query's own chunk") {
  testing::model m(fixture(kScout));
  // 4 x 40 heads x 128 = 20,480 FLOPs a pair. A chunked layer over 16384 positions: two chunks
  // of 1 + ... + 8192 = 8192 x 8193 pairs; a NoPE layer 16384 x 16385 / 2.
  forward_tally f = tally_forward(m.g, make_call(m.spec, 1, 0, 16384));
  const std::int64_t chunked = 8192LL * 8193, full = 16384LL * 16385 / 2;
  CHECK(f.interaction_flops.value() == 20'480LL * (36 * chunked + 12 * full));
}

TEST_CASE("llama4: layer_types and no_rope_layers say which layers are chunked") {
  // A two-layer llama4_text config with the lists written out (Llama4TextConfig's own names).
  const std::string head = R"({"model_type": "llama4_text", "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "intermediate_size": 32, "intermediate_size_mlp": 48, "num_local_experts": 4,
    "vocab_size": 100, "attention_chunk_size": 16, )";
  auto kinds = [&](const std::string& extra) {
    hf::imported im = hf::import_text(head + extra + "}", "config.json", "t");
    testing::model m = testing::model::from_text(im.plain);
    std::string s;
    for (const layer& l : m.g.layers) s += attention_mode(l.attention) + " ";
    return s;
  };
  CHECK(kinds(R"("no_rope_layers": [0, 1])") == "gqa chunked ");
  CHECK(kinds(R"("layer_types": ["chunked_attention", "full_attention"])") == "chunked gqa ");
  CHECK(kinds(R"("no_rope_layer_interval": 1)") == "gqa gqa ");
  std::string e = testing::import_error(head + R"("no_rope_layers": [2, 1]})");
  CAPTURE(e);
  CHECK(e.find("no_rope_layers") != std::string::npos);
  CHECK(e.find("expected 0 or 1") != std::string::npos);
  e = testing::import_error(head + R"("moe_layers": [5]})");
  CHECK(e.find("moe_layers") != std::string::npos);
}

TEST_CASE("llama4: the reference executor proves the chunked counts (calc validate)") {
  // Scout scaled by 32 with a chunk of 16: a 40-token prefill crosses two boundaries and the
  // decode steps land in the third chunk; every counted quantity (state allocated, pairs, FLOPs)
  // must equal the tally's.
  model_spec spec = testing::model(fixture(kScout)).spec;
  auto shrink = [](block_spec& b) {
    if (!b.attention) return;
    if (auto* a = std::get_if<attention_gqa>(&*b.attention); a && a->chunk) a->chunk = 16;
  };
  shrink(spec.layers.base);
  for (auto& [name, v] : spec.layers.variants) shrink(v);
  validation v = validate_model(spec, 32, 40, 2, 11);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  CHECK(v.pass);
}
