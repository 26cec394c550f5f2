// The C interface between calc and its CUDA module (libcalc_cuda.so), which only
// `calc validate --device cuda` loads (dlopen), so plain commands load no GPU library. Requests
// and rows cross it as JSON text; nothing else is shared, so the module may be rebuilt alone.
#pragma once

#include <cstddef>

extern "C" {

/// Receives one row (JSON object text) as soon as the module has measured it.
typedef void (*calc_cuda_emit_fn)(void* context, const char* row_json);

/// The layout of this interface; calc refuses a module that answers another number.
#define CALC_CUDA_ABI_VERSION 2
typedef int (*calc_cuda_abi_version_fn)(void);

/// 0 when a CUDA device is usable; otherwise writes why not (one line, NUL-terminated, at most
/// `size` bytes) into `why` and returns 1.
typedef int (*calc_cuda_probe_fn)(char* why, std::size_t size);

/// Runs the plan (JSON: seed, correctness_only, catalogue, cases; see gpu_plan.h), emitting
/// each row as it is measured. A failing case is emitted with its error and the run goes on;
/// returns 0 when the run reached its end, 1 when a sticky CUDA error stopped it early (the
/// rows already emitted stand).
typedef int (*calc_cuda_run_fn)(const char* plan_json, calc_cuda_emit_fn emit, void* context);
}
