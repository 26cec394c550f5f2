// Phi-3-small (phi3small, Phi3SmallForCausalLM): the published 8K and 128K checkpoints. Its
// defaults are those of Phi3SmallConfig (configuration_phi3_small.py, remote code shipped with
// the checkpoints); the conventions the config does not state come from modeling_phi3_small.py
// and vLLM's phi3_small.py, which load the same files.
#include "spec/hf/families.h"

namespace calc::hf {

using nlohmann::json;

namespace {

// Phi3SmallDecoderLayer: a LayerNorm (weight and bias) before attention and one before the MLP,
// and a final LayerNorm (layer_norm_epsilon is only its epsilon). Attention is one fused
// query_key_value nn.Linear d -> (n_Q + 2 n_KV) d_h and a dense nn.Linear d -> d, both with the
// nn.Linear default bias: the modeling code never reads `attention_bias` (the published configs
// say false only so that TGI would load them), so the biases are the family's, not a field.
// Layer i attends densely when (i + 1) % dense_attention_every_n_layers == 0 and block-sparsely
// otherwise (Phi3SmallSelfAttention: BlockSparseParams.from_config), with blocks of
// blocksparse_block_size, blocksparse_num_local_blocks local blocks, every
// blocksparse_vert_stride-th block, and a per-head phase unless blocksparse_homo_head_pattern
// (block_sparse_spec); blocksparse_triton_kernel_block_size is the kernel's tile, not the
// pattern. Both kinds cache the whole history (vLLM's blocksparse backend keeps the paged KV
// cache of full attention). The MLP is gegelu: up_proj d -> 2f with a bias, whose interleaved
// halves are a quick-GELU gate and a linear branch (clamped at gegelu_limit: no parameters),
// then down_proj f -> d with a bias: a gated MLP of SwiGLU's shapes and work, plus 2f + d biases.
// f is ff_intermediate_size; ff_dim_multiplier (a width from a multiplier, padded to 256 by
// gegelu_pad_to_256) is read only as null. The muP scalings (mup_embedding_multiplier on the
// embeddings, mup_attn_multiplier in the softmax scale, mup_width_multiplier dividing the logits,
// mup_use_scaling) and the rotary base and scale are multipliers: they count nothing. The head
// is nn.Linear without a bias, tied to the embeddings by PretrainedConfig's default
// tie_word_embeddings true (_tied_weights_keys = lm_head.weight): the published files store one
// table. vocab_size (100352) is already the padded table; dummy_token_indices only mask logits.
family phi3small() {
  return {.model_type = "phi3small",
          .architectures = {"Phi3SmallForCausalLM"},
          .layers = layer_rule::dense_every,
          .names = {{"intermediate", "ff_intermediate_size"},
                    {"qkv_bias", ""},
                    {"o_bias", ""},
                    {"mlp_bias", ""},
                    {"gated_bias", ""},
                    {"layer_norm", ""},
                    {"dense_every", "dense_attention_every_n_layers"},
                    {"bs_block", "blocksparse_block_size"},
                    {"bs_local", "blocksparse_num_local_blocks"},
                    {"bs_vert", "blocksparse_vert_stride"},
                    {"bs_homo", "blocksparse_homo_head_pattern"}},
          // Phi3SmallConfig.__init__'s defaults.
          .defaults = gqa_defaults({{"vocab", 100352},
                                    {"hidden", 4096},
                                    {"intermediate", 14336},
                                    {"layers", 32},
                                    {"heads", 32},
                                    {"kv_heads", 8},
                                    {"max_positions", 8192},
                                    {"tie", true},
                                    {"qkv_bias", true},
                                    {"o_bias", true},
                                    {"gated_bias", true},
                                    {"layer_norm", true},
                                    {"dense_every", 2},
                                    {"bs_block", 64},
                                    {"bs_local", 16},
                                    {"bs_vert", 8},
                                    {"bs_homo", false}}),
          .only = {{"hidden_act", "gegelu"}, {"ff_dim_multiplier", nullptr}}};
}

}  // namespace

std::vector<family> phi3small_families() { return {phi3small()}; }

}  // namespace calc::hf
