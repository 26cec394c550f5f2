// Connections between layers (§2.5). Block AttnRes replaces the residual sum with a learned mix
// over saved block snapshots and the running accumulator; each mix is a matrix-vector product of
// width d per candidate, so its matrix work is 2*d per candidate per row.
#include "tally/rules.h"

namespace calc {

checked attnres_candidates(std::int64_t layers, std::int64_t block_layers) {
  // A snapshot of the layer input is saved at the start of every block. Each of the 2*L
  // sublayers mixes the snapshots saved so far plus the running accumulator, except the first
  // sublayer of a block, whose accumulator has just been saved; a single candidate needs no mix.
  checked total = 0;
  for (std::int64_t s = 0; s < 2 * layers; ++s) {
    std::int64_t l = s / 2;
    std::int64_t snapshots = l / block_layers + 1;
    bool block_start = l % block_layers == 0 && s % 2 == 0;
    std::int64_t candidates = snapshots + (block_start ? 0 : 1);
    if (candidates > 1) total += candidates;
  }
  // The output mixes every snapshot and the final accumulator.
  total += ceil_div(layers, block_layers) + 1;
  return total;
}

}  // namespace calc

namespace calc {

void add_mhc_layer_tensors(const connection_spec& c, const model_context& m,
                           std::vector<tensor>& out) {
  // Each sublayer (attention, FFN) projects the ways*d streams to (ways+2)*ways mixing
  // coefficients: pre (ways), post (ways) and the residual matrix (ways^2).
  checked coeffs = checked(c.ways + 2) * c.ways;
  checked width = checked(c.ways) * m.hidden;
  for (const char* sub : {"attn", "ffn"}) {
    out.push_back(matrix("connection", std::string("hc_") + sub + "_fn", category::other, width,
                         coeffs, &m.precision->norms));
    out.push_back({"connection", std::string("hc_") + sub + "_base_scale", category::other,
                   coeffs + 3, &m.precision->norms});
  }
}

void add_mhc_head_tensors(const connection_spec& c, const model_context& m,
                          std::vector<tensor>& out) {
  if (!c.head_mix) return;
  checked width = checked(c.ways) * m.hidden;
  tensor fn =
      matrix("connection", "hc_head_fn", category::other, width, c.ways, &m.precision->norms);
  fn.rows = row_source::new_positions;  // the reference mixes the head on every row
  out.push_back(fn);
  out.push_back({"connection", "hc_head_base_scale", category::other, checked(c.ways) + 1,
                 &m.precision->norms});
}

checked mhc_nonmatrix_per_row(const connection_spec& c, std::int64_t hidden,
                              std::int64_t sublayers) {
  // Counted as the book's hyper_connections.py does: a reduction of c values is c multiplies
  // plus c-1 adds; RMS over the c*d streams 2cd+1; Sinkhorn per iteration c(c-1)+2c^2.
  checked n = c.ways, d = hidden;
  checked rms = checked(2) * n * d + 1;
  checked sinkhorn = (checked(6) * n + checked(2) * n * n) + (checked(4) * n * n - n) +
                     (checked(2) * c.sinkhorn_iters - 1) * (n * (n - 1) + checked(2) * n * n);
  checked pre_mix = (checked(2) * n - 1) * d;
  checked post_mix = (checked(2) * n * n + n) * d;
  checked per_sublayer = rms + (n + 2) * n + sinkhorn + pre_mix + post_mix;
  checked head = c.head_mix ? rms + n * n + pre_mix : checked(0);
  return per_sublayer * sublayers + head;
}

// What each connection kind adds, one switch per question with every kind named (no default),
// so a new kind does not compile (-Wswitch, -Werror) until it answers each.

void add_connection_layer_tensors(const connection_spec& c, const model_context& m,
                                  std::vector<tensor>& out) {
  switch (c.type) {
    case connection_spec::kind::residual:
    case connection_spec::kind::attnres:  // its mixes are model-level vectors
      return;
    case connection_spec::kind::mhc:
      add_mhc_layer_tensors(c, m, out);
      return;
  }
}

void add_connection_model_tensors(const model_spec& s, const model_context& m,
                                  std::vector<tensor>& out) {
  switch (s.connection.type) {
    case connection_spec::kind::residual:
      return;
    case connection_spec::kind::attnres: {
      // A norm and a projection vector per sublayer mix, plus the output mix.
      checked mixes = checked(2) * s.layers.count + 1;
      out.push_back(
          {"connection", "attnres", category::other, mixes * 2 * s.hidden, &s.precision.norms});
      return;
    }
    case connection_spec::kind::mhc:
      add_mhc_head_tensors(s.connection, m, out);
      return;
  }
}

checked connection_mix_flops_per_row(const model_spec& s) {
  switch (s.connection.type) {
    case connection_spec::kind::residual:
    case connection_spec::kind::mhc:  // its mixes are tensors (hc_*_fn), counted with them
      return 0;
    case connection_spec::kind::attnres:
      return checked(2) * s.hidden * attnres_candidates(s.layers.count, s.connection.block_layers);
  }
  return 0;
}

checked connection_nonmatrix_per_row(const model_spec& s) {
  switch (s.connection.type) {
    case connection_spec::kind::residual:
    case connection_spec::kind::attnres:
      return 0;
    case connection_spec::kind::mhc:  // two sublayers per layer
      return mhc_nonmatrix_per_row(s.connection, s.hidden, 2 * s.layers.count);
  }
  return 0;
}

std::int64_t residual_streams(const connection_spec& c) {
  switch (c.type) {
    case connection_spec::kind::residual:
    case connection_spec::kind::attnres:
      return 1;
    case connection_spec::kind::mhc:
      return c.ways;
  }
  return 1;
}

void add_tensors(const engram_spec& e, const model_context& m, std::vector<tensor>& out) {
  const dtype* w = &m.precision->weights;
  tensor table{"engram", "engram_table", category::engram, checked(e.table_rows) * e.bucket_dim, w};
  table.lookup_only = true;  // rows are looked up: bytes, not FLOPs
  out.push_back(table);
  // The concatenated lookups project to `ways` keys plus one shared value of width d.
  out.push_back(matrix("engram", "engram_wkv", category::engram, checked(e.buckets) * e.bucket_dim,
                       (checked(e.ways) + 1) * m.hidden, w));
  out.push_back({"engram", "engram_q_weight", category::engram, checked(e.ways) * m.hidden,
                 &m.precision->norms});
  out.push_back({"engram", "engram_k_weight", category::engram, checked(e.ways) * m.hidden,
                 &m.precision->norms});
}

}  // namespace calc
