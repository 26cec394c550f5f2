// Closed-form tallies: the model compiled once into sums over groups of identical layers, so
// that state, decode reads and a call's FLOPs and weight reads at any (batch, context, tokens)
// evaluate in a handful of multiplications, without allocation, and a request's decode steps sum
// in closed form (their cost does not grow with the tokens generated).
//
// What is compiled:
// - weights: per layer run, the GEMM weights each row source multiplies (processed rows, new
//   positions, entries a call completes per compression ratio) and the bytes a call reads;
// - state: every state component of rules.h as fixed + per_entry * min(floor(N / r), cap / r);
// - per attention kind (closed_form_kinds.cpp), the decode step's interaction and state work
//   and the bytes a decode query reads, as series in the context (series.h).
// A call's attention work at any shape comes from the kind's own rule (rules.h), already closed
// in (B, S, P). tally.h's itemised path stays for reports; tests require both to agree exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tally/call.h"
#include "tally/rules.h"
#include "tally/series.h"

namespace calc {

/// What the closed form knows of one attention kind's decode steps (closed_form_kinds.cpp).
struct attention_form {
  length_series step_work;  // interaction + state FLOPs of one decode step (B=1, P=1), context h
  length_series step_interaction;  // the interaction part alone
  length_series decode_read;       // bytes one decode query reads over h cached tokens
};

/// The decode-step form of each attention kind (every kind has one: a kind without an evaluator
/// does not compile).
attention_form compile_attention(const attention_spec& a, const model_context& m,
                                 const execution_spec& e);

/// Identical layers that see the same call: one compiled entry, times `count`.
struct layer_run {
  const attention_spec* attention = nullptr;
  checked count;
  std::int64_t ced_replay = -1;  // a CED decoder layer replays this many tokens of a fresh prompt
  checked processed_weights;     // GEMM weights multiplied per processed row (experts: top-k share)
  checked new_row_weights;       // per new position of the call (compressor, global KV)
  struct entry_weights {
    std::int64_t ratio;
    checked weights;  // per entry the call completes (index key projection)
  };
  std::vector<entry_weights> entry;
  checked fixed_read_bytes;  // weights every call reads whole
  struct expert_read {
    tensor experts;      // routed experts: a call reads min(E, rows * k) instances
    checked bytes_each;  // one instance at its format
  };
  std::vector<expert_read> experts;
};

/// State of `batch` requests at one length, as tally_state sums it.
struct state_totals {
  checked total;
  checked fixed;
  checked growing;
  checked decode_read;      // KV and index read by one decode query
  checked decode_state_rw;  // recurrent state read + written by one decode step
  checked window_write;     // window records written by one decode step
};

/// FLOPs and weight reads of one call, as tally_forward sums them.
struct forward_totals {
  checked flops;
  checked interaction_flops;
  checked state_flops;  // linear-attention state GEMMs and short convolutions
  checked vocab_flops;  // the vocabulary head
  checked weight_read_bytes;
  checked embedding_read_bytes;  // embedding rows looked up
};

/// A model compiled for one execution path.
class closed_form {
 public:
  /// Compiles the graph under its model's execution path, or another one.
  explicit closed_form(const graph& g);
  closed_form(const graph& g, const execution_spec& exec);

  /// State of `batch` requests with `length` cached tokens each.
  state_totals state(std::int64_t length, std::int64_t batch = 1) const;
  /// One request's state as a series in its length: state(N).total is state_series().at(N)
  /// (the serving simulation evaluates it without the other totals and bounds its growth).
  const length_series& state_series() const { return state_; }
  /// FLOPs and weight reads of one call (its exec must be the compiled one).
  forward_totals forward(const call& c) const;

  /// One decode call of `batch` requests over `context` cached tokens each (context >= 1), from
  /// the series: its FLOPs are `batch` times one request's step.
  forward_totals decode(std::int64_t batch, std::int64_t context) const;
  /// FLOPs of one decode step of one request over `context` cached tokens (context >= 1).
  checked decode_flops(checked context) const;
  /// Interaction FLOPs (QK, AV, index scores) of that decode step.
  checked decode_interaction(checked context) const;
  /// Decode FLOPs summed over contexts [lo, hi] (lo >= 1): O(terms), whatever hi - lo.
  checked decode_flops_sum(checked lo, checked hi) const;
  /// Bytes one decode query reads, summed over lengths [lo, hi].
  checked decode_read_sum(checked lo, checked hi) const;

 private:
  void compile_layers();
  void compile_head();

  const graph* g_;
  execution_spec exec_;
  model_context m_;
  std::vector<layer_run> runs_;
  // State at a length, per request: fixed + series(N).
  length_series state_;
  checked state_fixed_;
  length_series decode_read_;
  length_series state_rw_;  // components read and rewritten each step (already doubled)
  // One decode step of one request at context h (B = P = 1).
  length_series step_flops_;
  length_series step_interaction_;
  length_series step_state_;  // the state part (linear attention, convolutions)
  // Model-level work: the vocabulary head per vocabulary row, head mixes, AttnRes and the RoPE
  // table per new row, and the head and final norm read whole.
  checked vocab_weights_;
  checked head_row_flops_;
  checked head_read_bytes_;
  checked embedding_row_bytes_;  // one embedding row looked up
  checked window_write_;         // per request and decode step
};

}  // namespace calc
