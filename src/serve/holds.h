// TensorRT-LLM's holds of new prompts: an engine knob of `calc serve` (serve/batching.h) and a
// launch option a benchmark client's scripts set for some runs (serve/clients.h), one struct so
// that the row mapping hands a launch's holds to the steady state whole.
#pragma once

#include <cstdint>

namespace calc::serve {

/// Both off by default, as in the engine.
struct prompt_holds {
  // Batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; 0, off): while decodes
  // are in flight and attention DP is off, new prompts are held until this many iterations pass
  // or the held prompts and the decodes reach the ratio of the step's token budget
  // (tensorrt_llm/_torch/pyexecutor/py_executor.py, _waiting_requests).
  std::int64_t batch_wait_iters = 0;
  double batch_wait_tokens_ratio = 0;
  // The attention-DP balance (attention_dp_config: enable_balance, off; timeout_iters 50,
  // batching_wait_iters 10): with attention DP a rank's new prompts are held until every rank has
  // one or timeout_iters pass, then, while every rank decodes, for batching_wait_iters more
  // (py_executor.py, _balance_adp_requests).
  bool adp_balance = false;
  std::int64_t adp_balance_timeout_iters = 50;
  std::int64_t adp_balance_batching_iters = 10;
};

}  // namespace calc::serve
