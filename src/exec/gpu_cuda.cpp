// The CUDA module (libcalc_cuda.so) behind `calc validate --device cuda`: device facts, clocks
// and temperature before and after, measured ceilings, each case of the plan against its plain
// CPU twin (NaN-poisoned outputs, every consumed state compared), and timed cases (rotating
// inputs over at least 3x the L2, warm-up, median and spread of CUDA-event times). Every row is
// emitted as soon as it is measured; a failing case is recorded and the run goes on. Built only
// where nvcc exists, and loaded only by that command (gpu_module.cpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "decode_blocked.h"
#include "decode_ref.h"
#include "exec/gpu_abi.h"
#include "exec/gpu_shape.h"
#include "launchers.h"
#include "twin_cases.h"

namespace calc::gpu {

namespace {

using nlohmann::ordered_json;
using namespace calc::kernels;

/// A device buffer freed on scope exit.
template <typename T>
struct device_buffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit device_buffer(std::size_t n) : count(n) {
    CUDA_CHECK(cudaMalloc(&ptr, std::max<std::size_t>(n, 1) * sizeof(T)));
  }
  ~device_buffer() { cudaFree(ptr); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : ptr(o.ptr), count(o.count) { o.ptr = nullptr; }
  void upload(const std::vector<T>& h) {
    if (h.size() != count) throw std::runtime_error("upload: size mismatch");
    CUDA_CHECK(cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download(std::size_t n = 0, std::size_t from = 0) const {
    std::vector<T> h(n ? n : count - from);
    CUDA_CHECK(cudaMemcpy(h.data(), ptr + from, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  double bytes() const { return double(count) * sizeof(T); }
};

template <typename T>
device_buffer<T> to_device(const std::vector<T>& h) {
  device_buffer<T> d(h.size());
  d.upload(h);
  return d;
}

device_buffer<float> poisoned(std::size_t n) {
  device_buffer<float> d(n);
  CUDA_CHECK(fill_nan_f32(d.ptr, static_cast<long>(d.count), nullptr));
  return d;
}

/// Times of `repeats` launches (after `warmup`), each between its own pair of CUDA events.
struct timing {
  std::vector<double> seconds;  // sorted
  double median() const { return seconds[seconds.size() / 2]; }
  double quantile(double f) const {
    return seconds[static_cast<std::size_t>(f * double(seconds.size() - 1) + 0.5)];
  }
  ordered_json json() const {
    return {{"repeats", seconds.size()},       {"median_us", median() * 1e6},
            {"min_us", seconds.front() * 1e6}, {"p10_us", quantile(0.1) * 1e6},
            {"p90_us", quantile(0.9) * 1e6},   {"max_us", seconds.back() * 1e6}};
  }
};

timing time_launches(const std::function<void(int)>& launch, int repeats, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) launch(i);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(repeats));
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(ev[2 * i]));
    launch(warmup + i);
    CUDA_CHECK(cudaEventRecord(ev[2 * i + 1]));
  }
  CUDA_CHECK(cudaEventSynchronize(ev.back()));
  timing t;
  for (int i = 0; i < repeats; ++i) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    t.seconds.push_back(ms * 1e-3);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.seconds.begin(), t.seconds.end());
  return t;
}

/// The cuBLAS status as an exception, so a failing GEMM is a failing row.
void blas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

struct blas_handle {
  cublasHandle_t h = nullptr;
  blas_handle() { blas_check(cublasCreate(&h), "cublasCreate"); }
  ~blas_handle() { cublasDestroy(h); }
};

/// Clocks, temperature and power from nvidia-smi (no link dependency on NVML).
ordered_json clocks_row(const std::string& when) {
  ordered_json row = {{"row", "clocks"}, {"when", when}};
  FILE* f = popen(
      "nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw "
      "--format=csv,noheader,nounits 2>&1",
      "r");
  if (!f) return row.update({{"error", "nvidia-smi could not be started"}}), row;
  char buf[512] = {};
  std::string text;
  while (fgets(buf, sizeof buf, f)) text += buf;
  int status = pclose(f);
  if (status != 0 || text.empty()) return row.update({{"error", "nvidia-smi: " + text}}), row;
  row["nvidia_smi"] = text.substr(0, text.find('\n'));
  row["fields"] = "sm_mhz, mem_mhz, max_sm_mhz, temperature_c, power_w";
  return row;
}

class runner {
 public:
  runner(const ordered_json& plan, calc_cuda_emit_fn emit_fn, void* ctx)
      : plan_(plan), emit_(emit_fn), ctx_(ctx), seed_(plan.value("seed", std::uint64_t(2026))) {}

  /// false when a sticky CUDA error stopped the run.
  bool run() {
    device_facts();
    emit(clocks_row("before"));
    const bool correctness_only = plan_.value("correctness_only", false);
    if (!correctness_only) guarded("ceilings", [&] { ceilings(); });
    for (const ordered_json& c : plan_.at("cases")) {
      if (stopped_) break;
      const std::string role = c.at("role");
      if (role == "timed" && correctness_only) continue;
      guarded(c.at("id"), [&] { role == "timed" ? timed(c) : check(c); });
    }
    if (!stopped_) emit(clocks_row("after"));
    return !stopped_;
  }

 private:
  void emit(const ordered_json& row) { emit_(ctx_, row.dump().c_str()); }

  /// Runs one row's work; an exception becomes the row's error. A sticky CUDA error (the
  /// context is lost) stops the run after recording it.
  void guarded(const std::string& id, const std::function<void()>& body) {
    try {
      body();
    } catch (const std::exception& e) {
      cudaError_t last = cudaDeviceSynchronize();
      bool sticky = last != cudaSuccess && cudaGetLastError() != cudaSuccess &&
                    cudaDeviceSynchronize() != cudaSuccess;
      emit({{"row", "error"},
            {"id", id},
            {"error", e.what()},
            {"verdict", "FAIL"},
            {"sticky", sticky}});
      if (sticky) stopped_ = true;
    }
  }

  void device_facts() {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    l2_bytes_ = prop.l2CacheSize;
    // CUDA-core FP32 peak: 128 FP32 lanes per SM on sm_90, an FMA (2 FLOPs) per lane per clock
    // at the maximum SM clock. Kernels that multiply on CUDA cores are held to this ceiling, not
    // the tensor-core rate (which is 15x higher on an H200).
    fp32_peak_ = double(prop.multiProcessorCount) * 128 * 2 * clock_khz * 1e3;
    emit({{"row", "device"},
          {"name", prop.name},
          {"sms", prop.multiProcessorCount},
          {"l2_bytes", prop.l2CacheSize},
          {"memory_bytes", prop.totalGlobalMem},
          {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
          {"max_sm_clock_mhz", clock_khz / 1000},
          {"fp32_cuda_core_tflop_s", fp32_peak_ / 1e12},
          {"catalogue", plan_.value("catalogue", ordered_json::object())}});
  }

  void ceilings() {
    const int repeats = plan_.value("repeats", 20);
    // 4 GiB each way: 70x the H200's L2, so every repeat reads from HBM.
    const std::size_t n = std::size_t(1) << 30;
    device_buffer<float> a(n), b(n), partials{std::size_t(read_probe_blocks())};
    CUDA_CHECK(fill_uniform_f32(a.ptr, long(n), seed_, -1, 1, nullptr));
    timing copy = time_launches(
        [&](int) {
          CUDA_CHECK(cudaMemcpyAsync(b.ptr, a.ptr, a.bytes(), cudaMemcpyDeviceToDevice));
        },
        repeats);
    copy_bw_ = 2 * a.bytes() / copy.median();  // read + write
    emit({{"row", "ceiling"},
          {"name", "device-to-device copy"},
          {"bytes", 2 * a.bytes()},
          {"gb_s", copy_bw_ / 1e9},
          {"timing", copy.json()}});
    timing read = time_launches(
        [&](int i) {
          const float* src = (i % 2 ? b : a).ptr;  // alternate buffers: nothing stays in L2
          CUDA_CHECK(read_probe(src, long(n), partials.ptr, nullptr));
        },
        repeats);
    read_bw_ = a.bytes() / read.median();
    emit({{"row", "ceiling"},
          {"name", "read-only reduction (16-byte loads, x4 unrolled)"},
          {"bytes", a.bytes()},
          {"gb_s", read_bw_ / 1e9},
          {"timing", read.json()}});
    // A large BF16 GEMM through cuBLAS on random inputs (zeros run faster), status checked.
    const int m = 8192;
    device_buffer<bf16_bits> x(std::size_t(m) * m), y(std::size_t(m) * m), z(std::size_t(m) * m);
    CUDA_CHECK(fill_uniform_bf16(x.ptr, long(x.count), seed_ + 1, -1, 1, nullptr));
    CUDA_CHECK(fill_uniform_bf16(y.ptr, long(y.count), seed_ + 2, -1, 1, nullptr));
    blas_handle h;
    float one = 1, zero = 0;
    timing gemm = time_launches(
        [&](int) {
          blas_check(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, x.ptr, CUDA_R_16BF,
                                  m, y.ptr, CUDA_R_16BF, m, &zero, z.ptr, CUDA_R_16BF, m,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "GEMM 8192^3");
        },
        repeats);
    gemm_flops_ = 2.0 * m * double(m) * m / gemm.median();
    emit({{"row", "ceiling"},
          {"name", "cuBLAS BF16 GEMM 8192^3 (random inputs)"},
          {"flops", 2.0 * m * double(m) * m},
          {"tflop_s", gemm_flops_ / 1e12},
          {"timing", gemm.json()}});
  }

  /// Case inputs on the device, by name.
  struct device_case {
    std::map<std::string, device_buffer<bf16_bits>> bf16;
    std::map<std::string, device_buffer<float>> f32;
    std::map<std::string, device_buffer<int>> i32;
    explicit device_case(const case_data& c) {
      for (const auto& [k, v] : c.bf16) bf16.emplace(k, to_device(v));
      for (const auto& [k, v] : c.f32) f32.emplace(k, to_device(v));
      for (const auto& [k, v] : c.i32) i32.emplace(k, to_device(v));
    }
  };

  /// Launches a case's kernel(s) on uploaded inputs; returns the outputs in `reference` order.
  std::vector<std::vector<float>> launch_case(const case_data& c, device_case& d) {
    const case_shape& s = c.shape;
    auto out_size = [&](const std::string& n) {
      for (const checked_output& r : c.reference)
        if (r.name == n) return r.values.size();
      throw std::runtime_error("no output " + n);
    };
    if (s.kernel == "gqa_decode" || s.kernel == "gqa_decode_paged") {
      gqa_decode_params p = c.gqa;
      if (p.page_tokens) p.page_table = d.i32.at("page_table").ptr;
      auto out = poisoned(out_size("out"));
      auto scratch = poisoned(std::size_t(gqa_scratch_floats(p)));
      CUDA_CHECK(gqa_decode(d.bf16.at("q").ptr, d.bf16.at("k").ptr, d.bf16.at("v").ptr, out.ptr,
                            scratch.ptr, p, nullptr));
      return {out.download()};
    }
    if (s.kernel == "mla_decode") {
      auto out = poisoned(out_size("out"));
      auto scratch = poisoned(std::size_t(mla_scratch_floats(c.mla)));
      CUDA_CHECK(mla_decode(d.bf16.at("q").ptr, d.bf16.at("cache").ptr, out.ptr, scratch.ptr, c.mla,
                            nullptr));
      return {out.download()};
    }
    if (s.kernel == "delta_step" || s.kernel == "delta_chunk_then_step") {
      std::vector<std::vector<float>> outs;
      float* state = d.f32.at("state").ptr;
      if (s.kernel == "delta_chunk_then_step") {
        auto cout = poisoned(out_size("prefill_out"));
        const long C = c.chunk.chunk;
        device_buffer<float> scratch(std::size_t(c.chunk.heads * C * (2 * C + 2 * s.dk + s.dv)));
        CUDA_CHECK(delta_chunk(d.f32.at("cq").ptr, d.f32.at("ck").ptr, d.f32.at("cv").ptr,
                               d.f32.at("clog_decay").ptr, d.f32.at("cbeta").ptr, state, cout.ptr,
                               scratch.ptr, c.chunk, nullptr));
        outs.push_back(cout.download());
        outs.push_back(d.f32.at("state").download());  // the state the step consumes
      }
      auto out = poisoned(out_size("out"));
      CUDA_CHECK(delta_step(d.f32.at("q").ptr, d.f32.at("k").ptr, d.f32.at("v").ptr,
                            d.f32.at("log_decay").ptr, d.f32.at("beta").ptr, state, out.ptr,
                            c.delta, nullptr));
      outs.push_back(out.download());
      outs.push_back(d.f32.at("state").download());
      return outs;
    }
    if (s.kernel == "sparse_decode") {
      auto out = poisoned(out_size("out"));
      auto scratch = poisoned(std::size_t(sparse_scratch_floats(c.sparse)));
      CUDA_CHECK(sparse_decode(d.bf16.at("q").ptr, d.bf16.at("window").ptr,
                               d.bf16.at("entries").ptr, d.i32.at("selected").ptr, out.ptr,
                               scratch.ptr, c.sparse, nullptr));
      return {out.download()};
    }
    if (s.kernel == "moe_gemm") {
      auto y = poisoned(out_size("y"));
      moe_gemm_params p = c.moe;
      p.offsets = d.i32.at("offsets").ptr;
      device_buffer<const void*> ptrs(std::size_t(moe_pointer_count(p)));
      blas_handle h;
      CUDA_CHECK(moe_gemm(d.bf16.at("x").ptr, d.bf16.at("w").ptr, y.ptr, c.i32.at("offsets").data(),
                          p, ptrs.ptr, h.h, nullptr));
      return {y.download()};
    }
    throw std::runtime_error("unknown kernel " + s.kernel);
  }

  /// Compares each output with the plain twin's; the row passes when all do.
  ordered_json compare_all(const case_data& c, const std::vector<std::vector<float>>& got) {
    ordered_json outs = ordered_json::array();
    bool pass = got.size() == c.reference.size();
    for (std::size_t i = 0; i < c.reference.size() && i < got.size(); ++i) {
      comparison r = compare_outputs(got[i], c.reference[i]);
      pass = pass && r.pass;
      outs.push_back({{"output", c.reference[i].name},
                      {"max_abs_error", r.max_abs_error},
                      {"max_sigmas", r.max_sigmas},
                      {"sigmas_allowed", kSigmas},
                      {"nmse", r.nmse},
                      {"nmse_max", c.reference[i].nmse_max},
                      {"out_of_tolerance", r.out_of_tolerance},
                      {"non_finite", r.non_finite},
                      {"unit", c.reference[i].unit},
                      {"tolerance_from", c.reference[i].why},
                      {"verdict", r.pass ? "pass" : "FAIL"}});
    }
    return {{"outputs", outs}, {"verdict", pass ? "pass" : "FAIL"}};
  }

  void check(const ordered_json& j) {
    case_data c =
        make_case(gpu::shape_of(j.at("shape")), seed_ ^ std::hash<std::string>{}(j.at("id")));
    device_case d(c);
    ordered_json row = {{"row", "check"},
                        {"id", j.at("id")},
                        {"kernel", j.at("shape").at("kernel")},
                        {"shape", j.at("shape")},
                        {"gpu", "ran"}};
    row.update(compare_all(c, launch_case(c, d)));
    emit(row);
  }

  /// A timed case: its inputs filled on the device over enough copies that they span at least
  /// 3x the L2; one launch checked (request 0 against the plain twin); then the timed repeats.
  void timed(const ordered_json& j);

  /// A timed row: the shape, the tally's predicted bytes beside the kernel's own traffic (both
  /// priced by the plan with the same byte rule), the median time and its spread, and the
  /// roofline of the tally's bytes and FLOPs on the unit the kernel multiplies on. A kernel
  /// under 70 % of that roofline is a slow kernel, never a calculator error.
  void emit_timed(const ordered_json& j, const timing& t, int copies) {
    const ordered_json& pred = j.at("predicted");
    const ordered_json& kb = j.at("kernel_bytes");
    const double secs = t.median();
    const double moved = kb.value("state", 0.0) + kb.value("scratch", 0.0) +
                         kb.value("activation", 0.0);  // everything the kernel moves
    const std::string unit = pred.value("unit", "cuda_core_fp32");
    const double peak =
        unit == "tensor_core_bf16"
            ? plan_.value("catalogue", ordered_json::object()).value("bf16_flops", 0.0)
            : fp32_peak_;
    const double pbytes = pred.value("bytes", 0.0), pflops = pred.value("flops", 0.0);
    const double roof =
        std::max(read_bw_ > 0 ? pbytes / read_bw_ : 0.0, peak > 0 ? pflops / peak : 0.0);
    const double fraction = roof > 0 ? roof / secs : 0.0;
    emit({{"row", "timed"},
          {"id", j.at("id")},
          {"kernel", j.at("shape").at("kernel")},
          {"shape", j.at("shape")},
          {"source", j.value("source", "")},
          {"copies", copies},
          {"timing", t.json()},
          {"predicted_bytes", pred.value("bytes", ordered_json())},
          {"kernel_state_bytes", kb.value("state", 0.0)},
          {"kernel_scratch_bytes", kb.value("scratch", 0.0)},
          {"kernel_bytes", moved},
          {"predicted_flops", pred.value("flops", ordered_json())},
          {"unit", unit},
          {"unit_peak_tflop_s", peak / 1e12},
          {"achieved_gb_s", moved / secs / 1e9},
          {"predicted_gb_s", pbytes / secs / 1e9},
          {"achieved_tflop_s", pflops / secs / 1e12},
          {"roofline_us", roof * 1e6},
          {"fraction_of_roofline", fraction},
          {"verdict", fraction >= 0.7 ? "at roofline" : fmt_slow(fraction)}});
  }

  static std::string fmt_slow(double fraction) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "slow kernel (%.0f%% of roofline)", fraction * 100);
    return buf;
  }

  const ordered_json& plan_;
  calc_cuda_emit_fn emit_;
  void* ctx_;
  std::uint64_t seed_;
  bool stopped_ = false;
  long l2_bytes_ = 0;
  double fp32_peak_ = 0, read_bw_ = 0, copy_bw_ = 0, gemm_flops_ = 0;
};

/// Heads of an MLA timed shape checked on the CPU (request 0).
constexpr int kMlaCheckHeads = 8;

/// Copies of a footprint so the rotation spans >= 3x the L2 (at most 64 copies).
int copies_for(double footprint, long l2) {
  double want = 3.0 * double(l2);
  int n = footprint >= want ? 1 : static_cast<int>(std::ceil(want / footprint));
  return std::min(n, 64);
}

void runner::timed(const ordered_json& j) {
  const case_shape s = gpu::shape_of(j.at("shape"));
  const int repeats = std::max(20, plan_.value("repeats", 20));
  std::uint64_t seed = seed_ ^ std::hash<std::string>{}(j.at("id"));
  std::function<void(int)> launch;
  ordered_json check_row;
  // Per kernel: device inputs (copies), a launch on copy i, and request 0 of copy 0 checked.
  std::vector<device_buffer<bf16_bits>> hb;  // BF16 tensors, copies in a row
  std::vector<device_buffer<float>> hf;
  std::vector<device_buffer<int>> hi;
  auto bf = [&](long n, int copies, float lo, float hi_) {
    hb.emplace_back(std::size_t(n) * copies);
    CUDA_CHECK(fill_uniform_bf16(hb.back().ptr, n * copies, seed + hb.size(), lo, hi_, nullptr));
    return hb.size() - 1;
  };
  auto f32 = [&](long n, int copies, float lo, float hi_) {
    hf.emplace_back(std::size_t(n) * copies);
    CUDA_CHECK(
        fill_uniform_f32(hf.back().ptr, n * copies, seed + 100 + hf.size(), lo, hi_, nullptr));
    return hf.size() - 1;
  };
  auto check_request0 = [&](case_data& c, const std::vector<std::vector<float>>& got) {
    ordered_json r = compare_all(c, got);
    check_row = {{"row", "check"},
                 {"id", std::string(j.at("id")) + " (request 0 of the timed shape)"},
                 {"kernel", s.kernel},
                 {"shape", j.at("shape")},
                 {"gpu", "ran"}};
    check_row.update(r);
  };
  if (s.kernel == "gqa_decode") {
    gqa_decode_params p{
        s.batch,    s.q_heads, s.kv_heads,
        s.head_dim, s.length,  0,
        0,          nullptr,   split_tokens_for(s.batch, s.kv_heads, s.length, s.split_blocks)};
    const long qn = long(s.batch) * s.q_heads * s.head_dim,
               kvn = long(s.batch) * s.length * s.kv_heads * s.head_dim;
    const int copies = copies_for(2.0 * kvn * 2, l2_bytes_);
    auto q = bf(qn, copies, -1, 1), k = bf(kvn, copies, -1, 1), v = bf(kvn, copies, -1, 1);
    auto out = poisoned(std::size_t(qn));
    device_buffer<float> scratch(std::size_t(gqa_scratch_floats(p)));
    launch = [&, p, q, k, v, qn, kvn, copies](int i) {
      long c = i % copies;
      CUDA_CHECK(gqa_decode(hb[q].ptr + c * qn, hb[k].ptr + c * kvn, hb[v].ptr + c * kvn, out.ptr,
                            scratch.ptr, p, nullptr));
    };
    launch(0);
    case_data c;
    c.shape = s;
    c.gqa = p;
    c.gqa.batch = 1;
    const long q0 = long(s.q_heads) * s.head_dim, kv0 = long(s.length) * s.kv_heads * s.head_dim;
    auto hq = hb[q].download(q0), hk = hb[k].download(kv0), hv = hb[v].download(kv0);
    c.reference.push_back(gqa_reference(hq.data(), hk.data(), hv.data(), c.gqa));
    check_request0(c, {out.download(q0)});
    emit(check_row);
    timing t = time_launches(launch, repeats);
    emit_timed(j, t, copies);
  } else if (s.kernel == "mla_decode") {
    mla_decode_params p{s.batch, s.heads, s.rank, s.rope, s.length};
    const int w = s.rank + s.rope;
    const long qn = long(s.batch) * s.heads * w, cn = long(s.batch) * s.length * w;
    const int copies = copies_for(2.0 * cn, l2_bytes_);
    auto q = bf(qn, copies, -1, 1), cc = bf(cn, copies, -1, 1);
    auto out = poisoned(std::size_t(s.batch) * s.heads * s.rank);
    device_buffer<float> scratch(std::size_t(mla_scratch_floats(p)));
    launch = [&, p, q, cc, qn, cn, copies](int i) {
      long c = i % copies;
      CUDA_CHECK(
          mla_decode(hb[q].ptr + c * qn, hb[cc].ptr + c * cn, out.ptr, scratch.ptr, p, nullptr));
    };
    launch(0);
    // Request 0 on its first kMlaCheckHeads heads: the plain twin is single-threaded, and 96
    // heads over 32K records would cost it half a minute; the heads are independent.
    case_data c;
    c.shape = s;
    c.mla = p;
    c.mla.batch = 1;
    c.mla.heads = std::min(s.heads, kMlaCheckHeads);
    auto hq = hb[q].download(std::size_t(c.mla.heads) * w),
         hc = hb[cc].download(std::size_t(s.length) * w);
    c.reference.push_back(mla_reference(hq.data(), hc.data(), c.mla));
    check_request0(c, {out.download(std::size_t(c.mla.heads) * s.rank)});
    emit(check_row);
    timing t = time_launches(launch, repeats);
    emit_timed(j, t, copies);
  } else if (s.kernel == "delta_step") {
    delta_step_params p{s.batch, s.heads, s.dk, s.dv};
    const long n = long(s.batch) * s.heads, sn = n * s.dk * s.dv;
    const int copies = copies_for(2.0 * sn * 4, l2_bytes_);
    auto q = f32(n * s.dk, copies, -0.3f, 0.3f), k = f32(n * s.dk, copies, -0.3f, 0.3f),
         v = f32(n * s.dv, copies, -1, 1), ld = f32(n * s.dk, copies, -0.1f, 0),
         beta = f32(n, copies, 0, 1), st = f32(sn, copies, -0.5f, 0.5f);
    auto out = poisoned(std::size_t(n) * s.dv);
    launch = [&, p, q, k, v, ld, beta, st, n, sn, copies](int i) {
      long c = i % copies;
      CUDA_CHECK(delta_step(hf[q].ptr + c * n * s.dk, hf[k].ptr + c * n * s.dk,
                            hf[v].ptr + c * n * s.dv, hf[ld].ptr + c * n * s.dk,
                            hf[beta].ptr + c * n, hf[st].ptr + c * sn, out.ptr, p, nullptr));
    };
    // Request 0's inputs and state before the checked launch.
    const std::size_t hk = std::size_t(s.heads) * s.dk, hv = std::size_t(s.heads) * s.dv;
    auto q0 = hf[q].download(hk), k0 = hf[k].download(hk), v0 = hf[v].download(hv),
         l0 = hf[ld].download(hk), b0 = hf[beta].download(std::size_t(s.heads)),
         s0 = hf[st].download(hk * s.dv);
    launch(0);
    case_data c;
    c.shape = s;
    c.delta = p;
    c.delta.batch = 1;
    c.reference =
        delta_step_reference(q0.data(), k0.data(), v0.data(), l0.data(), b0.data(), s0, c.delta);
    check_request0(c, {out.download(hv), hf[st].download(hk * s.dv)});
    emit(check_row);
    timing t = time_launches(launch, repeats);
    emit_timed(j, t, copies);
  } else if (s.kernel == "sparse_decode") {
    sparse_decode_params p{s.batch, s.heads, s.width, s.window, s.n_entries, s.selected};
    const long qn = long(s.batch) * s.heads * s.width, wn = long(s.batch) * s.window * s.width,
               en = long(s.batch) * s.n_entries * s.width;
    // Only the selected entries are read: the rotation is sized by what each launch touches.
    const double touched = double(s.batch) * (s.window + s.selected) * s.width * 2;
    const int copies = copies_for(touched, l2_bytes_);
    auto q = bf(qn, copies, -1, 1), win = bf(wn, copies, -1, 1), ent = bf(en, copies, -1, 1);
    case_data sel = make_case({.kernel = "sparse_decode",
                               .batch = s.batch,
                               .heads = 1,
                               .width = 8,
                               .window = 1,
                               .n_entries = s.n_entries,
                               .selected = s.selected},
                              seed);
    auto dsel = to_device(sel.i32.at("selected"));
    auto out = poisoned(std::size_t(qn));
    device_buffer<float> scratch(std::size_t(sparse_scratch_floats(p)));
    launch = [&, p, q, win, ent, qn, wn, en, copies](int i) {
      long c = i % copies;
      CUDA_CHECK(sparse_decode(hb[q].ptr + c * qn, hb[win].ptr + c * wn, hb[ent].ptr + c * en,
                               dsel.ptr, out.ptr, scratch.ptr, p, nullptr));
    };
    launch(0);
    case_data c;
    c.shape = s;
    c.sparse = p;
    c.sparse.batch = 1;
    auto hq = hb[q].download(std::size_t(s.heads) * s.width),
         hw = hb[win].download(std::size_t(s.window) * s.width),
         he = hb[ent].download(std::size_t(s.n_entries) * s.width);
    c.reference.push_back(
        sparse_reference(hq.data(), hw.data(), he.data(), sel.i32.at("selected").data(), c.sparse));
    check_request0(c, {out.download(std::size_t(s.heads) * s.width)});
    emit(check_row);
    timing t = time_launches(launch, repeats);
    emit_timed(j, t, copies);
  } else if (s.kernel == "moe_gemm") {
    std::vector<int> offsets = disjoint_routing(s.batch, s.top_k, s.experts);
    const int rows = offsets.back();
    const long wn = long(s.experts) * s.in * s.out;
    const int copies = copies_for(double(std::min(rows, s.experts)) * s.in * s.out * 2, l2_bytes_);
    auto x = bf(long(rows) * s.in, 1, -1, 1), w = bf(wn, copies, -1, 1);
    auto doff = to_device(offsets);
    auto y = poisoned(std::size_t(rows) * s.out);
    moe_gemm_params p{s.experts, s.in, s.out, doff.ptr};
    device_buffer<const void*> ptrs(std::size_t(moe_pointer_count(p)));
    blas_handle h;
    launch = [&, p, x, w, wn, copies](int i) {
      CUDA_CHECK(moe_gemm(hb[x].ptr, hb[w].ptr + long(i % copies) * wn, y.ptr, offsets.data(), p,
                          ptrs.ptr, h.h, nullptr));
    };
    launch(0);
    // The first expert's rows (copy 0) against the plain twin.
    int e0 = 0;
    while (offsets[std::size_t(e0) + 1] == offsets[std::size_t(e0)]) ++e0;
    const int r0 = offsets[std::size_t(e0)], n0 = offsets[std::size_t(e0) + 1] - r0;
    auto hx = hb[x].download(std::size_t(n0) * s.in, std::size_t(r0) * s.in);
    auto hw = hb[w].download(std::size_t(s.in) * s.out, std::size_t(e0) * s.in * s.out);
    std::vector<int> off1 = {0, n0};
    case_data c;
    c.shape = s;
    c.reference.push_back(
        moe_reference(hx.data(), hw.data(), moe_gemm_params{1, s.in, s.out, off1.data()}));
    check_request0(c, {y.download(std::size_t(n0) * s.out, std::size_t(r0) * s.out)});
    emit(check_row);
    timing t = time_launches(launch, repeats);
    emit_timed(j, t, copies);
  } else {
    throw std::runtime_error("no timed form for kernel " + s.kernel);
  }
}

}  // namespace

}  // namespace calc::gpu

extern "C" {

__attribute__((visibility("default"))) int calc_cuda_abi_version(void) {
  return CALC_CUDA_ABI_VERSION;
}

__attribute__((visibility("default"))) int calc_cuda_probe(char* why, std::size_t size) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  std::string reason;
  if (e != cudaSuccess)
    reason = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  else if (n == 0)
    reason = "no CUDA device on this machine";
  if (reason.empty()) return 0;
  std::snprintf(why, size, "%s", reason.c_str());
  return 1;
}

__attribute__((visibility("default"))) int calc_cuda_run(const char* plan_json,
                                                         calc_cuda_emit_fn emit, void* context) {
  try {
    nlohmann::ordered_json plan = nlohmann::ordered_json::parse(plan_json);
    calc::gpu::runner r(plan, emit, context);
    return r.run() ? 0 : 1;
  } catch (const std::exception& e) {
    nlohmann::ordered_json row = {{"row", "error"},
                                  {"id", "run"},
                                  {"error", e.what()},
                                  {"verdict", "FAIL"},
                                  {"sticky", true}};
    emit(context, row.dump().c_str());
    return 1;
  }
}
}
