// Launch constants of the CUDA kernels, in one place (FlashMLA's config.h pattern). The
// blocking the CPU twins mirror lives in kernels/ref/decode_params.h (`blocking`).
#pragma once

#include "decode_params.h"

namespace calc::kernels::config {

constexpr int kThreads = 256;  // threads per block of the sparse decode and softmax kernels
constexpr int kGqaWarps = 4;   // warps of one split-sequence GQA block
constexpr int kGqaUnroll = 4;  // row groups of K and V each GQA warp loads before using any
constexpr int kGqaCombineThreads = 128;
constexpr int kDeltaThreads = 32 * blocking::kDeltaWarps;
constexpr int kMoeThreads = 32 * blocking::kMoeSlices;
constexpr int kSparseWarps = blocking::kSparseWarps;
constexpr int kSparseHeadsPerWarp = blocking::kSparseHeadsPerWarp;
constexpr int kReduceThreads = 512;  // read-only bandwidth probe
constexpr int kReduceUnroll = 4;     // 16-byte loads in flight per thread per iteration
constexpr int kReduceBlocksPerSm = 4;
constexpr int kReduceMaxBlocks = 4096;  // partial sums the probe writes at most

}  // namespace calc::kernels::config
