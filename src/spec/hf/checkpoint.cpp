// Safetensors headers and the index beside them: the stored bytes of a checkpoint, without
// reading a byte of tensor data (see checkpoint.h for the layout).
#include "spec/hf/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/limits.h"

namespace calc::hf {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

/// Bits of one element of a safetensors dtype; 0 for a dtype calc does not know (its bytes are
/// then taken from the offsets as stored, unchecked).
std::int64_t dtype_bits(const std::string& d) {
  static const std::map<std::string, std::int64_t> bits = {
      {"F64", 64},    {"I64", 64}, {"U64", 64},    {"F32", 32},    {"I32", 32},
      {"U32", 32},    {"F16", 16}, {"BF16", 16},   {"I16", 16},    {"U16", 16},
      {"I8", 8},      {"U8", 8},   {"BOOL", 8},    {"F8_E4M3", 8}, {"F8_E5M2", 8},
      {"F8_E8M0", 8}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6}};
  auto it = bits.find(d);
  return it == bits.end() ? 0 : it->second;
}

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  throw spec_error(source_location{file, 0, 0}, "safetensors header", message);
}

std::int64_t json_size(const json& v, const std::string& file, const std::string& what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    fail(file, fmt::format("{}: expected a non-negative integer", what));
  std::uint64_t u = v.get<std::uint64_t>();
  if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(file, fmt::format("{}: too large", what));
  return static_cast<std::int64_t>(u);
}

}  // namespace

std::vector<stored_tensor> read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open the file");
  const std::streamoff size = in.tellg();  // checked before a header buffer is allocated
  in.seekg(0);
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char*>(len), 8))
    fail(path, "shorter than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];  // little-endian
  if (n > static_cast<std::uint64_t>(max_safetensors_header))
    fail(path, fmt::format("a header of {} bytes is longer than the limit of {}", n,
                           max_safetensors_header));
  if (size < 8 || n > static_cast<std::uint64_t>(size - 8))
    fail(path, fmt::format("the header says {} bytes, but the file ends first", n));
  std::string text(static_cast<std::size_t>(n), '\0');
  if (n > 0 && !in.read(text.data(), static_cast<std::streamsize>(n)))
    fail(path, fmt::format("the header says {} bytes, but the file ends first", n));
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    fail(path, fmt::format("the header is not JSON ({})", e.what()));
  }
  if (!header.is_object()) fail(path, "the header is not a JSON object");
  std::vector<stored_tensor> out;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array() || !t.contains("data_offsets") || !t["data_offsets"].is_array() ||
        t["data_offsets"].size() != 2)
      fail(path, fmt::format("tensor '{}': expected dtype, shape and two data_offsets", name));
    stored_tensor s;
    s.name = name;
    s.dtype = t["dtype"].get<std::string>();
    std::int64_t elements = 1;
    bool overflow = false;
    for (const json& d : t["shape"]) {
      std::int64_t v = json_size(d, path, fmt::format("tensor '{}': shape", name));
      s.shape.push_back(v);
      if (v != 0 && elements > INT64_MAX / 8 / v) overflow = true;
      elements *= v;
    }
    std::int64_t begin = json_size(t["data_offsets"][0], path, name + ": data_offsets");
    std::int64_t end = json_size(t["data_offsets"][1], path, name + ": data_offsets");
    if (end < begin)
      fail(path, fmt::format("tensor '{}': data_offsets end before they begin", name));
    s.bytes = end - begin;
    if (std::int64_t bits = dtype_bits(s.dtype); bits > 0 && !overflow) {
      std::int64_t want = (elements * bits + 7) / 8;
      if (want != s.bytes)
        fail(path, fmt::format("tensor '{}': {} x {} is {} bytes, but data_offsets span {}", name,
                               s.dtype, elements, want, s.bytes));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<checkpoint> read_checkpoint(const std::string& model_path) {
  std::error_code ec;
  fs::path folder = model_path;
  if (!fs::is_directory(folder, ec)) folder = folder.parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, ec)) return std::nullopt;
  checkpoint c;
  c.folder = folder.string();
  std::set<std::string> listed;
  fs::path index = folder / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    c.index_file = index.string();
    if (fs::file_size(index, ec) > static_cast<std::uintmax_t>(limits::file_bytes))
      fail(c.index_file,
           fmt::format("the index is larger than the limit of {} bytes", limits::file_bytes));
    std::ifstream in(index);
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      fail(c.index_file, fmt::format("not JSON ({})", e.what()));
    }
    if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("total_size"))
      c.index_total_size = json_size(j["metadata"]["total_size"], c.index_file, "total_size");
    if (j.contains("weight_map") && j["weight_map"].is_object())
      for (const auto& [tensor, file] : j["weight_map"].items())
        if (file.is_string()) listed.insert(file.get<std::string>());
  }
  std::set<std::string> present;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.path().extension() == ".safetensors" && e.is_regular_file(ec))
      present.insert(e.path().filename().string());
  for (const std::string& f : listed)
    if (!present.count(f)) c.missing_shards.push_back(f);
  if (c.index_file.empty() && present.empty()) return std::nullopt;
  for (const std::string& f : present) {
    if (!listed.empty() && !listed.count(f)) continue;  // a stray file the index does not name
    c.shards.push_back(f);
    for (stored_tensor& t : read_safetensors_header((folder / f).string())) {
      c.tensor_bytes += t.bytes;
      c.tensors.push_back(std::move(t));
    }
  }
  return c;
}

namespace {

/// The layer number of "model.layers.N." (also "model.language_model.layers.N.",
/// "language_model.model.layers.N."); -1 when the name has none.
std::int64_t layer_of(const std::string& name) {
  auto at = name.find("layers.");
  if (at == std::string::npos || (at > 0 && name[at - 1] != '.')) return -1;
  std::size_t i = at + 7;
  std::int64_t n = 0;
  bool digits = false;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    n = n * 10 + (name[i] - '0');
    digits = true;
    if (n > 1'000'000) return -1;
    ++i;
  }
  return digits && i < name.size() && name[i] == '.' ? n : -1;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (s.find(p) != std::string::npos) return true;
  return false;
}

}  // namespace

checkpoint_comparison compare_checkpoint(const checkpoint& c, std::int64_t weight_bytes,
                                         std::int64_t layers, bool tied,
                                         std::int64_t component_bytes) {
  checkpoint_comparison out;
  out.checkpoint_bytes = c.bytes();
  out.headers_complete = c.missing_shards.empty() && !c.shards.empty();
  std::vector<checkpoint_difference> parts = {{"vision tower and projector", 0, 0},
                                              {"MTP layers", 0, 0},
                                              {"rotary buffers", 0, 0},
                                              {"stored copy of the tied head", 0, 0}};
  if (out.headers_complete) {
    for (const stored_tensor& t : c.tensors) {
      std::size_t k = parts.size();
      if (contains_any(t.name, {"visual.", "vision_tower", "vision_model", "mm_projector",
                                "multi_modal_projector", "vision_embed", "image_newline"}))
        k = 0;
      else if (t.name.starts_with("mtp.") || t.name.find(".mtp.") != std::string::npos ||
               layer_of(t.name) >= layers)
        k = 1;
      else if (t.name.ends_with("rotary_emb.inv_freq"))
        k = 2;
      else if (tied && t.name.ends_with("lm_head.weight"))
        k = 3;
      if (k == parts.size()) continue;
      if (k == 0 && component_bytes > 0) {  // the tower calc counts as a component
        out.component_stored_bytes += t.bytes;
        continue;
      }
      parts[k].bytes += t.bytes;
      parts[k].tensors += 1;
    }
  }
  std::int64_t named = 0;
  for (const checkpoint_difference& d : parts)
    if (d.tensors > 0) {
      out.differences.push_back(d);
      named += d.bytes;
    }
  out.unexplained_bytes = out.checkpoint_bytes - named - weight_bytes - component_bytes;
  return out;
}

}  // namespace calc::hf
