// The vision tower of a multimodal wrapper (Qwen2-VL .. Qwen3.5, Gemma 3, Mistral 3, Llama 4,
// Kimi-K2.5, LLaVA, GLM-4.5V),
// read from its vision_config into the `components` entry of the model YAML: the shapes each
// reference implementation builds, so calc counts the tower from its structure, apart from the
// text model's totals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/hf/families.h"
#include "spec/hf/hf_json.h"

namespace calc::hf {

/// One YAML line of the component: a key, its value and the field (or default) it came from.
struct vision_line {
  std::string key;
  std::string value;
  std::string comment;
};

/// The component as read: its lines, or why it is not counted.
struct vision_read {
  std::vector<vision_line> fields;     // under `- name: vision_tower`
  std::vector<vision_line> projector;  // flow mappings of `projector:`, in order
  std::string not_counted;             // non-empty: not read, and why (said in the YAML header)
};

/// Reads the vision tower of `fam` (its vision_family) from root's vision_config.
/// `text_hidden` is the text model's width (the projector's output), `dtype` the model dtype with
/// its origin; `modelopt` the hf_quant_config.json when there is one. A vision tower left out of a
/// quantised checkpoint's exclusion list is not counted (calc reads it only in the model dtype),
/// unless the family's releases under that quant_method keep it unquantised
/// (family::vision_unquantised_method). A malformed
/// field is a spec_error located at it (vision_config.depth).
vision_read read_vision(const family& fam, const hf_object& root, std::int64_t text_hidden,
                        const std::string& dtype, const std::string& dtype_origin,
                        const hf_json* modelopt);

/// The `components:` block of the YAML (`annotate` false: the same lines without comments).
std::string emit_vision(const vision_read& v, bool annotate);

}  // namespace calc::hf
