// A call's shape (§2.1.2): B requests, each with S cached tokens, feeding P new tokens, and the
// execution path it runs (pair counting, MLA cache path, chunked or recurrent linear attention).
#pragma once

#include <cstdint>
#include <optional>

#include "common/checked.h"
#include "spec/model_spec.h"

namespace calc {

struct call {
  std::int64_t batch = 1;    // B
  std::int64_t context = 0;  // S, tokens already cached per request
  std::int64_t tokens = 1;   // P, new tokens per request this call
  execution_spec exec;       // how it runs; defaults from the model
  // Per layer, under CED tail-window replay (§2.3.6): the first position this layer processes
  // (-1: the first new one) and the earliest position its window may reach.
  std::int64_t first = -1;
  std::int64_t window_floor = 0;

  std::int64_t first_position() const { return first < 0 ? context : first; }
  std::int64_t end_position() const { return context + tokens; }  // n = S + P
  /// m: rows this layer processes (B*P unless the layer replays only a tail).
  checked rows() const { return checked(batch) * (end_position() - first_position()); }
  /// u: new positions of the call, which every source projection still sees.
  checked new_rows() const { return checked(batch) * tokens; }
  checked vocab_rows() const { return exec.vocab_all_rows ? rows() : checked(batch); }  // m_out
  /// One new token over a cache: linear attention takes its recurrent step.
  bool decode_step() const { return tokens == 1 && context > 0; }
};

/// A call with the model's default execution path and the given shape.
call make_call(const model_spec& spec, std::int64_t batch, std::int64_t context,
               std::int64_t tokens);

/// Effective causal pairs per layer: N_pair = B*(P*S + P*(P+1)/2) (§2.1.3).
checked n_pair(const call& c);

/// Eager rectangle, masked afterwards: B*P*(S+P).
checked n_rect(const call& c);

/// Query-key pairs a layer executes under the call's pair counting, with an optional window:
/// query at 0-based position t sees min(t+1, window) keys when causal.
checked attention_pairs(const call& c, std::optional<std::int64_t> window);

/// The same for chunked local attention: the query at 0-based position t sees (t mod chunk) + 1
/// keys when causal (the keys of its own aligned chunk up to itself); the rectangle counts every
/// key, as for a window.
checked chunked_attention_pairs(const call& c, std::int64_t chunk);

/// sum over t in [0, n) of ((t mod chunk) + 1): the causal pairs of the first n positions of a
/// chunked layer; exact, O(1).
checked chunked_pairs_prefix(checked n, std::int64_t chunk);

}  // namespace calc
