// The list of models a CUDA validation times is data (models/validate/cuda-timed.yaml): it reads,
// names only bundled models, and a bad entry is a located error.
#include "spec/timed_models.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "spec/model_reader.h"

namespace calc {

TEST_CASE("the bundled timed-model list reads and names bundled models") {
  timed_list t = read_timed_models(timed_models_path());
  REQUIRE(t.models.size() >= 4);
  CHECK(t.models.front().model == "qwen3-8b");
  CHECK(t.models.front().calls.decode.size() == 4);
  CHECK(t.models.front().calls.decode.front() == std::pair<std::int64_t, std::int64_t>{1, 65536});
  bool experts = false, states = false;
  for (const timed_source& s : t.models) {
    CAPTURE(s.model);
    CHECK_NOTHROW(read_model_file(resolve_model_path(s.model)));
    CHECK(!s.calls.decode.empty());
    experts = experts || !s.calls.moe_batches.empty();
    states = states || !s.calls.state_batches.empty();
  }
  CHECK(experts);  // some model times the routed-expert GEMM
  CHECK(states);   // and the delta-rule step
  CHECK(t.other.decode == std::vector<std::pair<std::int64_t, std::int64_t>>{{8, 16384}});
}

TEST_CASE("a bad timed-model list is a located error") {
  std::string path =
      (std::filesystem::temp_directory_path() / "calc-timed-models-test.yaml").string();
  auto error_of = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      read_timed_models(path);
    } catch (const spec_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("models:\n  - model: qwen3-8b\n    decode: [[1, 2, 3]]\nother: {}\n") ==
        path + ":3:14: models[0].decode[0]: expected [batch, context]");
  CHECK(error_of("models:\n  - model: qwen3-8b\n    decods: [[1, 2]]\nother: {}\n")
            .find("models[0].decods") != std::string::npos);
  CHECK(error_of("models: []\n").find("other") != std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace calc
