// Hugging Face repository ids ("Org/Name") as model names: which bundled model a repository is,
// and where the local Hugging Face cache keeps its config. No network: only files already here.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace calc::hf {

/// True when `name` has the shape of a repository id: two parts joined by one '/', each of
/// letters, digits, '.', '_' and '-', the first part starting with a letter or digit.
bool looks_like_repo_id(const std::string& name);

/// The repository id a `source:` line names ("...; Qwen/Qwen3-8B config.json" -> Qwen/Qwen3-8B):
/// the first whitespace-separated token with exactly one '/' that is a repository id and not a
/// file (.yaml, .json) or a URL. None when the source names no repository.
std::optional<std::string> repo_in_source(const std::string& source);

/// The bundled model (a name in `names`, a file `<dir>/<name>.yaml`) whose top-level `source:`
/// line names repository `id`, compared ignoring case; none when no model does.
std::optional<std::string> bundled_with_repo(const std::string& id, const std::string& dir,
                                             const std::vector<std::string>& names);

/// A repository reduced to what decides its shapes: the name without its organisation, in lower
/// case, less the '-'-separated words that name a format, a fine-tune or a release date
/// (instruct, chat, it, base, thinking, hf, fp8, dynamic, fp4, nvfp4, mxfp4, awq, gptq, int4,
/// int8, w4a16, w8a8, and four digits such as 2507 or 0528). "nvidia/Llama-3.3-70B-Instruct-FP8"
/// and "meta-llama/Llama-3.3-70B-Instruct" are both "llama-3.3-70b"; a version stays a word of
/// its own ("Mistral-7B-v0.3", a larger vocabulary, is not "Mistral-7B-v0.1").
std::string shape_name(const std::string& id);

/// Every bundled model whose source repository has `id`'s shape_name, in `names` order, for rows
/// whose formats are given apart (calibrate's measured rows), where only the shapes are taken
/// from the model. More than one may differ in shapes the name does not tell (glm-4-9b-chat and
/// GLM-4-9B-0414), which the caller checks.
std::vector<std::string> bundles_with_shapes_of(const std::string& id, const std::string& dir,
                                                const std::vector<std::string>& names);

/// The Hugging Face hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else
/// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's order).
std::string hub_cache_dir();

/// The snapshot folder of `id` in the hub cache (models--Org--Name/snapshots/<refs/main>),
/// matched ignoring case, when it holds a config.json; none otherwise. `looked` receives the
/// folders tried, for the error that says where calc looked.
std::optional<std::string> cached_snapshot(const std::string& id, std::vector<std::string>& looked);

}  // namespace calc::hf
