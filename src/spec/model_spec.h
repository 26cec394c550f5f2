// ModelSpec: a model as plain typed structs, read once from YAML (model_reader.cpp).
//
// Nothing after src/spec/ sees a YAML node. Every model-specific behaviour is a typed field here;
// code never asks a model's name. Layers are described by a base block, named variants, a
// repeating pattern and per-index overrides; src/graph/ expands them into one entry per layer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"

namespace calc {

/// Block-sparse attention (Phi-3-small's BlockSparseAttentionLayer, vLLM's blocksparse backend):
/// positions fall in aligned blocks of `block` tokens, and a query in block qb of query head h
/// sees, causally, the keys of every block kb <= qb with qb - kb < local_blocks (its own block
/// and the local_blocks - 1 before it) or (kb + h * step + 1) mod vert_stride == 0, the
/// "vertical" blocks. step = max(1, vert_stride / q_heads) in integers (the reference's
/// head_sliding_step over all query heads), 0 when homo_heads (every head alike). The cache is
/// the whole history, as full attention's: only the pairs a query scores are fewer.
struct block_sparse_spec {
  std::int64_t block = 0;         // tokens per block (blocksparse_block_size)
  std::int64_t local_blocks = 0;  // blocks of the local band, the query's own included (>= 1)
  std::int64_t vert_stride = 0;   // every vert_stride-th block stays visible (>= 1)
  bool homo_heads = false;        // one pattern for every head (blocksparse_homo_head_pattern)

  bool operator==(const block_sparse_spec&) const = default;
};

/// Grouped-query attention; MHA when q_heads == kv_heads, MQA when kv_heads == 1 (§2.3.1).
struct attention_gqa {
  std::int64_t q_heads = 0;            // n_Q
  std::int64_t kv_heads = 0;           // n_KV; divides q_heads
  std::int64_t head_dim = 0;           // d_h
  bool qk_norm = false;                // per-head RMSNorm on Q and K (d_h weights each)
  bool qk_norm_full = false;  // the Q and K norms span all heads (n_Q*d_h and n_KV*d_h weights:
                              // OLMo 2, MiniMax-M2's per_layer, Cohere's per-head LayerNorms)
  bool output_gate = false;            // Q projection also produces a sigmoid gate (width n_Q*d_h)
  bool qkv_bias = false;               // biases on the Q, K and V projections (Qwen2, GPT-2)
  bool o_bias = false;                 // a bias on the output projection (GPT-2)
  std::optional<std::int64_t> window;  // sliding window in tokens; none = full causal attention
  /// Chunked local attention (Llama 4's attention_chunk_size): positions are cut into aligned
  /// chunks of this many tokens and a query sees only the earlier keys of its own chunk, so the
  /// query at 0-based position t sees (t mod chunk) + 1 keys. Unlike a window it resets at each
  /// chunk boundary; like one it bounds the cache: calc stores min(N, chunk) records per request,
  /// the chunk buffer an engine reserves (the live part is the current chunk, (N-1) mod chunk + 1,
  /// which is never more). Never set with `window`.
  std::optional<std::int64_t> chunk;
  /// Block-sparse attention (above); never set with `window` or `chunk`.
  std::optional<block_sparse_spec> block_sparse;
  bool sinks = false;   // a learned sink logit per query head in the softmax (gpt-oss): n_Q
                        // parameters, nothing cached
  bool k_is_v = false;  // values are the keys (Gemma 4's attention_k_eq_v): no v_proj, one
                        // cached tensor of n_KV*d_h per token
  std::optional<std::int64_t> kv_source;  // reads this earlier layer's cache and stores none
                                          // (Gemma 3n / 4 num_kv_shared_layers); 0-based
  /// The value head width where it differs from the key width (MiMo-V2-Flash: keys 192, values
  /// 128): v_proj d -> n_KV*d_v, o_proj n_Q*d_v -> d, a cached V of n_KV*d_v per token, AV over
  /// d_v. None: d_v = d_h. Never set with k_is_v.
  std::optional<std::int64_t> v_head_dim;

  /// d_v: the value head width (head_dim unless v_head_dim says otherwise).
  std::int64_t value_dim() const { return v_head_dim.value_or(head_dim); }

  bool operator==(const attention_gqa&) const = default;
};

/// DeepSeek sparse attention's lightning indexer on an MLA layer (DeepSeek-V3.2, GLM-5): its own
/// query heads from the query latent (wq_b: q_rank -> heads*dim), one key per token from the
/// input (wk: d -> dim, then a LayerNorm of dim with bias), a per-head weight from the input
/// (weights_proj: d -> heads). Each token's key is cached (precision.index); every query scores
/// every earlier key and main attention reads only the top_k best-scored tokens.
struct mla_indexer {
  std::int64_t heads = 0;  // index_n_heads
  std::int64_t dim = 0;    // index_head_dim: width of the cached index key
  std::int64_t top_k = 0;  // index_topk: tokens main attention reads per query

  bool operator==(const mla_indexer&) const = default;
};

/// Multi-head latent attention (§2.3.2, Tables 2-3, 2-5): a shared latent of kv_rank plus a
/// qk_rope-wide branch is cached (compact path), or per-head K/V are restored (expanded path).
struct attention_mla {
  std::int64_t heads = 0;    // query heads
  std::int64_t q_rank = 0;   // query down-projection rank; 0 = no query compression
  std::int64_t kv_rank = 0;  // latent width (512)
  std::int64_t qk_nope = 0;  // per-head key width without position (128)
  std::int64_t qk_rope = 0;  // shared positional branch width (64), cached with the latent
  std::int64_t v_head = 0;   // per-head value width (128)
  bool rope_branch = true;   // false: the branch carries no rotation (NoPE) but is still cached
  bool output_gate = false;  // full-rank sigmoid gate d -> heads * v_head
  std::optional<mla_indexer> indexer;  // sparse: attend only to the indexer's top_k tokens

  bool operator==(const attention_mla&) const = default;
};

/// Gated DeltaNet linear attention (Qwen3.5/3.6; seed 004): joint QKV, output gate z, per-head
/// a/b control values, a depthwise short convolution over the QKV channels, and a recurrent
/// state of v_heads x key_dim x value_dim.
///
/// The same struct holds lightning attention (MiniMax-Text-01 / M1; schema `kind: lightning`)
/// with rule = lightning: linear attention with a fixed per-head decay and no delta rule.
/// heads = qk_heads = v_heads, key_dim = value_dim = head_dim, no convolution. Its tensors:
/// qkv_proj d -> 3 x heads x head_dim, a sigmoid output gate d -> heads x head_dim, an RMSNorm
/// over heads x head_dim and out_proj heads x head_dim -> d; the decay is a slope per head
/// computed from the head and layer index (a buffer, no parameter). A step is the decayed
/// update S = e^-s S + k^T v and the readout q S (2 products); a prompt runs the lightning
/// block scheme, which is SSD's chunked form with C = q, B = k, x = v over blocks of `block`
/// tokens (the model's block_size, not the call's linear_chunk).
struct attention_gdn {
  /// Which recurrence: Gated DeltaNet's delta rule, or lightning attention's plain decay.
  enum class rule_kind { delta, lightning };
  std::int64_t qk_heads = 0;     // query/key heads
  std::int64_t v_heads = 0;      // value heads (each keeps one key_dim x value_dim state)
  std::int64_t key_dim = 0;      // d_k
  std::int64_t value_dim = 0;    // d_v
  std::int64_t conv_kernel = 0;  // short-convolution width; 0 = none
  rule_kind rule = rule_kind::delta;
  std::int64_t block = 0;  // lightning: tokens per block of the chunked prefill (block_size)

  /// Lightning attention (MiniMax): a fixed decay, no delta rule.
  bool lightning() const { return rule == rule_kind::lightning; }

  bool operator==(const attention_gdn&) const = default;
};

/// Kimi Delta Attention (Kimi K3; seed 004): Q/K/V, a low-rank per-channel decay (a: d->rank,
/// b: rank->heads*key_dim), a per-head update gate (beta), an output gate (full rank, or low rank
/// like the decay: Kimi Linear), separate short
/// convolutions on Q, K and V, and a recurrent state of heads x key_dim x value_dim.
struct attention_kda {
  std::int64_t heads = 0;
  std::int64_t key_dim = 0;
  std::int64_t value_dim = 0;
  std::int64_t decay_rank = 0;   // rank of the decay projection
  std::int64_t conv_kernel = 0;  // short-convolution width on each of Q, K, V; 0 = none
  bool output_gate = true;       // gate d -> heads * value_dim
  std::int64_t gate_rank = 0;    // 0: full-rank gate; r: low rank, g_a d->r, g_b r->heads*value_dim

  bool operator==(const attention_kda&) const = default;
};

/// The global (long-range) branch of DeepSeek sparse attention: compressed entries of one shared
/// head_dim-wide record each, completed every `ratio` tokens (§2.3.3, §2.3.6).
struct dsa_global {
  std::int64_t ratio = 1;    // tokens per completed entry (CSA 4, HCA 128; V4.1 2 or 1)
  std::int64_t top_k = 0;    // entries main attention reads at most; 0 = every entry (HCA)
  std::int64_t source = -1;  // layer whose entries this layer reads; -1 = its own (it stores them)
  bool overlap = false;      // CSA: each entry mixes two adjacent blocks (two projection sets)
  bool gate = true;          // a compression gate projection beside the KV projection
  bool position_bias = false;  // a learned [ratio, overlap*head_dim] bias (V4's ape)

  bool operator==(const dsa_global&) const = default;
};

/// The indexer that scores compressed entries before main attention selects top_k of them.
struct dsa_indexer {
  std::int64_t heads = 0;  // index heads
  std::int64_t dim = 0;    // index key width
  std::int64_t top_k = 0;  // entries selected for main attention
  enum class keys_kind {
    compressor,  // own compressor over the input (V4 CSA): wkv + wgate, bias, norm, buffers
    projection,  // projected from each newly completed main entry (V4.1 source layers)
    shared,      // reads the index keys of the global source (V4.1 Reindex layers)
  } keys = keys_kind::compressor;
  std::int64_t candidates = 0;  // scan at most this many entries (candidate pool); 0 = all

  bool operator==(const dsa_indexer&) const = default;
};

/// DeepSeek V4 / V4.1 sparse attention: 64 query heads over one shared 512-wide record that is
/// both key and value, a sliding window on every layer, an optional compressed global branch
/// and an optional indexer. Window-only, CSA, HCA and CSA2 Full/Reindex/Reuse are settings.
struct attention_dsa {
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;  // record width (K = V)
  std::int64_t q_rank = 0;    // query down-projection rank
  std::int64_t o_groups = 1;  // grouped low-rank output: groups ...
  std::int64_t o_rank = 0;    // ... each projecting heads*head_dim/o_groups -> o_rank
  std::int64_t window = 0;    // local window in tokens
  bool sink = true;           // a per-head attention sink (heads parameters)
  std::optional<dsa_global> global;
  std::optional<dsa_indexer> indexer;

  bool operator==(const attention_dsa&) const = default;
};

/// Mamba2 / SSD mixer (Mamba2, Nemotron-H, Falcon-H1): in_proj d -> z, x, B, C, dt
/// (2*inner + 2*groups*state_dim + heads), a depthwise convolution over x, B, C
/// (inner + 2*groups*state_dim channels), per-head dt_bias, A_log and D, a gated RMSNorm over
/// inner and out_proj inner -> d, with inner = heads * head_dim. Each head keeps a fixed
/// head_dim x state_dim recurrent state; the convolution keeps conv_kernel slots per channel.
///
/// The same struct holds a Mamba-1 (S6) mixer (Mamba, Falcon-Mamba, Jamba; schema `kind: mamba`)
/// with scan = selective: every inner channel is its own head (heads = inner, head_dim 1,
/// groups 1), so the state is again heads x head_dim x state_dim = inner x state_dim. Its
/// tensors differ: in_proj d -> z, x (2*inner), the convolution over x alone (inner channels),
/// x_proj inner -> dt_rank + 2*state_dim (the low-rank dt and one shared B and C), dt_proj
/// dt_rank -> inner with a bias, A_log inner x state_dim (a decay per channel and state), D per
/// channel, no gated norm; Jamba adds RMSNorms on dt, B and C (dt_norms). Its scan has no
/// chunked form: every token is a recurrent step.
///
/// scan = short_conv holds a gated short convolution and nothing else (LFM2's conv layers;
/// schema `kind: short_conv`): heads = the d channels, head_dim 1, state_dim 0; in_proj
/// d -> B, C, x (3d), the depthwise convolution over B*x (d channels), out_proj d -> d of C times
/// its output, biases on all three where conv_bias. Its only state is the convolution's.
struct attention_mamba2 {
  /// Which scan: Mamba2's SSD, Mamba-1's per-channel S6, or none (a short convolution).
  enum class scan_kind { ssd, selective, short_conv };
  std::int64_t heads = 0;        // SSM heads (mamba_num_heads)
  std::int64_t head_dim = 0;     // P: channels per head (mamba_head_dim)
  std::int64_t state_dim = 0;    // N: d_state (ssm_state_size)
  std::int64_t groups = 1;       // B/C groups (n_groups); divides heads
  std::int64_t conv_kernel = 4;  // depthwise convolution width (conv_kernel)
  bool conv_bias = true;         // a bias per convolution channel (use_conv_bias)
  bool proj_bias = false;        // biases on in_proj and out_proj (use_bias)
  bool gated_norm = true;        // gated RMSNorm over inner before out_proj (inner weights)
  scan_kind scan = scan_kind::ssd;
  std::int64_t dt_rank = 0;  // selective: rank of dt's projection (x_proj -> dt_rank -> dt_proj)
  bool dt_norms = false;     // selective: RMSNorms on dt, B and C (Jamba: dt_rank + 2*state_dim)

  /// A Mamba-1 (S6) mixer.
  bool selective() const { return scan == scan_kind::selective; }
  /// A gated short convolution (LFM2), no scan.
  bool short_conv() const { return scan == scan_kind::short_conv; }

  bool operator==(const attention_mamba2&) const = default;
};

/// No mixer (`attention: none`): the layer has only its feed-forward block, e.g. Nemotron-H's
/// `-` (MLP) and `E` (MoE) layers. It stores, computes and keeps nothing.
struct attention_none {
  bool operator==(const attention_none&) const = default;
};

/// A parallel hybrid mixer (Falcon-H1): GQA attention and a Mamba2 mixer read the same normed
/// input and their outputs are summed before the feed-forward. Everything is the sum of the two
/// parts: their tensors, their work, and their state (the attention's KV cache and the mixer's
/// recurrent and convolution state, per layer). Multipliers on the branches change no count.
struct attention_parallel {
  attention_gqa attention;  // the attention branch
  attention_mamba2 mixer;   // the SSM branch

  bool operator==(const attention_parallel&) const = default;
};

/// The attention block of a layer; one alternative per layer kind.
using attention_spec =
    std::variant<attention_gqa, attention_mla, attention_gdn, attention_kda, attention_dsa,
                 attention_mamba2, attention_none, attention_parallel>;

/// Engram (V4.1, §2.5.3): n-gram lookups of `buckets` rows of bucket_dim from a table, projected
/// to `ways` keys plus one shared value and gated into the residual streams. Lookups are bytes,
/// not matrix FLOPs.
struct engram_spec {
  std::int64_t table_rows = 0;  // rows of this layer's table
  std::int64_t buckets = 0;     // lookups per token (24)
  std::int64_t bucket_dim = 0;  // width of one row (256)
  std::int64_t ways = 0;        // residual streams gated (4): keys and the gate vectors

  bool operator==(const engram_spec&) const = default;
};

/// Dense SwiGLU feed-forward: gate and up d->f, down f->d (§2.1.4). The same shapes hold any
/// gated MLP: Phi-3-small's gegelu (one fused up_proj of 2f, halves GELU-gated) counts alike.
struct ffn_swiglu {
  std::int64_t intermediate = 0;  // f
  bool bias = false;              // biases on gate and up (2f) and down (d): Phi-3-small

  bool operator==(const ffn_swiglu&) const = default;
};

/// A two-matrix MLP (GPT-2 style): up d->f, an activation, down f->d; 4*m*d*f FLOPs.
struct ffn_mlp {
  std::int64_t intermediate = 0;  // f
  bool bias = false;              // biases on both projections
  /// Learned scalars of the activation itself (Apertus' xIELU: alpha_p and alpha_n, 2 a layer);
  /// element-wise, so they add parameters and no matrix FLOPs.
  std::int64_t activation_params = 0;

  bool operator==(const ffn_mlp&) const = default;
};

/// Mixture of experts (§2.4): a router picks top_k of `experts` SwiGLU experts per token; shared
/// experts run on every token; experts may work in a narrower latent space (Kimi K3). Experts
/// may instead be ungated two-matrix MLPs (Nemotron-H's relu2: up, squared ReLU, down).
struct ffn_moe {
  std::int64_t experts = 0;              // E routed experts
  std::int64_t top_k = 0;                // k selected per token
  std::int64_t intermediate = 0;         // f of one routed expert
  std::int64_t shared_experts = 0;       // experts every token uses
  std::int64_t shared_intermediate = 0;  // f of one shared expert (in the full width d)
  bool shared_gate = false;              // sigmoid gate d -> 1 on the shared expert output
  bool router = true;                    // learned router d -> E (false: hash-routed)
  bool router_bias = false;              // E-wide routing bias (DeepSeek's correction bias, or
                                         // the bias of gpt-oss's Linear router: E values)
  bool expert_bias = false;  // biases on each routed expert's projections (gpt-oss): gate/up
                             // 2f and down d_e per expert
  std::int64_t latent = 0;   // d_e when experts run in a latent space; 0 = d
  bool latent_norm = false;  // a d_e-wide norm on the latent input
  bool gated = true;  // routed and shared experts have gate, up and down (SwiGLU); false: up and
                      // down only, an element-wise activation between (Nemotron-H's relu2)

  bool operator==(const ffn_moe&) const = default;
};

/// No feed-forward block (`ffn: none`): the layer has only its mixer, e.g. Nemotron-H's `M`
/// (Mamba2) and `*` (attention) layers. No tensors, no FLOPs.
struct ffn_none {
  bool operator==(const ffn_none&) const = default;
};

/// The feed-forward block of a layer; one alternative per layer kind.
using ffn_spec = std::variant<ffn_swiglu, ffn_moe, ffn_mlp, ffn_none>;

/// A partial layer description: what a variant or an override replaces.
struct block_spec {
  std::optional<attention_spec> attention;
  std::optional<ffn_spec> ffn;
  std::optional<std::int64_t> norms;  // RMSNorm vectors of width d per layer (2: input and post)
  std::optional<engram_spec> engram;  // an Engram lookup before the layer
};

/// Per-index replacement of parts of the layers listed in `at` (0-based indices).
struct override_spec {
  std::vector<std::int64_t> at;
  block_spec block;
  source_location where;
};

struct layers_spec {
  std::int64_t count = 0;                      // L
  block_spec base;                             // complete: attention, ffn and norms all given
  std::map<std::string, block_spec> variants;  // named partial blocks, applied over the base
  std::vector<std::string> pattern;            // repeats to fill `count`; "base" = the base block
  std::vector<override_spec> overrides;        // applied last, in order
  source_location pattern_where;
};

/// Storage format of each tensor role (the byte rule is in common/dtype.h).
struct precision_spec {
  dtype weights;  // projection and FFN matrices, unless a module role below is given
  // Per-module weight formats of quantised checkpoints; absent = `weights`.
  std::optional<dtype> attention;       // attention and mixer projections
  std::optional<dtype> attention_out;   // their output projection (o_proj); absent = attention
  std::optional<dtype> experts;         // routed expert matrices (gpt-oss: mxfp4)
  std::optional<dtype> shared_experts;  // shared expert matrices
  std::optional<dtype> dense_ffn;       // dense feed-forward matrices
  /// A depthwise convolution's taps (conv1d of Mamba, Gated DeltaNet, KDA, short conv): not a
  /// Linear, so no quantiser calc reads converts them (compressed-tensors targets Linear,
  /// ModelOpt disables *mixer.conv1d* and *linear_attn.conv1d*, Qwen's FP8 lists conv1d in
  /// modules_to_not_convert). An imported quantised checkpoint keeps them in the model dtype
  /// here; absent = `weights`.
  std::optional<dtype> conv_taps;
  /// A Gated DeltaNet layer's decay and beta projections (in_proj_a, in_proj_b; Qwen3-Next
  /// stores them fused as in_proj_ba), which Qwen's FP8 releases keep in the model dtype beside
  /// FP8 projections; absent = `attention`.
  std::optional<dtype> mixer_gates;
  dtype embedding;                      // embedding table
  dtype head;                           // vocabulary head (when untied)
  dtype norms;                          // normalisation vectors
  // Vectors some checkpoints keep wider than their norms; absent = `norms`.
  std::optional<dtype> router_bias;  // MoE routing bias (e_score_correction_bias): FP32 in
                                     // DeepSeek's, GLM-5's, MiniMax-M2's and Nemotron-H's files
  std::optional<dtype> ssm_params;   // A_log and D (Mamba2) / gated norm (GDN): F32 in Qwen3.5
  dtype kv;                             // cached keys and values (and MLA latents)
  dtype recurrent;                      // linear-attention recurrent state (fp32 in the chapter)
  dtype conv;                           // short-convolution slots
  dtype index;                          // index key records
  dtype window;                         // sliding-window records of sparse attention
  dtype compressor;                     // incomplete-block compressor buffers
  dtype token_history;                  // per-request token ids kept for Engram n-grams
  dtype activations;                    // temporary tensors of a forward pass (AttnRes block store)
  /// The production storage formats (`--storage production`): roles given here replace the
  /// reference ones above; empty names leave a role as it is.
  std::map<std::string, dtype> production;

  /// One format for every weight matrix (`--weights`): the module roles fall back to it. A
  /// layout that only a Linear stores (pack-quantized's per-matrix record, GPTQ's g_idx) never
  /// reaches the convolution taps: they keep the format they had, as every quantiser leaves them.
  void set_weights(const dtype& format) {
    if (format.matrix_bits > 0 || format.row_bits > 0) {
      if (!conv_taps) conv_taps = weights;
    } else {
      conv_taps.reset();
    }
    weights = format;
    attention.reset();
    attention_out.reset();
    experts.reset();
    shared_experts.reset();
    dense_ffn.reset();
    mixer_gates.reset();
  }

  /// The format of a module's matrices: its own role when given, else `weights`.
  const dtype* attention_weights() const { return attention ? &*attention : &weights; }
  /// The output projection (heads x value_dim back to hidden): its own role, else `attention`.
  const dtype* attention_out_weights() const {
    return attention_out ? &*attention_out : attention_weights();
  }
  const dtype* expert_weights() const { return experts ? &*experts : &weights; }
  const dtype* shared_expert_weights() const {
    return shared_experts ? &*shared_experts : &weights;
  }
  const dtype* dense_ffn_weights() const { return dense_ffn ? &*dense_ffn : &weights; }
  const dtype* conv_tap_weights() const { return conv_taps ? &*conv_taps : &weights; }
  const dtype* mixer_gate_weights() const {
    return mixer_gates ? &*mixer_gates : attention_weights();
  }
  const dtype* router_bias_format() const { return router_bias ? &*router_bias : &norms; }
  const dtype* ssm_params_format() const { return ssm_params ? &*ssm_params : &norms; }

  /// The state role of that name ("kv", "index", "window", ...), or null: the one list of roles
  /// a production format may replace.
  dtype* state_role(const std::string& role) {
    if (role == "kv") return &kv;
    if (role == "index") return &index;
    if (role == "window") return &window;
    if (role == "compressor") return &compressor;
    if (role == "recurrent") return &recurrent;
    if (role == "conv") return &conv;
    if (role == "token_history") return &token_history;
    return nullptr;
  }
};

/// How attention query-key pairs are executed (§2.1.3).
enum class pair_counting {
  causal,       // effective causal: N_pair = B*(P*S + P*(P+1)/2)
  rectangular,  // eager rectangle, masked afterwards: B*P*(S+P)
};

enum class mla_path { compact, expanded };

/// How linear attention processes more than one new token.
enum class linear_prefill { chunked, recurrent };

/// The intra-chunk FLOP rule of chunked linear attention (docs/decisions, Part I A6/A8).
enum class chunk_rule {
  padded_gemms,     // HF torch_chunk_gated_delta_rule: tail padded to a full chunk;
                    // 4C^2 dk + 6C dk dv + 2C^2 dv per chunk and head (triangular solves scalar)
  valid_triangles,  // stage list on valid tokens only: KK^T, W/U substitution, state
                    // predict/query/update, causal QK and PV
};

/// The default execution path of a model; a call may override each field.
struct execution_spec {
  pair_counting pairs = pair_counting::causal;
  bool vocab_all_rows = false;  // false: the vocabulary head runs on the last token of each request
  mla_path mla = mla_path::compact;
  linear_prefill linear = linear_prefill::chunked;
  std::int64_t chunk = 64;  // chunk size of chunked linear attention
  chunk_rule chunk_flops = chunk_rule::padded_gemms;
  bool step_state_gemms =
      true;                // a recurrent step's S^T k, k (x) delta, S^T q count as matrix FLOPs
  bool conv_flops = true;  // the short convolution counts every padded output
  pair_counting index_scan = pair_counting::causal;  // index scores: causal or the rectangle
  bool ced = false;  // run the CED split (encoder over all, decoder tail replay)
};

/// How layers connect (§2.5): plain residual, Block AttnRes mixing saved block snapshots, or
/// mHC's n-way residual streams mixed by Sinkhorn-normalised projections (§2.5.2).
struct connection_spec {
  enum class kind { residual, attnres, mhc } type = kind::residual;
  std::int64_t block_layers = 0;    // AttnRes: layers per block (a snapshot starts each block)
  std::int64_t ways = 0;            // mHC: residual streams (4)
  std::int64_t sinkhorn_iters = 0;  // mHC: Sinkhorn iterations (20)
  bool head_mix = false;            // mHC: a final mix of the streams before the head (V4)
};

/// CED (V4.1, §2.3.6): a causal encoder of the first `encoder_layers` and a decoder whose body
/// replays only the last `replay` prompt tokens when a prompt arrives with no cache.
struct ced_spec {
  std::int64_t encoder_layers = 0;
  std::int64_t replay = 0;
};

/// Multi-token prediction block (§2.5.3): e_proj on the token, h_proj on each residual stream,
/// `layers` layers of the named variant, and the shared vocabulary head. Excluded from totals.
struct mtp_spec {
  std::int64_t layers = 0;
  std::string variant;  // layer variant the block uses ("base" = the base block)
};

struct model_spec {
  std::string name;
  std::string file;         // where it was read from
  std::string source;       // free-text citation (which table it reproduces)
  std::int64_t vocab = 0;   // V
  std::int64_t hidden = 0;  // d
  bool tie_embeddings = false;
  bool final_norm = true;
  bool embedding_norm = false;  // a d-wide norm right after the token embedding (BLOOM's
                                // word_embeddings_layernorm)
  bool layer_norm = false;  // LayerNorm (weight and bias per norm) instead of RMSNorm (weight)
  bool head_bias = false;   // the vocabulary head has a bias of V values (Phi-2's lm_head)
  std::int64_t position_embeddings = 0;  // a learned position table of this many rows; 0 = none
  /// The model's context limit, `max_position_embeddings` of its published config.json: the
  /// default end of length ranges, and past it commands warn (lengths are not refused there).
  /// Absent when the file gives none (a model the chapter defines, not a published checkpoint).
  std::optional<std::int64_t> max_position_embeddings;
  precision_spec precision;
  execution_spec execution;
  connection_spec connection;
  std::optional<ced_spec> ced;
  std::optional<mtp_spec> mtp;
  bool token_history = false;               // keep every token id per request (Engram n-grams)
  std::int64_t rope_table_frequencies = 0;  // counted RoPE table outer product width; 0 = none
  layers_spec layers;
  std::vector<std::string> defaulted;  // field paths that took their default value
};

}  // namespace calc
