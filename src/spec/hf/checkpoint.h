// Checkpoint truth: what a model folder's safetensors files hold, read from their headers only.
//
// A safetensors file is an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape and byte range, then the tensor data. calc reads the length and the
// header (bounded in size) and never the data; model.safetensors.index.json adds the total
// size the exporter wrote. The bytes found are set against calc's `weight_bytes` with each
// difference named (a vision tower, MTP layers, rotary buffers, a stored copy of a tied head).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace calc::hf {

/// One tensor as a safetensors header lists it.
struct stored_tensor {
  std::string name;
  std::string dtype;                // "BF16", "F8_E4M3", "F32", ...
  std::vector<std::int64_t> shape;  // empty for a scalar
  std::int64_t bytes = 0;           // end - begin of data_offsets
};

/// What a model folder stores.
struct checkpoint {
  std::string folder;
  std::optional<std::int64_t> index_total_size;  // metadata.total_size of the index, if any
  std::string index_file;                        // the index read, "" when none
  std::vector<std::string> shards;               // safetensors files whose headers were read
  std::vector<std::string> missing_shards;       // named by the index, absent from the folder
  std::vector<stored_tensor> tensors;            // from the headers read, in file order
  std::int64_t tensor_bytes = 0;                 // sum of the tensors' bytes

  /// The checkpoint's size: the index's total_size when there is one, else the headers' sum.
  std::int64_t bytes() const { return index_total_size.value_or(tensor_bytes); }
};

/// The largest safetensors header calc reads (the format itself caps headers at 100 MB; a real
/// 1T-parameter shard's header is a few hundred KB).
inline constexpr std::int64_t max_safetensors_header = 100'000'000;

/// Reads the header of one safetensors file: its tensors (never their data). A short file, a
/// header past the limit, bad JSON or data offsets that disagree with dtype x shape are a
/// spec_error naming the file.
std::vector<stored_tensor> read_safetensors_header(const std::string& path);

/// The checkpoint of a model path (a folder, or a config.json inside one): the folder's
/// model.safetensors.index.json and every safetensors file present; none when the folder holds
/// neither.
std::optional<checkpoint> read_checkpoint(const std::string& model_path);

/// One named part of checkpoint_bytes - weight_bytes.
struct checkpoint_difference {
  std::string name;  // "vision tower and projector", "MTP layers", ...
  std::int64_t bytes = 0;
  std::int64_t tensors = 0;
};

/// checkpoint_bytes set against calc's weight bytes of the language model.
struct checkpoint_comparison {
  std::int64_t checkpoint_bytes = 0;
  std::vector<checkpoint_difference> differences;  // stored, and not in calc's count
  std::int64_t unexplained_bytes = 0;  // checkpoint - named parts - weight_bytes - components
  /// Bytes the headers store under a vision tower or projector when calc counts it as a
  /// component (then it is no difference); 0 otherwise.
  std::int64_t component_stored_bytes = 0;
  bool headers_complete = false;       // every shard's header was read (names decide parts)
};

/// Names the parts of the checkpoint that calc's weight bytes leave out: tensors of a vision
/// tower or projector, MTP layers (model.layers.N with N >= `layers`, or mtp.*), rotary
/// inv_freq buffers, and lm_head.weight when the embeddings are `tied`. Parts are named only
/// from headers; with an index alone, the whole difference is unexplained. `component_bytes`:
/// what calc counts for the model's components (its vision tower, model_spec's `components`);
/// when positive, the tower's tensors are counted, not a difference.
checkpoint_comparison compare_checkpoint(const checkpoint& c, std::int64_t weight_bytes,
                                         std::int64_t layers, bool tied,
                                         std::int64_t component_bytes = 0);

}  // namespace calc::hf
