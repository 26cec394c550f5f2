#include "common/json_keys.h"

#include <algorithm>
#include <set>
#include <vector>

namespace calc {

nlohmann::json parse_json_distinct(const std::string& text, std::optional<std::string>& repeated) {
  repeated.reset();
  std::vector<std::set<std::string>> open;  // the keys of each object being read
  auto track = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using ev = nlohmann::json::parse_event_t;
    if (event == ev::object_start) open.emplace_back();
    if (event == ev::object_end && !open.empty()) open.pop_back();
    if (event == ev::key && !open.empty() && !repeated &&
        !open.back().insert(parsed.get<std::string>()).second)
      repeated = parsed.get<std::string>();
    return true;
  };
  return nlohmann::json::parse(text, track);
}

int line_of_repeat(const std::string& text, const std::string& key) {
  std::string quoted = "\"" + key + "\"";
  std::size_t first = text.find(quoted);
  std::size_t second = first == std::string::npos ? first : text.find(quoted, first + 1);
  if (second == std::string::npos) return 1;
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(second), '\n'));
}

}  // namespace calc
