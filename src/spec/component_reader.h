// The `components` list of a model YAML: parts of a checkpoint beside the text model (a vision
// tower and its projector), read into component_spec (model_spec.h). Kept apart from
// model_reader.cpp so the text model's reader does not grow a field per component kind.
#pragma once

#include <vector>

#include "spec/model_spec.h"
#include "spec/yaml_reader.h"

namespace calc {

/// Reads `components` from the model's top-level map when present (empty otherwise);
/// `model_dtype` is the format a component's `weights` defaults to. Errors are located
/// spec_errors at the field (components[0].layers).
std::vector<component_spec> read_components(yaml_map& model, const dtype& model_dtype);

}  // namespace calc
