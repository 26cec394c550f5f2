// Lightning attention (`kind: lightning`, the Gated DeltaNet kind's lightning rule) and the
// MiniMax families that need it (src/spec/hf/families_minimax.cpp): minimax_text_01 and
// minimax_m1. The kind's tensors, state and work are worked by hand on a small model and checked
// against the CPU twin; the family from MiniMax-M1-80k's published config (tests/fixtures/hf,
// sources in SOURCES.md), its parameters against the published totals and its state at 8K and
// 128K worked by hand. State conventions are calc's: the recurrent state in precision.recurrent
// (FP32), the softmax layers' KV cache in precision.kv (BF16).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "engine/engine.h"
#include "exec/validate.h"
#include "hf_counts.h"
#include "spec/hf/import.h"
#include "tally/kinds.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
using testing::error_of;
using testing::model;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

// d = 64; one lightning layer of 4 heads of 16, blocks of 8 tokens.
const char* kLightning = R"(
name: lightning
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  norms: 1
  attention: {kind: lightning, heads: 4, head_dim: 16, block_size: 8}
  ffn: none
)";

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const attention_gdn& lightning_at(const model& m, std::size_t layer) {
  return std::get<attention_gdn>(m.g.layers.at(layer).attention);
}

}  // namespace

TEST_CASE("lightning: qkv_proj, the output gate, one norm over all heads, out_proj; no decay") {
  model m = model::from_text(kLightning);
  const attention_gdn& a = lightning_at(m, 0);
  CHECK(a.lightning());
  CHECK((a.qk_heads == 4 && a.v_heads == 4 && a.key_dim == 16 && a.value_dim == 16 &&
         a.conv_kernel == 0 && a.block == 8));
  CHECK(kind_name(m.g.layers[0].attention) == "lightning");
  CHECK(attention_mode(m.g.layers[0].attention) == "lightning");
  // Matrices (w = 4 x 16 = 64): qkv_proj 64 x 192 = 12,288; output_gate 64 x 64 = 4,096;
  // out_proj 64 x 64 = 4,096. Vectors: the norm over w 64, the layer norm 64, the final norm 64.
  // No A_log, dt_bias, a/b projections or convolution: the slopes are a buffer. Tied table
  // 1000 x 64.
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::attention].value() == 20'480);
  CHECK(p.categories[category::other].value() == 64 + 64 + 64);
  CHECK(p.total.value() == 20'480 + 192 + 64'000);
  // The same shapes as Gated DeltaNet count its a/b projections, A_log, dt_bias and gated norm
  // besides: a lightning layer is not one.
  model g = model::from_text(R"(
name: gdn
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  norms: 1
  attention: {kind: gated_deltanet, qk_heads: 4, v_heads: 4, key_dim: 16, value_dim: 16}
  ffn: none
)");
  CHECK(params(g) == p.total.value() + 2 * 64 * 4 + 4 + 4 + 16 - 64);
}

TEST_CASE("lightning: a fixed heads x head_dim^2 state, no convolution slots") {
  model m = model::from_text(kLightning);
  // recurrent: 4 x 16 x 16 fp32 = 4,096 B at any length; no conv component.
  for (std::int64_t n : {1, 8192, 131072}) {
    state_tally s = tally_state(m.g, n);
    CHECK(s.total.value() == 4'096);
    CHECK(s.per_token.is_zero());
    CHECK(s.decode_state_rw.value() == 2 * 4'096);
    for (const state_item& c : s.items) CHECK(c.name != "conv");
  }
  const recurrent_shape r = recurrent_of(lightning_at(m, 0));
  CHECK((r.step_products == 2 && r.chunk == 8 && r.chunks == recurrent_shape::scan::ssd));
}

TEST_CASE("lightning: 2 products a step; the block scheme over the model's blocks") {
  model m = model::from_text(kLightning);
  // Decode at S = 100: projections 2 x 20,480 = 40,960; the decayed update k^T v and the readout
  // q S, 2 x 16 x 16 each per head: 4 x 1,024 = 4,096; no convolution.
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 100, 1));
  CHECK(d.linear_flops.value() == 40'960);
  CHECK(d.state_flops.value() == 4'096);
  CHECK(d.by_kind["lightning"].value() == 40'960 + 4'096);
  CHECK(d.by_kind.count("gated_deltanet") == 0);
  // A prompt of 20 tokens: ceil(20 / 8) = 3 blocks padded to 8, per block and head 2 x 8^2 x 16
  // (q k^T) + 2 x 8^2 x 16 (times v) + 4 x 8 x 16^2 (q S and k^T v) = 12,288: x 3 x 4 heads =
  // 147,456. The call's linear_chunk does not change the model's block.
  forward_tally p = tally_forward(m.g, make_call(m.spec, 1, 0, 20));
  CHECK(p.state_flops.value() == 147'456);
  model c4 = model::from_text(kLightning, {"execution.linear_chunk=4"});
  CHECK(tally_forward(c4.g, make_call(c4.spec, 1, 0, 20)).state_flops.value() == 147'456);
  // Recurrent prefill: 20 steps of 4,096.
  model r = model::from_text(kLightning, {"execution.linear_prefill=recurrent"});
  CHECK(tally_forward(r.g, make_call(r.spec, 1, 0, 20)).state_flops.value() == 20 * 4'096);
}

TEST_CASE("lightning: the CPU twin counts what the tally says, full size and scaled") {
  model m = model::from_text(kLightning);
  for (std::int64_t k : {1, 4}) {
    validation v = validate_model(m.spec, k, 20, 2, 7);
    for (const validation_row& row : v.rows)
      CHECK_MESSAGE(row.pass, row.quantity << " " << row.kind);
    CHECK(v.pass);
  }
}

TEST_CASE("lightning: located errors") {
  std::string missing = kLightning;
  missing.replace(missing.find("head_dim: 16, "), 14, "");
  CHECK(error_of(missing).find("layers.attention.head_dim") != std::string::npos);
  std::string extra = kLightning;
  extra.replace(extra.find("block_size: 8"), 13, "conv_kernel: 4");
  CHECK(error_of(extra).find("conv_kernel") != std::string::npos);
  std::string zero = kLightning;
  zero.replace(zero.find("block_size: 8"), 13, "block_size: 0");
  CHECK(error_of(zero).find("block_size") != std::string::npos);
  // A block past any scan kernel's (each is padded to its size and costs a block x block
  // product) is refused at its field, not allocated.
  std::string huge = kLightning;
  huge.replace(huge.find("block_size: 8"), 13, "block_size: 2147483649");
  CHECK(error_of(huge).find("block_size") != std::string::npos);
  CHECK(error_of(huge).find("4096") != std::string::npos);
}

TEST_CASE("minimax_m1 (MiniMax-M1-80k): 70 lightning + 10 softmax layers; 456,089,655,296") {
  model m(fixture("minimax-m1-80k.json"));
  // Published: 456B total, 45.9B activated per token (the model cards of MiniMax-Text-01 and
  // MiniMax-M1, one architecture). By hand, d = 6144, 64 heads of 128 (w = 8192):
  // Lightning on the 70 layers with attn_type_list 0: qkv_proj 6144 x 24576 = 150,994,944,
  // output_gate 6144 x 8192 = 50,331,648, out_proj 8192 x 6144 = 50,331,648, the norm 8192:
  // 251,666,432 each, 70 layers 17,616,650,240.
  // Softmax on the 10 layers with 1 (7, 15, ..., 79): Q and O 6144 x 8192 = 50,331,648 each,
  // K and V 6144 x 1024 = 6,291,456 each, no biases: 113,246,208, 10 layers 1,132,462,080.
  // MoE on every layer: 32 experts of 3 x 6144 x 9216 = 169,869,312 (5,435,817,984) plus the
  // router 6144 x 32 = 196,608 and two norms 12,288: 5,436,026,880, 80 layers
  // 434,882,150,400. Untied embedding and head 2 x 200064 x 6144 = 2,458,386,432; final norm
  // 6144. Total 456,089,655,296 (the published 456B).
  CHECK(params(m) == 456'089'655'296);
  // Active: 30 of 32 experts idle on 80 layers, 80 x 30 x 169,869,312 = 407,686,348,800 fewer:
  // 48,403,306,496; without the embedding and the head 45,944,920,064, the published 45.9B.
  // calc's active leaves out the looked-up table alone (200064 x 6144 = 1,229,193,216).
  CHECK(tally_params(m.g).active.value() == 45'944'920'064 + 1'229'193'216);
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[7].attention));
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[79].attention));
  CHECK(lightning_at(m, 0).lightning());
  CHECK(lightning_at(m, 78).block == 256);  // block_size absent: the modeling code's 256
  for (const layer& l : m.g.layers) CHECK(std::holds_alternative<ffn_moe>(l.ffn));
  // State. KV: 10 layers x 2 x 8 heads x 128 x 2 B = 40,960 B/token. Lightning: 70 layers x
  // 64 x 128 x 128 x 4 B (FP32) = 293,601,280 B (280 MiB) at any length, no convolution.
  // 8K: 40,960 x 8192 + 293,601,280 = 335,544,320 + 293,601,280 = 629,145,600 B (600 MiB);
  // 128K: 40,960 x 131072 + 293,601,280 = 5,368,709,120 + 293,601,280 = 5,662,310,400 B.
  CHECK(state(m, 8192) == 629'145'600);
  CHECK(state(m, 131072) == 5'662'310'400);
  // H*: the KV cache passes the fixed state at 293,601,280 / 40,960 = 7,168 tokens.
  CHECK(tally_state(m.g, 7168).growing.value() == 293'601'280);
}

TEST_CASE("minimax_text_01: the same table under MiniMax-Text-01's model_type") {
  // MiniMax-Text-01's config.json was not found in the stored sources (SOURCES.md); its model
  // card states the architecture M1's config gives (80 layers, 7 lightning then 1 softmax, 64
  // heads of 128, 32 experts of 9216, top 2, d 6144, vocab 200,064), and MiniMax builds M1 on
  // it. Read M1's config under Text-01's model_type and class: the same counts.
  std::string json = text_of(fixture("minimax-m1-80k.json"));
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"\"minimax_m1\"", "\"minimax_text_01\""},
        {"\"MiniMaxM1ForCausalLM\"", "\"MiniMaxText01ForCausalLM\""}})
    json.replace(json.find(from), from.size(), to);
  model m = model::from_text(hf::import_text(json, "config.json", "minimax-text-01").plain);
  CHECK(params(m) == 456'089'655'296);
  CHECK(state(m, 131072) == 5'662'310'400);
}

TEST_CASE("minimax: a bad attn_type_list entry or a shared expert is a located error") {
  std::string json = text_of(fixture("minimax-m1-80k.json"));
  std::string two = json;
  two.replace(two.find("1\n  ],"), 1, "2");
  std::string e = testing::import_error(two);
  CHECK(e.find("attn_type_list") != std::string::npos);
  CHECK(e.find("expected 0 or 1") != std::string::npos);
  std::string shared = json;
  const std::string s0 = "\"shared_intermediate_size\": 0";
  shared.replace(shared.find(s0), s0.size(), "\"shared_intermediate_size\": 9216");
  CHECK(testing::import_error(shared).find("shared_intermediate_size") != std::string::npos);
}

TEST_CASE("minimax in vLLM's pool: a lightning page of heads / tp x 128 x 128, model dtype") {
  model m(fixture("minimax-m1-80k.json"));
  // vLLM's linear_attention_state_shape: (64 / tp, 128, 128), no convolution, in
  // mamba_cache_dtype ("auto": the model's BF16; linear_attention_state_dtype), not the FP32 SSM
  // format: 64 x 128 x 128 x 2 B = 2,097,152 B per layer and request at TP 1, 262,144 at TP 8.
  // A softmax layer keeps 8 / tp KV heads x 128 x 2 (K, V) x 2 B per token: 4,096 B at TP 1.
  for (std::int64_t tp : {1, 8}) {
    engine::engine_config c;
    c.tensor_parallel = tp;
    c.max_model_len = 8192;
    std::vector<engine::layer_cache> caches = engine::layer_caches(m.g, c);
    REQUIRE(caches.size() == 80);
    CHECK(caches[0].type == engine::layer_cache::kind::state);
    CHECK(caches[0].state_bytes.value() == 2'097'152 / tp);
    CHECK(caches[0].conv_bytes.value() == 0);
    CHECK(caches[7].type == engine::layer_cache::kind::full);
    CHECK(caches[7].token_bytes.value() == 4'096 / tp);
  }
  // Speculative tokens widen a convolution window; a lightning layer has none to widen.
  engine::engine_config spec;
  spec.max_model_len = 8192;
  spec.speculative.tokens = 3;
  CHECK(engine::layer_caches(m.g, spec)[0].state_bytes.value() == 2'097'152);
}
