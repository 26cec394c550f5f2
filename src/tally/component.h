// Parameters and bytes of a component beside the text model (model_spec.h's component_spec: a
// vision tower and its projector). Reported apart: no component enters the text model's totals,
// its FLOPs or its state (a vision encoder keeps no KV cache between calls).
#pragma once

#include <string>
#include <vector>

#include "common/checked.h"
#include "spec/component_spec.h"

namespace calc {

/// One named group of a component's tensors and its parameters.
struct component_part {
  std::string name;  // "patch embedding", "blocks", "projector", ...
  checked params;
};

struct component_tally {
  std::string name;
  checked params;
  checked bytes;  // params in the component's format
  std::vector<component_part> parts;
};

/// The component's parameters by part, each term from the shapes (one line per tensor).
component_tally tally_component(const component_spec& c);

/// Bytes of every component of a model (0 when it has none).
checked component_bytes(const std::vector<component_spec>& components);

}  // namespace calc
