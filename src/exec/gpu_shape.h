// A kernel case's shape as JSON fields and back: the plan (gpu_plan.cpp) writes it, every row
// of a CUDA run carries it, and the CUDA module (gpu_cuda.cpp) reads it. Header-only, so the
// module, which does not link calc_core, shares the one spelling.
#pragma once

#include <nlohmann/json.hpp>

#include "twin_cases.h"

namespace calc::gpu {

/// The shape's non-zero fields, named as the kernels' parameters are (`context`: cached tokens
/// of a decode, or the prefill's positions), with `split_blocks` for GQA.
inline nlohmann::ordered_json shape_json(const kernels::case_shape& s) {
  nlohmann::ordered_json j = {{"kernel", s.kernel}, {"batch", s.batch}};
  auto put = [&](const char* k, int v) {
    if (v) j[k] = v;
  };
  put("q_heads", s.q_heads), put("kv_heads", s.kv_heads), put("heads", s.heads);
  put("head_dim", s.head_dim), put("context", s.length), put("page_tokens", s.page_tokens);
  put("rank", s.rank), put("rope", s.rope), put("dk", s.dk), put("dv", s.dv);
  put("tokens", s.tokens), put("chunk", s.chunk), put("width", s.width), put("window", s.window);
  put("entries", s.n_entries), put("top_k", s.kernel == "sparse_decode" ? s.selected : s.top_k);
  put("experts", s.experts), put("in", s.in), put("out", s.out);
  if (s.kernel.rfind("gqa", 0) == 0) j["split_blocks"] = s.split_blocks;
  return j;
}

/// The inverse of shape_json.
inline kernels::case_shape shape_of(const nlohmann::ordered_json& j) {
  kernels::case_shape s;
  s.kernel = j.at("kernel");
  auto get = [&](const char* k, int& v) { v = j.value(k, v); };
  get("batch", s.batch), get("q_heads", s.q_heads), get("kv_heads", s.kv_heads);
  get("heads", s.heads), get("head_dim", s.head_dim), get("context", s.length);
  get("page_tokens", s.page_tokens), get("rank", s.rank), get("rope", s.rope), get("dk", s.dk);
  get("dv", s.dv), get("tokens", s.tokens), get("chunk", s.chunk), get("width", s.width);
  get("window", s.window), get("entries", s.n_entries), get("experts", s.experts);
  get("in", s.in), get("out", s.out), get("split_blocks", s.split_blocks);
  if (s.kernel == "sparse_decode")
    get("top_k", s.selected);
  else
    get("top_k", s.top_k);
  return s;
}

}  // namespace calc::gpu
