// Launch constants of the CUDA kernels, in one place (FlashMLA's config.h pattern).
#pragma once

namespace calc::kernels::config {

constexpr int kThreads = 256;         // threads per block for the decode kernels
constexpr int kMaxDeltaDv = 1024;     // value width the recurrent step handles per block
constexpr int kReduceThreads = 1024;  // read-only bandwidth probe

}  // namespace calc::kernels::config
