// Repository ids and the local Hugging Face cache. The cache layout is huggingface_hub's:
// <cache>/models--Org--Name/refs/main holds the commit of the main branch, and
// <cache>/models--Org--Name/snapshots/<commit>/ holds that revision's files (config.json, the
// safetensors index, ...). calc reads only what is already there.
#include "spec/hf/hub.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace calc::hf {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool id_part(const std::string& s) {
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

/// The first line of a small text file, without trailing whitespace; "" when unreadable.
std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

}  // namespace

bool looks_like_repo_id(const std::string& name) {
  auto slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) return false;
  return id_part(name.substr(0, slash)) && id_part(name.substr(slash + 1));
}

std::optional<std::string> repo_in_source(const std::string& source) {
  std::string token;
  auto check = [&]() -> std::optional<std::string> {
    // Trailing punctuation of prose ("Org/Name," or "Org/Name)") is not part of the id.
    while (!token.empty() && std::string(",;:)]\"'").find(token.back()) != std::string::npos)
      token.pop_back();
    while (!token.empty() && std::string("([\"'").find(token.front()) != std::string::npos)
      token.erase(0, 1);
    if (!looks_like_repo_id(token)) return std::nullopt;
    std::string l = lower(token);
    if (l.ends_with(".yaml") || l.ends_with(".json") || l.ends_with(".md")) return std::nullopt;
    if (!std::isalpha(static_cast<unsigned char>(token[0]))) return std::nullopt;  // "2-A/2-B"
    return token;
  };
  for (char c : source) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (auto id = check()) return id;
      token.clear();
    } else {
      token += c;
    }
  }
  return check();
}

namespace {

/// The repository each bundled model's top-level `source:` line names, in `names` order. The
/// line is read as text: parsing every model file to find one would cost a full YAML read per
/// bundled model.
std::vector<std::pair<std::string, std::string>> bundled_repos(
    const std::string& dir, const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : names) {
    std::ifstream in(fs::path(dir) / (name + ".yaml"));
    std::string line;
    while (std::getline(in, line)) {
      if (!line.starts_with("source:")) continue;
      if (auto repo = repo_in_source(line.substr(7))) out.emplace_back(name, *repo);
      break;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> bundled_with_repo(const std::string& id, const std::string& dir,
                                             const std::vector<std::string>& names) {
  for (const auto& [name, repo] : bundled_repos(dir, names))
    if (lower(repo) == lower(id)) return name;
  return std::nullopt;
}

std::string shape_name(const std::string& id) {
  static const std::set<std::string> release_words = {
      "instruct", "chat", "it",   "base", "thinking", "hf",   "fp8",   "dynamic", "fp4",
      "nvfp4",    "mxfp4", "awq", "gptq", "int4",     "int8", "w4a16", "w8a8"};
  std::string name = lower(id.substr(id.find('/') == std::string::npos ? 0 : id.find('/') + 1));
  std::string out, word;
  auto keep = [&] {
    bool date = word.size() == 4 && std::all_of(word.begin(), word.end(), [](unsigned char c) {
                  return std::isdigit(c) != 0;
                });
    if (!word.empty() && !date && !release_words.count(word))
      out += (out.empty() ? "" : "-") + word;
    word.clear();
  };
  for (char c : name) {
    if (c == '-' || c == '_') {
      keep();
    } else {
      word += c;
    }
  }
  keep();
  return out;
}

std::vector<std::string> bundles_with_shapes_of(const std::string& id, const std::string& dir,
                                                const std::vector<std::string>& names) {
  std::string want = shape_name(id);
  std::vector<std::string> out;
  for (const auto& [name, repo] : bundled_repos(dir, names))
    if (shape_name(repo) == want) out.push_back(name);
  return out;
}


std::string hub_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("HF_HOME"); v && *v) return (fs::path(v) / "hub").string();
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v)
    return (fs::path(v) / "huggingface" / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "huggingface" / "hub").string();
}

std::optional<std::string> cached_snapshot(const std::string& id,
                                           std::vector<std::string>& looked) {
  namespace fs = std::filesystem;
  if (!looks_like_repo_id(id)) return std::nullopt;
  std::string want = "models--" + id.substr(0, id.find('/')) + "--" + id.substr(id.find('/') + 1);
  fs::path cache = hub_cache_dir();
  fs::path repo = cache / want;
  looked.push_back(repo.string());
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    // Folder names keep the repository's case; an id typed in another case still finds it.
    repo.clear();
    for (const auto& e : fs::directory_iterator(cache, ec))
      if (e.is_directory(ec) && lower(e.path().filename().string()) == lower(want)) {
        repo = e.path();
        break;
      }
    if (repo.empty()) return std::nullopt;
  }
  std::string commit = first_line(repo / "refs" / "main");
  fs::path snapshot;
  if (!commit.empty() && commit.find('/') == std::string::npos && commit != "." && commit != "..") {
    snapshot = repo / "snapshots" / commit;
  } else {
    // No refs/main (downloaded at a pinned revision): a single snapshot is unambiguous.
    std::vector<fs::path> all;
    for (const auto& e : fs::directory_iterator(repo / "snapshots", ec))
      if (e.is_directory(ec)) all.push_back(e.path());
    if (all.size() == 1) snapshot = all[0];
  }
  if (snapshot.empty()) return std::nullopt;
  looked.back() = (snapshot / "config.json").string();
  if (!fs::exists(snapshot / "config.json", ec)) return std::nullopt;
  return snapshot.string();
}

}  // namespace calc::hf
