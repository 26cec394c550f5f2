// Reads a model YAML (docs/model-schema.md) into a ModelSpec, strictly.
#pragma once

#include <string>
#include <vector>

#include "spec/model_spec.h"

namespace calc {

/// Reads a model file, applying `sets` (key.path=value) before validation.
/// Throws spec_error, located at file:line:col with the field path, on any bad input.
model_spec read_model_file(const std::string& path, const std::vector<std::string>& sets = {});

/// Reads a model from YAML text (tests, fuzzing); `file` names it in errors.
model_spec read_model_text(const std::string& yaml, const std::string& file,
                           const std::vector<std::string>& sets = {});

/// Resolves `--model`: a path (an existing file or folder, or a name ending in .yaml or .json) or a
/// bundled name, matched ignoring case, in models_dir(); an unknown name is a spec_error with
/// ranked suggestions.
std::string resolve_model_path(const std::string& name_or_path);

/// Names of the bundled models, sorted.
std::vector<std::string> bundled_models();

/// The folder of bundled models: $CALC_MODELS when set; else share/calc/models beside the
/// running binary's folder (an installed calc); else models/ in the source tree.
std::string models_dir();

}  // namespace calc
