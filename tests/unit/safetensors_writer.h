// A safetensors header written for the tests that read checkpoint headers (hf_checkpoint_test,
// hf_conv_taps_test): the 8-byte length and the JSON, no tensor data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace calc::testing {

/// A safetensors header for (name, dtype, shape) tensors laid end to end; no data follows.
struct header_writer {
  nlohmann::json h = nlohmann::json::object();
  std::int64_t offset = 0;
  void add(const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape) {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    std::int64_t bytes = n * (dtype == "F32" ? 4 : dtype == "F8_E4M3" ? 1 : 2);
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  void write(const std::filesystem::path& p) const {
    std::string text = h.dump();
    std::ofstream out(p, std::ios::binary);
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << text;
  }
};

}  // namespace calc::testing
