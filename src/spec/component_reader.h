// The `components` list of a model YAML: parts of a checkpoint beside the text model (a vision
// tower and its projector), read into component_spec (component_spec.h). model_spec is the text
// model alone: the model reader checks `components` where it reads the rest (so a bad entry is an
// error for every command) and the commands that report components (params, the engine budgets)
// read them with read_model_components.
#pragma once

#include <string>
#include <vector>

#include "spec/component_spec.h"
#include "spec/yaml_reader.h"

namespace calc {

/// Reads `components` from the model's top-level map when present (empty otherwise);
/// `model_dtype` is the format a component's `weights` defaults to. Errors are located
/// spec_errors at the field (components[0].layers).
std::vector<component_spec> read_components(yaml_map& model, const dtype& model_dtype);

/// The components of the model file at `path` (a model YAML, or a Hugging Face config.json or
/// folder, read through `calc import`), as resolve_model_path names it, after the --set
/// assignments `sets` (components.0.layers=12, components.vision_tower.weights=fp32), as the
/// model reader applies them.
std::vector<component_spec> read_model_components(const std::string& path,
                                                  const dtype& model_dtype,
                                                  const std::vector<std::string>& sets = {});

/// The same from model YAML text (tests); `file` names it in errors.
std::vector<component_spec> read_model_components_text(const std::string& yaml,
                                                       const std::string& file,
                                                       const dtype& model_dtype);

}  // namespace calc
