// Which models' layers `calc validate --device cuda` times, and at which calls: data
// (models/validate/cuda-timed.yaml), read here and passed down by the CLI, so neither the CLI
// nor exec/ names a model in code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace calc {

/// The calls a CUDA run times on one model's layers.
struct timed_calls {
  std::vector<std::pair<std::int64_t, std::int64_t>> decode;  // (batch, context), attention
  std::vector<std::int64_t> state_batches;                    // delta-rule step batches
  std::vector<std::int64_t> moe_batches;                      // routed-expert GEMM batches
};

struct timed_source {
  std::string model;  // a bundled model's name
  timed_calls calls;
};

struct timed_list {
  std::vector<timed_source> models;
  timed_calls other;  // for the model the user names when it is none of `models`
};

/// The bundled list: models/validate/cuda-timed.yaml under the models folder.
std::string timed_models_path();

/// Reads a list; every error is a spec_error located at the offending node.
timed_list read_timed_models(const std::string& path);

}  // namespace calc
