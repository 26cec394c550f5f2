#include "spec/timed_models.h"

#include <fmt/format.h>

#include "spec/model_reader.h"
#include "spec/yaml_reader.h"

namespace calc {

namespace {

/// A list of counts of at least 1.
std::vector<std::int64_t> counts(const YAML::Node& n, const std::string& path,
                                 const std::string& file) {
  if (!n.IsDefined()) return {};
  if (!n.IsSequence()) throw spec_error(location_of(n, file), path, "expected a list of counts");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n.size(); ++i)
    out.push_back(read_integer(n[i], fmt::format("{}[{}]", path, i), file, 1));
  return out;
}

timed_calls read_calls(yaml_map& m) {
  timed_calls c;
  if (YAML::Node d = m.optional("decode"); d.IsDefined()) {
    if (!d.IsSequence())
      throw spec_error(location_of(d, m.file()), m.path_of("decode"),
                       "expected a list of [batch, context] pairs");
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::string path = fmt::format("{}[{}]", m.path_of("decode"), i);
      std::vector<std::int64_t> pair = counts(d[i], path, m.file());
      if (pair.size() != 2)
        throw spec_error(location_of(d[i], m.file()), path, "expected [batch, context]");
      c.decode.emplace_back(pair[0], pair[1]);
    }
  }
  c.state_batches = counts(m.optional("state_batches"), m.path_of("state_batches"), m.file());
  c.moe_batches = counts(m.optional("moe_batches"), m.path_of("moe_batches"), m.file());
  return c;
}

}  // namespace

std::string timed_models_path() { return models_dir() + "/validate/cuda-timed.yaml"; }

timed_list read_timed_models(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  yaml_map m(root, "", path);
  timed_list out;
  YAML::Node list = m.required("models");
  if (!list.IsSequence())
    throw spec_error(location_of(list, path), "models", "expected a list of models");
  for (std::size_t i = 0; i < list.size(); ++i) {
    yaml_map em(list[i], fmt::format("models[{}]", i), path);
    timed_source s;
    s.model = em.text("model");
    s.calls = read_calls(em);
    em.finish({"model", "decode", "state_batches", "moe_batches"});
    out.models.push_back(s);
  }
  yaml_map other = m.map("other");
  out.other = read_calls(other);
  other.finish({"decode", "state_batches", "moe_batches"});
  m.finish({"models", "other"});
  return out;
}

}  // namespace calc
