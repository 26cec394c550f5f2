// State-space families of the Hugging Face import (src/spec/hf/families_ssm.cpp) and the Mamba-1
// form of the SSM kind they need: jamba, mamba, falcon_mamba, bamba. Each from a public config
// (tests/fixtures/hf, sources in SOURCES.md), its parameters checked against the published total
// and its state at 8K and 128K worked by hand in the comment. State conventions are calc's: the
// SSM state in precision.recurrent (FP32), the convolution's conv_kernel slots per channel in
// precision.conv (BF16), the [channels, conv_kernel] conv_states tensor of HF's Mamba caches
// (vLLM keeps conv_kernel - 1: engine_test and the last case here).
#include <doctest/doctest.h>

#include <string>

#include "common/dtype.h"
#include "engine/engine.h"
#include "exec/validate.h"
#include "spec/hf/import.h"
#include "tally/kinds.h"
#include "tally/tally.h"
#include "hf_counts.h"
#include "test_model.h"

using namespace calc;
using testing::error_of;
using testing::model;

namespace {

using testing::fixture;
using testing::params;
using testing::state;

const attention_mamba2& mixer_at(const model& m, std::size_t layer) {
  return std::get<attention_mamba2>(m.g.layers.at(layer).attention);
}

// d = 64; one Mamba-1 layer: inner 128, N 8, dt rank 4, kernel 4, Jamba's dt/B/C norms.
const char* kMamba1 = R"(
name: mamba1
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  norms: 1
  attention: {kind: mamba, inner: 128, state_dim: 8, dt_rank: 4, conv_kernel: 4, dt_norms: true}
  ffn: none
)";

}  // namespace

TEST_CASE("mamba (Mamba-1): the S6 mixer's tensors, as HF's MambaMixer stores them") {
  model m = model::from_text(kMamba1);
  const attention_mamba2& a = mixer_at(m, 0);
  CHECK(a.selective());
  CHECK((a.heads == 128 && a.head_dim == 1 && a.groups == 1 && !a.gated_norm));
  CHECK(kind_name(m.g.layers[0].attention) == "mamba");
  CHECK(attention_mode(m.g.layers[0].attention) == "mamba");
  // Matrices: in_proj 64 x 2*128 = 16,384; x_proj 128 x (4 + 2*8) = 2,560; dt_proj 4 x 128 =
  // 512; out_proj 128 x 64 = 8,192. Vectors: conv1d 128 x 4 = 512 and its bias 128, dt_proj's
  // bias 128, A_log 128 x 8 = 1,024, D 128, the dt/B/C norms 4 + 8 + 8 = 20, the layer norm
  // 64 and the final norm 64. The tied table 1000 x 64.
  params_tally p = tally_params(m.g);
  CHECK(p.categories[category::attention].value() == 27'648);
  CHECK(p.categories[category::other].value() == 512 + 128 + 128 + 1'024 + 128 + 20 + 64 + 64);
  CHECK(p.total.value() == 27'648 + 2'068 + 64'000);
  // Without Jamba's norms, with the projection biases (in_proj 256, out_proj 64).
  model b = model::from_text(
      kMamba1, {"layers.attention.dt_norms=false", "layers.attention.proj_bias=true"});
  CHECK(params(b) == p.total.value() - 20 + 256 + 64);
}

TEST_CASE("mamba (Mamba-1): fixed state of inner x N, kernel slots over x alone") {
  model m = model::from_text(kMamba1);
  // recurrent: 128 x 8 fp32 = 4,096 B; conv: 128 channels (x only: B and C come after the
  // convolution) x 4 slots bf16 = 1,024 B.
  for (std::int64_t n : {1, 8192, 131072}) {
    state_tally s = tally_state(m.g, n);
    CHECK(s.total.value() == 4'096 + 1'024);
    CHECK(s.per_token.is_zero());
    CHECK(s.decode_state_rw.value() == 2 * 4'096);
  }
  CHECK(recurrent_of(mixer_at(m, 0)).conv_channels.value() == 128);
}

TEST_CASE("mamba (Mamba-1): every token a recurrent step, whatever the prefill mode") {
  model m = model::from_text(kMamba1);
  // Decode at S = 100: projections 2 x 27,648 = 55,296; the scan's update and readout 4 x 128 x
  // 8 = 4,096; the cached convolution 2 x 128 x 4 x (1 + 1) = 2,048; the head 2 x 1000 x 64.
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 100, 1));
  CHECK(d.linear_flops.value() == 55'296);
  CHECK(d.state_flops.value() == 4'096 + 2'048);
  CHECK(d.by_kind["mamba"].value() == 55'296 + 4'096 + 2'048);
  CHECK(d.by_kind.count("mamba2") == 0);
  // A prompt of 100 tokens: S6 has no chunked form, so 100 x 4,096 in both modes (SSD would
  // count chunks here); the convolution 2 x 128 x 4 x (100 + 3) = 105,472.
  forward_tally p = tally_forward(m.g, make_call(m.spec, 1, 0, 100));
  CHECK(p.state_flops.value() == 100 * 4'096 + 105'472);
  CHECK(p.linear_flops.value() == 2LL * 100 * 27'648);
  model r = model::from_text(kMamba1, {"execution.linear_prefill=recurrent"});
  CHECK(tally_forward(r.g, make_call(r.spec, 1, 0, 100)).state_flops.value() ==
        p.state_flops.value());
}

TEST_CASE("mamba (Mamba-1): the CPU twin counts what the tally says") {
  model m = model::from_text(kMamba1);
  validation v = validate_model(m.spec, 1, 24, 2, 7);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  CHECK(v.pass);
}

TEST_CASE("mamba (Mamba-1): located errors") {
  std::string yaml = kMamba1;
  yaml.replace(yaml.find("dt_rank: 4, "), 12, "");
  CHECK(error_of(yaml).find("layers.attention.dt_rank") != std::string::npos);
  std::string extra = kMamba1;
  extra.replace(extra.find("dt_norms: true"), 14, "heads: 4");
  CHECK(error_of(extra).find("heads") != std::string::npos);
}

TEST_CASE("jamba (Jamba-v0.1): Mamba-1 + attention 1:7, MoE every 2nd; 51,570,323,328") {
  model m(fixture("jamba-v0.1.json"));
  // Published: 52B total, 12B active (the model card of ai21labs/Jamba-v0.1 and of
  // AI21-Jamba-Mini-1.5/1.6, the same architecture); the hub lists 51.6B. By hand, d = 4096:
  // Attention on layers 4, 12, 20, 28 (attn_layer_offset 4, period 8): Q and O 4096^2, K and V
  // 4096 x 1024, no biases: 41,943,040 each, 4 layers 167,772,160.
  // Mamba on the other 28: inner 2 x 4096 = 8192, N 16, dt rank 256, kernel 4. in_proj 4096 x
  // 16384 = 67,108,864; conv1d 8192 x 4 + 8192 = 40,960; x_proj 8192 x (256 + 32) = 2,359,296;
  // dt_proj 256 x 8192 + 8192 = 2,105,344; A_log 8192 x 16 = 131,072; D 8192; out_proj 8192 x
  // 4096 = 33,554,432; dt/B/C norms 256 + 16 + 16 = 288: 105,308,448 each, 28 layers
  // 2,948,636,544.
  // Feed-forward on every layer: odd layers (expert_layer_offset 1, period 2) 16 experts of
  // 3 x 4096 x 14336 = 176,160,768 plus the router 4096 x 16: 2,818,637,824 each, 16 layers
  // 45,098,205,184; even layers one dense SwiGLU 176,160,768, 16 layers 2,818,572,288.
  // Two norms per layer 32 x 8192 = 262,144; final norm 4096; untied embedding and head 2 x
  // 65536 x 4096 = 536,870,912. Total 51,570,323,328.
  CHECK(params(m) == 51'570'323'328);
  // Active: 14 of 16 experts idle on each of 16 MoE layers: 16 x 14 x 176,160,768 =
  // 39,460,012,032 fewer, 12,110,311,296 (the published 12B active); calc's active leaves out
  // the looked-up embedding table too (65536 x 4096 = 268,435,456): 11,841,875,840.
  CHECK(tally_params(m.g).active.value() == 12'110'311'296 - 268'435'456);
  CHECK(tally_params(m.g).weight_bytes.value() == 2 * 51'570'323'328LL);  // bfloat16
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[4].attention));
  CHECK(std::holds_alternative<ffn_moe>(m.g.layers[5].ffn));
  CHECK(std::holds_alternative<ffn_swiglu>(m.g.layers[4].ffn));
  const attention_mamba2& x = mixer_at(m, 0);
  CHECK((x.selective() && x.heads == 8192 && x.state_dim == 16 && x.dt_rank == 256 && x.dt_norms &&
         x.conv_kernel == 4));
  // State. KV: 4 layers x 2 x 8 heads x 128 x 2 B = 16,384 B/token. Mamba: 28 layers x (SSM
  // 8192 x 16 x 4 B = 524,288 + conv 8192 x 4 x 2 B = 65,536) = 16,515,072 B at any length.
  // 8K: 16,384 x 8192 + 16,515,072 = 150,732,800 B; 128K: 16,384 x 131072 + 16,515,072 =
  // 2,163,998,720 B.
  CHECK(state(m, 8192) == 150'732'800);
  CHECK(state(m, 131072) == 2'163'998'720);
}

TEST_CASE("jamba (AI21-Jamba-1.5-Mini): the 1.5 release reads as Jamba-v0.1's architecture") {
  model mini(fixture("ai21-jamba-1.5-mini.json"));
  model v01(fixture("jamba-v0.1.json"));
  // The model card's 52B total, 12B active: the same counts and state as v0.1 above.
  CHECK(params(mini) == 51'570'323'328);
  CHECK(tally_params(mini.g).active.value() == tally_params(v01.g).active.value());
  CHECK(state(mini, 131072) == state(v01, 131072));
  REQUIRE(mini.spec.max_position_embeddings);
  CHECK(*mini.spec.max_position_embeddings == 262144);
}

TEST_CASE("jamba: the Mamba-1 mixers and the MoE pass the CPU twin at 1/64 scale") {
  model m(fixture("jamba-v0.1.json"));
  model_spec small = m.spec;
  small.layers.count = 8;  // layers 0-7: one attention layer (4), four MoE layers
  validation v = validate_model(small, 64, 16, 2, 3);
  for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
  CHECK(v.pass);
}

TEST_CASE("jamba: a window, an offset past its period or a bad dt rank is a located error") {
  CHECK(testing::import_error(R"({"model_type": "jamba", "sliding_window": 4096})")
            .find("sliding_window") != std::string::npos);
  CHECK(testing::import_error(R"({"model_type": "jamba", "attn_layer_offset": 8})")
            .find("attn_layer_offset") != std::string::npos);
  CHECK(testing::import_error(R"({"model_type": "jamba", "mamba_dt_rank": "half"})")
            .find("mamba_dt_rank") != std::string::npos);
  // "auto": ceil(4096 / 16) = 256, as JambaConfig derives it.
  model a = model::from_text(
      hf::import_text(R"({"model_type": "jamba", "mamba_dt_rank": "auto"})", "config.json", "t")
          .plain);
  CHECK(mixer_at(a, 0).dt_rank == 256);
}

TEST_CASE("mamba (mamba-2.8b-hf): 64 Mamba-1 layers, tied head; 2,768,345,600 parameters") {
  model m(fixture("mamba-2.8b-hf.json"));
  // Published: state-spaces/mamba-2.8b-hf, 2.77B parameters (the "2.8B" of the model's name).
  // By hand, d = 2560, inner 5120 (intermediate_size), N 16, dt rank 160, kernel 4: in_proj
  // 2560 x 10240 = 26,214,400; conv1d 5120 x 4 + 5120 = 25,600; x_proj 5120 x 192 = 983,040;
  // dt_proj 160 x 5120 + 5120 = 824,320; A_log 81,920; D 5120; out_proj 13,107,200; one norm
  // 2560: 41,244,160 per layer, x 64 = 2,639,626,240; the tied table 50280 x 2560 =
  // 128,716,800; the final norm 2560.
  CHECK(params(m) == 2'768'345'600);
  CHECK(tally_params(m.g).weight_bytes.value() == 4 * 2'768'345'600LL);  // float32
  CHECK(m.spec.tie_embeddings);
  // No attention: 64 x (5120 x 16 x 4 B = 327,680 + 5120 x 4 x 2 B = 40,960) = 23,592,960 B at
  // 8K and 128K alike.
  CHECK(state(m, 8192) == 23'592'960);
  CHECK(state(m, 131072) == 23'592'960);
}

TEST_CASE("falcon_mamba (Falcon-Mamba-7B): untied head, stale expand; 7,272,665,088") {
  model m(fixture("falcon-mamba-7b.json"));
  // Published: tiiuae/falcon-mamba-7b, 7.27B parameters. The config's expand 16 is stale: the
  // weights are intermediate_size 8192 = 2 x 4096 wide. By hand, d = 4096, N 16, dt rank 256:
  // the Jamba mixer above without its dt/B/C norms (Falcon-Mamba's have no weights),
  // 105,308,160, plus one norm 4096: 105,312,256 per layer, x 64 = 6,739,984,384; untied
  // embedding and head 2 x 65024 x 4096 = 532,676,608; the final norm 4096.
  CHECK(params(m) == 7'272'665'088);
  CHECK(!m.spec.tie_embeddings);
  CHECK(mixer_at(m, 0).heads == 8192);
  // 64 x (8192 x 16 x 4 B = 524,288 + 8192 x 4 x 2 B = 65,536) = 37,748,736 B at any length.
  CHECK(state(m, 8192) == 37'748'736);
  CHECK(state(m, 131072) == 37'748'736);
}

TEST_CASE("bamba (Bamba-9B): Mamba2 with attention on layers 9, 18, 27; 9,780,235,392") {
  model m(fixture("bamba-9b.json"));
  // Published: 9.78B (the BambaConfig table of the transformers docs). By hand, d = 4096:
  // Mamba2 on 29 layers, 128 heads x 64 = 8192, N 128, one group, kernel 4: in_proj 4096 x
  // (2 x 8192 + 2 x 128 + 128) = 68,681,728; conv1d (8192 + 256) x 4 + 8448 = 42,240;
  // dt_bias, A_log, D 3 x 128; gated norm 8192; out_proj 8192 x 4096 = 33,554,432:
  // 102,286,976 each, 2,966,322,304. Attention on 3: 41,943,040 each, 125,829,120. SwiGLU
  // 3 x 4096 x 14336 = 176,160,768 on all 32: 5,637,144,576. Norms 2 x 32 x 4096 + 4096 =
  // 266,240; untied embedding and head 2 x 128256 x 4096 = 1,050,673,152.
  CHECK(params(m) == 9'780'235'392);
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[9].attention));
  CHECK(std::holds_alternative<attention_mamba2>(m.g.layers[8].attention));
  CHECK(!mixer_at(m, 0).selective());
  CHECK(m.spec.execution.chunk == 256);  // mamba_chunk_size
  // KV: 3 x 2 x 8 x 128 x 2 B = 12,288 B/token. Mamba2: 29 x (SSM 128 x 64 x 128 x 4 B =
  // 4,194,304 + conv 8448 x 4 x 2 B = 67,584) = 123,594,752 B. 8K: 100,663,296 + 123,594,752 =
  // 224,258,048 B; 128K: 1,610,612,736 + 123,594,752 = 1,734,207,488 B.
  CHECK(state(m, 8192) == 224'258'048);
  CHECK(state(m, 131072) == 1'734'207'488);
}

TEST_CASE("bamba: an attention index outside the layers is a located error") {
  CHECK(testing::import_error(
            R"({"model_type": "bamba", "num_hidden_layers": 4, "attn_layer_indices": [4]})")
            .find("attn_layer_indices") != std::string::npos);
}

TEST_CASE("jamba in vLLM's pool: a Mamba-1 state page of (kernel - 1) x inner + inner x N") {
  model m(fixture("jamba-v0.1.json"));
  // mamba1_state_shape: conv (3 x 8192) in the conv format, temporal 8192 x 16 in the SSM
  // format: BF16 conv and FP32 SSM, 49,152 + 524,288 = 573,440 B per layer and request; at TP 2
  // each rank holds half the channels.
  const dtype bf16 = parse_dtype("bf16"), fp32 = parse_dtype("fp32");
  CHECK(engine::mamba2_state_bytes(mixer_at(m, 0), 1, bf16, fp32).value() == 573'440);
  CHECK(engine::mamba2_state_bytes(mixer_at(m, 0), 2, bf16, fp32).value() == 573'440 / 2);
}

TEST_CASE("short_conv: LFM2's gated convolution holds only its slots") {
  model m = model::from_text(R"(
name: conv
vocab: 1000
hidden: 64
tie_embeddings: true
layers:
  count: 1
  norms: 2
  attention: {kind: short_conv, channels: 64, conv_kernel: 3}
  ffn: {kind: swiglu, intermediate: 128}
)");
  CHECK(kind_name(m.g.layers[0].attention) == "short_conv");
  // in_proj 64 x 3*64 = 12,288; out_proj 64 x 64 = 4,096; conv1d 64 x 3 = 192; SwiGLU 3 x 64 x
  // 128 = 24,576; two norms 128; final norm 64; table 64,000.
  CHECK(params(m) == 12'288 + 4'096 + 192 + 24'576 + 128 + 64 + 64'000);
  // State: 64 channels x 3 slots x 2 B = 384 B, no state matrix.
  state_tally s = tally_state(m.g, 8192);
  CHECK(s.total.value() == 384);
  CHECK(s.decode_state_rw.value() == 0);
  // Decode: projections 2 x (16,384 + 24,576) = 81,920; the cached convolution 2 x 64 x 3 x 2 =
  // 768 and nothing else besides the head.
  forward_tally d = tally_forward(m.g, make_call(m.spec, 1, 100, 1));
  CHECK(d.state_flops.value() == 768);
  CHECK(d.by_kind["short_conv"].value() == 2 * 16'384 + 768);
  for (std::int64_t k : {1, 4}) {  // scaled, it still keeps no state matrix
    validation v = validate_model(m.spec, k, 24, 2, 5);
    for (const validation_row& r : v.rows) CHECK_MESSAGE(r.pass, r.quantity << " " << r.kind);
    CHECK(v.pass);
  }
}

TEST_CASE("lfm2 (LFM2-700M): 10 short convolutions, 6 GQA layers; 742,489,344 parameters") {
  model m(fixture("lfm2-700m.json"));
  // Published: 742,489,344 (the LFM2 model cards' table). By hand, d = 1536: the MLP of
  // block_ff_dim 10240 auto-adjusted to int(2 x 10240 / 3) = 6826, x 1.0, rounded up to a
  // multiple of 256: 6912; SwiGLU 3 x 1536 x 6912 = 31,850,496 on every layer. Conv layers
  // (all but full_attn_idxs 2, 5, 8, 10, 12, 14): in_proj 1536 x 4608 = 7,077,888, conv1d
  // 1536 x 3 = 4,608, out_proj 1536^2 = 2,359,296: 9,441,792. Attention layers: Q and O 1536^2,
  // K and V 1536 x 512, per-head Q/K norms 2 x 64: 6,291,584. Two norms a layer 3,072. 10 x
  // 41,295,360 + 6 x 38,145,280 = 641,825,280; the tied table 65536 x 1536 = 100,663,296; the
  // final norm 1,536.
  CHECK(params(m) == 742'489'344);
  CHECK(std::get<ffn_swiglu>(m.g.layers[0].ffn).intermediate == 6912);
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[2].attention));
  CHECK(mixer_at(m, 0).short_conv());
  // KV: 6 x 2 x 8 x 64 x 2 B = 12,288 B/token; conv: 10 x 1536 x 3 x 2 B = 92,160 B.
  // 8K: 100,663,296 + 92,160 = 100,755,456 B; 128K: 1,610,612,736 + 92,160 = 1,610,704,896 B.
  CHECK(state(m, 8192) == 100'755'456);
  CHECK(state(m, 131072) == 1'610'704'896);
  // vLLM's ShortConv state: (conv_L_cache - 1) x 1536 x 2 B = 6,144 B per layer and request.
  const dtype bf16 = parse_dtype("bf16"), fp32 = parse_dtype("fp32");
  CHECK(engine::mamba2_state_bytes(mixer_at(m, 0), 1, bf16, fp32).value() == 6'144);
}

TEST_CASE("lfm2: layer_types reads like full_attn_idxs; an unknown type is located") {
  model m = model::from_text(
      hf::import_text(R"({"model_type": "lfm2", "num_hidden_layers": 3, "hidden_size": 256,
                          "num_attention_heads": 4, "num_key_value_heads": 2,
                          "block_ff_dim": 768,
                          "layer_types": ["conv", "full_attention", "conv"]})",
                      "config.json", "t")
          .plain);
  CHECK(std::holds_alternative<attention_gqa>(m.g.layers[1].attention));
  CHECK(mixer_at(m, 0).short_conv());
  CHECK(std::get<ffn_swiglu>(m.g.layers[0].ffn).intermediate == 512);  // int(2 x 768 / 3)
  CHECK(testing::import_error(
            R"({"model_type": "lfm2", "num_hidden_layers": 2, "layer_types": ["conv", "mamba"]})")
            .find("layer_types[1]") != std::string::npos);
}

TEST_CASE("lfm2 and falcon_mamba read their config classes' defaults") {
  // Lfm2Config: full_attn_idxs defaults to every layer, so no list means all attention.
  model all = model::from_text(
      hf::import_text(R"({"model_type": "lfm2", "num_hidden_layers": 2, "hidden_size": 256,
                          "num_attention_heads": 4, "num_key_value_heads": 2,
                          "block_ff_dim": 768})",
                      "config.json", "t")
          .plain);
  CHECK(std::holds_alternative<attention_gqa>(all.g.layers[0].attention));
  CHECK(std::holds_alternative<attention_gqa>(all.g.layers[1].attention));
  // Its own tie key: an untied head is not read as tied.
  CHECK(testing::import_error(R"({"model_type": "lfm2", "tie_embedding": false})")
            .find("tie_embedding") != std::string::npos);
  // FalconMambaConfig: tie_word_embeddings True.
  model fm = model::from_text(
      hf::import_text(R"({"model_type": "falcon_mamba", "num_hidden_layers": 2,
                          "hidden_size": 256})",
                      "config.json", "t")
          .plain);
  CHECK(fm.spec.tie_embeddings);
}
