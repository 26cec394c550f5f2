// Hugging Face config.json -> calc model YAML (docs/model-schema.md), commented with the config
// field (or the family default) each value came from.
//
// `--model` reads a config through this YAML and the ordinary model reader, so an imported
// model and a hand-written one are the same model_spec: one path, one set of tallies.
#pragma once

#include <string>

namespace calc::hf {

/// A config translated to model YAML.
struct imported {
  std::string yaml;   // the model file, with a comment per value
  std::string plain;  // the same lines without comments, for reading (yaml-cpp is slow on them)
  std::string model_type;  // the family that read it
  std::string file;        // the config.json that was read
};

/// True when `path` names a Hugging Face config: a file ending in .json, or a folder holding
/// config.json.
bool is_hf_config(const std::string& path);

/// Reads a config.json (or a folder holding one, with hf_quant_config.json beside it where
/// present). Throws spec_error, located in the config, on anything it cannot map exactly.
imported import_config(const std::string& path);

/// Translates config text (tests); `file` names it in errors, `name` becomes the model's name.
imported import_text(const std::string& json, const std::string& file, const std::string& name);

}  // namespace calc::hf
