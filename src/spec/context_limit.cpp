#include "spec/context_limit.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/numbers.h"

namespace calc {

namespace {

constexpr std::int64_t kChapterEnd = 1LL << 20;  // 1M: the chapter's longest length

}  // namespace

std::vector<std::int64_t> default_lengths(std::int64_t end) {
  std::vector<std::int64_t> out;
  for (std::int64_t n = 1024; n <= end; n *= 4) out.push_back(n);
  if (out.empty() || out.back() != end) out.push_back(end);
  return out;
}

std::int64_t default_length_end(const std::vector<const model_spec*>& models) {
  std::optional<std::int64_t> end;
  for (const model_spec* m : models)
    if (m->max_position_embeddings)
      end = std::max(end.value_or(0), *m->max_position_embeddings);
  return end.value_or(kChapterEnd);
}

std::optional<std::string> context_limit_warning(const model_spec& spec, std::int64_t positions) {
  if (!spec.max_position_embeddings || positions <= *spec.max_position_embeddings)
    return std::nullopt;
  return fmt::format("{} has {} positions (max_position_embeddings); {} is past them", spec.name,
                     with_commas(*spec.max_position_embeddings), with_commas(positions));
}

}  // namespace calc
