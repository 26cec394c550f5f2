// Models by Hugging Face id (src/spec/hf/hub.h): a bundled model whose source names the
// repository, else the snapshot in the local Hugging Face cache, else an error saying where calc
// looked. The cache here is a scratch folder laid out as huggingface_hub lays it out.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "scratch.h"
#include "spec/hf/hub.h"
#include "spec/model_reader.h"
#include "tally/tally.h"
#include "test_model.h"

using namespace calc;
namespace fs = std::filesystem;

namespace {

/// Sets an environment variable for one scope and restores it after.
struct env_guard {
  std::string name;
  std::optional<std::string> old;
  env_guard(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~env_guard() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

std::string error_of(const std::string& model) {
  try {
    resolve_model_path(model);
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a source line names a repository id; tables, files and URLs do not") {
  CHECK(hf::repo_in_source("\"Chapter 2 Table 2-1; Qwen/Qwen3-8B config.json\"") ==
        std::optional<std::string>("Qwen/Qwen3-8B"));
  CHECK(hf::repo_in_source("Tables 2-A/2-B/2-C/2-E; deepseek-ai DeepSeek-V4-Flash config") ==
        std::nullopt);
  CHECK(hf::repo_in_source("see models/qwen3-8b.yaml and https://huggingface.co/Qwen/Qwen3-8B") ==
        std::nullopt);
  CHECK(hf::repo_in_source("(meta-llama/Llama-3.1-8B)") ==
        std::optional<std::string>("meta-llama/Llama-3.1-8B"));
  CHECK(hf::looks_like_repo_id("moonshotai/Kimi-K2.5"));
  CHECK_FALSE(hf::looks_like_repo_id("a/b/c"));
  CHECK_FALSE(hf::looks_like_repo_id("/abs"));
}

TEST_CASE("--model Org/Name: the bundled model whose source names it, in any case") {
  CHECK(fs::path(resolve_model_path("Qwen/Qwen3-8B")).filename() == "qwen3-8b.yaml");
  CHECK(fs::path(resolve_model_path("qwen/QWEN3-8b")).filename() == "qwen3-8b.yaml");
  CHECK(fs::path(resolve_model_path("deepseek-ai/DeepSeek-V3")).filename() == "deepseek-v3.yaml");
  // A bundled subfolder is a name, not an organisation: the ordinary did-you-mean error.
  CHECK(error_of("examples/no-such").find("unknown model 'examples/no-such'") != std::string::npos);
}

TEST_CASE("--model Org/Name: the local Hugging Face cache, at refs/main") {
  fs::path cache = testing::scratch_dir("calc-hub") / "hub";
  fs::path repo = cache / "models--acme--Tiny-Qwen3";
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_directories(repo / "snapshots" / "ffffffffffffffffffffffffffffffffffffffff");
  std::ofstream(repo / "refs" / "main") << commit << "\n";
  fs::copy_file(std::string(CALC_SOURCE_DIR) + "/tests/fixtures/hf/qwen3-8b.json",
                repo / "snapshots" / commit / "config.json", fs::copy_options::overwrite_existing);
  env_guard g("HF_HUB_CACHE", cache.string());

  std::string path = resolve_model_path("acme/Tiny-Qwen3");
  CHECK(fs::path(path) == repo / "snapshots" / commit);
  CHECK(fs::path(resolve_model_path("ACME/tiny-qwen3")) == repo / "snapshots" / commit);
  testing::model m("acme/Tiny-Qwen3");
  CHECK(tally_params(m.g).total.value() == 8'190'735'360);
  // The model is named from the repository, not "config" or the commit, and its source says so.
  CHECK(m.spec.name == "Tiny-Qwen3");
  CHECK(m.spec.source.find("acme/Tiny-Qwen3 config.json") == 0);

  // Not there: one line saying where calc looked.
  std::string e = error_of("acme/Missing-Model");
  CHECK(e ==
        "model: unknown model 'acme/Missing-Model': no bundled model's source names that "
        "repository, and the Hugging Face cache has no " +
            (cache / "models--acme--Missing-Model").string() + " (no network is used)");
}

TEST_CASE("the hub cache folder follows huggingface_hub's variables") {
  env_guard a("HF_HUB_CACHE", "");
  env_guard b("HF_HOME", "/data/hf");
  CHECK(hf::hub_cache_dir() == "/data/hf/hub");
  env_guard c("HF_HUB_CACHE", "/fast/hub");
  CHECK(hf::hub_cache_dir() == "/fast/hub");
}

TEST_CASE("calc models: every id a bundled model's source names resolves back to that model") {
  std::ostringstream out, err;
  REQUIRE(run_cli({"models", "--format", "json"}, out, err) == 0);
  nlohmann::json j = nlohmann::json::parse(out.str());
  int ids = 0;
  for (const auto& m : j["models"]) {
    if (m["id"].is_null()) continue;
    ++ids;
    CAPTURE(m["name"].get<std::string>());
    CHECK(fs::path(resolve_model_path(m["id"].get<std::string>())).stem() ==
          m["name"].get<std::string>());
  }
  CHECK(ids >= 35);
  CHECK(j["models"].size() >= 40);
}

TEST_CASE("--model Org/Name: the bundles imported from published configs") {
  // Each bundle is `calc import` of its fixture (tests/fixtures/hf), its source naming the
  // repository users ask for.
  const std::pair<const char*, const char*> ids[] = {
      {"deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2"},
      {"deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1"},
      {"zai-org/GLM-5", "glm-5"},
      {"zai-org/GLM-5.1", "glm-5.1"},
      {"nvidia/Kimi-K2.5-NVFP4", "kimi-k2.5-nvfp4"},
      {"MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"},
  };
  for (const auto& id : ids) {
    CAPTURE(id.first);
    CHECK(fs::path(resolve_model_path(id.first)).stem() == id.second);
  }
}

TEST_CASE("shape_name: formats, fine-tunes and release dates go, versions and sizes stay") {
  CHECK(hf::shape_name("nvidia/Llama-3.3-70B-Instruct-FP8") == "llama-3.3-70b");
  CHECK(hf::shape_name("meta-llama/Llama-3.3-70B-Instruct") == "llama-3.3-70b");
  CHECK(hf::shape_name("Qwen/Qwen3-235B-A22B-Instruct-2507") == "qwen3-235b-a22b");
  CHECK(hf::shape_name("deepseek-ai/DeepSeek-R1-0528") == "deepseek-r1");
  CHECK(hf::shape_name("RedHatAI/Qwen3-32B-FP8-dynamic") == "qwen3-32b");
  CHECK(hf::shape_name("mistralai/Mixtral-8x7B-Instruct-v0.1") == "mixtral-8x7b-v0.1");
  // A version is a shape: Mistral-7B-v0.3 has a larger vocabulary than v0.1.
  CHECK(hf::shape_name("mistralai/Mistral-7B-Instruct-v0.3") !=
        hf::shape_name("mistralai/Mistral-7B-v0.1"));
  CHECK(hf::shape_name("Qwen/Qwen3-30B-A3B") != hf::shape_name("Qwen/Qwen3-32B"));
}

TEST_CASE("bundles_with_shapes_of: a re-release of a bundled model's shapes finds it") {
  std::vector<std::string> names = bundled_models();
  auto first = [&](const std::string& id) -> std::optional<std::string> {
    std::vector<std::string> all = hf::bundles_with_shapes_of(id, models_dir(), names);
    if (all.empty()) return std::nullopt;
    return all.front();
  };
  CHECK(first("nvidia/Llama-3.3-70B-Instruct-FP4") ==
        "llama-3.3-70b-instruct");
  CHECK(first("moonshotai/Kimi-K2-Thinking") ==
        "kimi-k2-instruct");
  CHECK(first("Qwen/Qwen3-14B-FP8") == "qwen3-14b");
  CHECK(first("Qwen/Qwen3-13B") == std::nullopt);
}
