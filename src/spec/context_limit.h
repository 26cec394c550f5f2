// The model's context limit (`max_position_embeddings`): the lengths a range covers when the user
// gives none, and the warning a length past the limit earns. Lengths past it are not refused:
// the chapter itself asks about 1M tokens on models with shorter limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/model_spec.h"

namespace calc {

/// The lengths a sweep or report covers by default: 1K, 4K, 16K, ... (x4) up to `end`, which
/// closes the range when it is not itself a point (default_length_end gives it).
std::vector<std::int64_t> default_lengths(std::int64_t end);

/// The default end of a length range for these models: the largest context limit among them,
/// or 1M when none has one.
std::int64_t default_length_end(const std::vector<const model_spec*>& models);

/// One line when `positions` (the context a command asks about) is past the model's context
/// limit, e.g. "qwen3-8b has 40,960 positions (max_position_embeddings); 1,048,576 is past
/// them"; nullopt within the limit or for a model without one. Commands return it, never print it.
std::optional<std::string> context_limit_warning(const model_spec& spec, std::int64_t positions);

}  // namespace calc
