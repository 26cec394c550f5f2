#include "spec/format_summary.h"

#include <utility>
#include <vector>

namespace calc {

std::string format_summary(const precision_spec& p) {
  std::vector<std::pair<std::string, const dtype*>> roles = {{"weights", &p.weights}};
  auto role = [&](const char* name, const std::optional<dtype>& f) {
    if (f) roles.emplace_back(name, &*f);
  };
  role("attention", p.attention);
  role("attention_out", p.attention_out);
  role("experts", p.experts);
  role("shared_experts", p.shared_experts);
  role("dense_ffn", p.dense_ffn);
  role("conv_taps", p.conv_taps);
  role("mixer_gates", p.mixer_gates);
  if (p.embedding.name != p.weights.name) roles.emplace_back("embedding", &p.embedding);
  if (p.head.name != p.weights.name) roles.emplace_back("head", &p.head);
  roles.emplace_back("kv", &p.kv);
  // Group the roles that share a format, in order of each format's first appearance.
  std::vector<std::pair<std::string, std::string>> groups;  // format, its roles
  for (const auto& [name, f] : roles) {
    auto it = groups.begin();
    while (it != groups.end() && it->first != f->name) ++it;
    if (it == groups.end()) it = groups.insert(groups.end(), {f->name, ""});
    it->second += (it->second.empty() ? "" : ", ") + name;
  }
  std::string out;
  for (const auto& [format, names] : groups)
    out += (out.empty() ? "" : "; ") + names + " " + format;
  return out;
}

}  // namespace calc
