// The CUDA side of `calc validate --device cuda`: device facts, measured ceilings, each kernel
// of kernels/cuda/ against its CPU twin, and a timed sweep whose achieved bandwidth and FLOP/s
// come from the analytical bytes and FLOPs of each call. Built only where nvcc exists.
#ifdef CALC_WITH_CUDA

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "decode_ref.h"
#include "exec/gpu.h"
#include "launchers.h"

namespace calc::gpu {

using nlohmann::ordered_json;
using namespace calc::kernels;

std::string unavailable_reason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device on this machine";
  return "";
}

namespace {

/// A device buffer freed on scope exit.
template <typename T>
struct device_buffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit device_buffer(std::size_t n) : count(n) { CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T))); }
  ~device_buffer() { cudaFree(ptr); }
  device_buffer(const device_buffer&) = delete;
  void upload(const std::vector<T>& h) {
    CUDA_CHECK(cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(count);
    CUDA_CHECK(cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<bf16_bits> random_bf16(std::mt19937_64& rng, std::size_t n, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<bf16_bits> v(n);
  for (auto& x : v) x = float_to_bf16(u(rng));
  return v;
}

std::vector<float> random_f32(std::mt19937_64& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

/// Per element |got - ref| <= atol + |ref| * eps(bf16); NMSE for the whole tensor; non-finite
/// values counted apart. The inputs are BF16 and both sides accumulate in FP32, so differences
/// are FP32 reassociation only: eps(bf16) = 2^-8 leaves ample margin and still catches an index
/// or softmax error, which moves outputs by O(1).
ordered_json compare(const std::string& name, const std::vector<float>& got,
                     const std::vector<float>& ref, double atol) {
  const double eps = 1.0 / 256;
  double num = 0, den = 0, worst = 0;
  long bad = 0, nonfinite = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) {
      ++nonfinite;
      continue;
    }
    double d = std::fabs(double(got[i]) - ref[i]);
    worst = std::max(worst, d);
    if (d > atol + std::fabs(ref[i]) * eps) ++bad;
    num += d * d;
    den += double(ref[i]) * ref[i];
  }
  double nmse = den > 0 ? num / den : num;
  bool pass = bad == 0 && nonfinite == 0 && nmse < 1e-6;
  return {{"kernel", name},
          {"max_abs_error", worst},
          {"nmse", nmse},
          {"elements_out_of_tolerance", bad},
          {"non_finite", nonfinite},
          {"verdict", pass ? "pass" : "FAIL"}};
}

/// Median time of `launch` in seconds: warm-up, then CUDA events around each repeat.
double time_median(const std::function<void(int)>& launch, int repeats = 20) {
  for (int i = 0; i < 3; ++i) launch(i);
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(a));
    launch(i);
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct ceilings {
  double copy_bw = 0, read_bw = 0, gemm_flops = 0;
};

ceilings measure_ceilings(ordered_json& out) {
  ceilings c;
  const std::size_t n = std::size_t(1) << 30;  // 4 GiB of floats, far past any L2
  device_buffer<float> a(n / 4), b(n / 4);
  CUDA_CHECK(cudaMemset(a.ptr, 0, a.count * sizeof(float)));
  double t = time_median([&](int) {
    CUDA_CHECK(cudaMemcpyAsync(b.ptr, a.ptr, a.count * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  c.copy_bw = 2.0 * a.count * sizeof(float) / t;  // read + write
  device_buffer<float> sum(1);
  t = time_median(
      [&](int) { CUDA_CHECK(read_probe(a.ptr, static_cast<long>(a.count), sum.ptr, nullptr)); });
  c.read_bw = double(a.count) * sizeof(float) / t;
  // A large BF16 GEMM through cuBLAS (FP32 accumulation).
  const int m = 8192;
  device_buffer<bf16_bits> x(std::size_t(m) * m), y(std::size_t(m) * m), z(std::size_t(m) * m);
  cublasHandle_t h;
  if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
    float one = 1, zero = 0;
    t = time_median([&](int) {
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, x.ptr, CUDA_R_16BF, m, y.ptr,
                   CUDA_R_16BF, m, &zero, z.ptr, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    });
    c.gemm_flops = 2.0 * m * double(m) * m / t;
    cublasDestroy(h);
  }
  out = {{"device_copy_gb_s", c.copy_bw / 1e9},
         {"read_only_gb_s", c.read_bw / 1e9},
         {"bf16_gemm_8192_tflop_s", c.gemm_flops / 1e12}};
  return c;
}

ordered_json correctness(std::mt19937_64& rng) {
  ordered_json rows = ordered_json::array();
  {  // GQA decode, contiguous and paged
    gqa_decode_params p{2, 8, 2, 64, 300, 0, 0, nullptr};
    auto q = random_bf16(rng, 2 * 8 * 64), k = random_bf16(rng, 2L * 300 * 2 * 64),
         v = random_bf16(rng, 2L * 300 * 2 * 64);
    std::vector<float> ref(2 * 8 * 64);
    gqa_decode_ref(q.data(), k.data(), v.data(), ref.data(), p);
    device_buffer<bf16_bits> dq(q.size()), dk(k.size()), dv(v.size());
    device_buffer<float> out(ref.size()), scratch(2 * 8 * 300);
    dq.upload(q);
    dk.upload(k);
    dv.upload(v);
    CUDA_CHECK(gqa_decode(dq.ptr, dk.ptr, dv.ptr, out.ptr, scratch.ptr, p, nullptr));
    rows.push_back(compare("gqa_decode contiguous", out.download(), ref, 1e-5));
    // Paged: the same tokens scattered over pages of 16 in a shuffled order.
    int pages = (300 + 15) / 16;
    std::vector<int> table(2 * pages);
    for (int i = 0; i < 2 * pages; ++i) table[i] = (i * 7) % (2 * pages);
    std::vector<bf16_bits> pk(std::size_t(2 * pages) * 16 * 2 * 64, 0), pv(pk.size(), 0);
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 300; ++t)
        for (int e = 0; e < 2 * 64; ++e) {
          std::size_t from = (std::size_t(b) * 300 + t) * 128 + e;
          std::size_t to = (std::size_t(table[b * pages + t / 16]) * 16 + t % 16) * 128 + e;
          pk[to] = k[from];
          pv[to] = v[from];
        }
    device_buffer<bf16_bits> dpk(pk.size()), dpv(pv.size());
    device_buffer<int> dtable(table.size());
    dpk.upload(pk);
    dpv.upload(pv);
    dtable.upload(table);
    gqa_decode_params pp{2, 8, 2, 64, 300, 16, pages, dtable.ptr};
    CUDA_CHECK(gqa_decode(dq.ptr, dpk.ptr, dpv.ptr, out.ptr, scratch.ptr, pp, nullptr));
    rows.push_back(compare("gqa_decode paged", out.download(), ref, 1e-5));
  }
  {  // MLA compact decode
    mla_decode_params p{2, 4, 64, 16, 200};
    auto q = random_bf16(rng, 2 * 4 * 80), c = random_bf16(rng, 2L * 200 * 80);
    std::vector<float> ref(2 * 4 * 64);
    mla_decode_ref(q.data(), c.data(), ref.data(), p);
    device_buffer<bf16_bits> dq(q.size()), dc(c.size());
    device_buffer<float> out(ref.size()), scratch(2 * 4 * 200);
    dq.upload(q);
    dc.upload(c);
    CUDA_CHECK(mla_decode(dq.ptr, dc.ptr, out.ptr, scratch.ptr, p, nullptr));
    rows.push_back(compare("mla_decode compact", out.download(), ref, 1e-5));
  }
  {  // KDA/GDN recurrent step and chunked prefill
    const int B = 3, H = 4, dk = 32, dv = 24, T = 150;
    delta_step_params p{B, H, dk, dv};
    auto q = random_f32(rng, B * H * dk, -0.3f, 0.3f), k = random_f32(rng, B * H * dk, -0.3f, 0.3f);
    auto v = random_f32(rng, B * H * dv, -1, 1), ld = random_f32(rng, B * H * dk, -0.1f, 0);
    auto beta = random_f32(rng, B * H, 0, 1),
         S = random_f32(rng, std::size_t(B) * H * dk * dv, -0.5f, 0.5f);
    std::vector<float> ref(B * H * dv), Sref = S;
    delta_step_ref(q.data(), k.data(), v.data(), ld.data(), beta.data(), Sref.data(), ref.data(),
                   p);
    device_buffer<float> dq(q.size()), dkk(k.size()), dvv(v.size()), dld(ld.size()),
        db(beta.size()), dS(S.size()), out(ref.size());
    dq.upload(q);
    dkk.upload(k);
    dvv.upload(v);
    dld.upload(ld);
    db.upload(beta);
    dS.upload(S);
    CUDA_CHECK(delta_step(dq.ptr, dkk.ptr, dvv.ptr, dld.ptr, db.ptr, dS.ptr, out.ptr, p, nullptr));
    rows.push_back(compare("delta_step (KDA/GDN decode)", out.download(), ref, 1e-5));
    rows.push_back(compare("delta_step state", dS.download(), Sref, 1e-5));
    delta_chunk_params cp{H, T, dk, dv, 64};
    auto cq = random_f32(rng, std::size_t(H) * T * dk, -0.2f, 0.2f),
         ck = random_f32(rng, std::size_t(H) * T * dk, -0.2f, 0.2f);
    auto cv = random_f32(rng, std::size_t(H) * T * dv, -1, 1),
         cl = random_f32(rng, std::size_t(H) * T * dk, -0.05f, 0);
    auto cb = random_f32(rng, std::size_t(H) * T, 0, 1);
    std::vector<float> cS(std::size_t(H) * dk * dv, 0.0f), cref(std::size_t(H) * T * dv),
        cSref = cS;
    delta_chunk_ref(cq.data(), ck.data(), cv.data(), cl.data(), cb.data(), cSref.data(),
                    cref.data(), cp);
    device_buffer<float> a(cq.size()), b(ck.size()), c(cv.size()), d(cl.size()), e(cb.size()),
        s(cS.size()), o(cref.size()), scratch(std::size_t(H) * 64 * (2 * 64 + 2 * dk + dv));
    a.upload(cq);
    b.upload(ck);
    c.upload(cv);
    d.upload(cl);
    e.upload(cb);
    s.upload(cS);
    CUDA_CHECK(
        delta_chunk(a.ptr, b.ptr, c.ptr, d.ptr, e.ptr, s.ptr, o.ptr, scratch.ptr, cp, nullptr));
    // Chunked vs recurrent reassociates FP32 sums through exp(G_i - G_j): looser absolute bound.
    rows.push_back(
        compare("delta_chunk (chunked prefill) vs recurrence", o.download(), cref, 1e-4));
  }
  {  // SWA + CSA sparse gather decode
    sparse_decode_params p{2, 4, 64, 128, 300, 32};
    auto q = random_bf16(rng, 2 * 4 * 64), w = random_bf16(rng, 2L * 128 * 64),
         en = random_bf16(rng, 2L * 300 * 64);
    std::vector<int> sel(2 * 32);
    for (int i = 0; i < 64; ++i) sel[i] = (i * 37) % 300;
    std::vector<float> ref(2 * 4 * 64);
    sparse_decode_ref(q.data(), w.data(), en.data(), sel.data(), ref.data(), p);
    device_buffer<bf16_bits> dq(q.size()), dw(w.size()), de(en.size());
    device_buffer<int> ds(sel.size());
    device_buffer<float> out(ref.size()), scratch(2 * 4 * 160);
    dq.upload(q);
    dw.upload(w);
    de.upload(en);
    ds.upload(sel);
    CUDA_CHECK(sparse_decode(dq.ptr, dw.ptr, de.ptr, ds.ptr, out.ptr, scratch.ptr, p, nullptr));
    rows.push_back(compare("sparse_decode (SWA + CSA)", out.download(), ref, 1e-5));
  }
  {  // MoE grouped GEMM
    const int E = 6, in = 128, outw = 96;
    std::vector<int> offsets = {0, 3, 3, 7, 8, 12, 16};
    auto x = random_bf16(rng, 16 * in), w = random_bf16(rng, std::size_t(E) * in * outw);
    std::vector<float> ref(16 * outw);
    moe_gemm_params hp{E, in, outw, offsets.data()};
    moe_gemm_ref(x.data(), w.data(), ref.data(), hp);
    device_buffer<bf16_bits> dx(x.size()), dw(w.size());
    device_buffer<int> doff(offsets.size());
    device_buffer<float> y(ref.size());
    dx.upload(x);
    dw.upload(w);
    doff.upload(offsets);
    moe_gemm_params dp{E, in, outw, doff.ptr};
    CUDA_CHECK(moe_gemm(dx.ptr, dw.ptr, y.ptr, 16, dp, nullptr));
    rows.push_back(compare("moe_gemm (grouped, decode rows)", y.download(), ref, 1e-5));
  }
  return rows;
}

/// One timed call: analytical bytes and FLOPs, measured time, and what they imply.
ordered_json timed(const std::string& kernel, const std::string& shape, double bytes, double flops,
                   double seconds, const ceilings& c) {
  double bw = bytes / seconds;
  return {{"kernel", kernel},
          {"shape", shape},
          {"bytes", bytes},
          {"flops", flops},
          {"time_us", seconds * 1e6},
          {"achieved_gb_s", bw / 1e9},
          {"fraction_of_read_ceiling", bw / c.read_bw},
          {"achieved_tflop_s", flops / seconds / 1e12},
          {"roofline_us",
           std::max(bytes / c.read_bw, c.gemm_flops > 0 ? flops / c.gemm_flops : 0.0) * 1e6}};
}

ordered_json sweep(std::mt19937_64& rng, const ceilings& c) {
  ordered_json rows = ordered_json::array();
  // GQA decode over >= 256 MB of KV (Qwen3-8B heads: 32 query, 8 KV of 128).
  for (auto [B, L] :
       std::vector<std::pair<int, int>>{{1, 65536}, {8, 16384}, {32, 8192}, {64, 4096}}) {
    gqa_decode_params p{B, 32, 8, 128, L, 0, 0, nullptr};
    std::size_t kv = std::size_t(B) * L * 8 * 128;
    device_buffer<bf16_bits> q(std::size_t(B) * 32 * 128), k(kv), v(kv);
    device_buffer<float> out(std::size_t(B) * 32 * 128), scratch(std::size_t(B) * 32 * L);
    CUDA_CHECK(cudaMemset(k.ptr, 0, kv * 2));
    CUDA_CHECK(cudaMemset(v.ptr, 0, kv * 2));
    double t = time_median([&](int) {
      CUDA_CHECK(gqa_decode(q.ptr, k.ptr, v.ptr, out.ptr, scratch.ptr, p, nullptr));
    });
    double bytes = 2.0 * kv * 2;  // K and V read once: the tally's decode_read
    double flops = 4.0 * 32 * 128 * double(L) * B;
    rows.push_back(timed("gqa_decode", "B=" + std::to_string(B) + " L=" + std::to_string(L), bytes,
                         flops, t, c));
  }
  // MLA compact decode (V3-like: 128 heads over a 512 + 64 latent).
  for (auto [B, L] : std::vector<std::pair<int, int>>{{8, 32768}, {32, 8192}}) {
    mla_decode_params p{B, 128, 512, 64, L};
    std::size_t cache = std::size_t(B) * L * 576;
    device_buffer<bf16_bits> q(std::size_t(B) * 128 * 576), cc(cache);
    device_buffer<float> out(std::size_t(B) * 128 * 512), scratch(std::size_t(B) * 128 * L);
    CUDA_CHECK(cudaMemset(cc.ptr, 0, cache * 2));
    double t = time_median(
        [&](int) { CUDA_CHECK(mla_decode(q.ptr, cc.ptr, out.ptr, scratch.ptr, p, nullptr)); });
    rows.push_back(timed("mla_decode", "B=" + std::to_string(B) + " L=" + std::to_string(L),
                         2.0 * cache, 2.0 * 128 * (576 + 512) * double(L) * B, t, c));
  }
  // KDA/GDN recurrent step: the FP32 state is read and written.
  for (int B : {64, 256}) {
    delta_step_params p{B, 32, 128, 128};
    std::size_t state = std::size_t(B) * 32 * 128 * 128;
    device_buffer<float> q(B * 32 * 128), k(B * 32 * 128), v(B * 32 * 128), ld(B * 32 * 128),
        beta(B * 32), S(state), out(B * 32 * 128);
    CUDA_CHECK(cudaMemset(S.ptr, 0, state * 4));
    CUDA_CHECK(cudaMemset(ld.ptr, 0, ld.count * 4));
    double t = time_median([&](int) {
      CUDA_CHECK(delta_step(q.ptr, k.ptr, v.ptr, ld.ptr, beta.ptr, S.ptr, out.ptr, p, nullptr));
    });
    rows.push_back(timed("delta_step", "B=" + std::to_string(B) + " H=32 128x128", 2.0 * state * 4,
                         6.0 * 128 * 128 * 32 * B, t, c));
  }
  // Sparse decode (V4-like: 64 heads of 512, window 128 + 512 selected).
  for (int B : {64, 256}) {
    sparse_decode_params p{B, 64, 512, 128, 2048, 512};
    device_buffer<bf16_bits> q(std::size_t(B) * 64 * 512), w(std::size_t(B) * 128 * 512),
        en(std::size_t(B) * 2048 * 512);
    std::vector<int> sel(std::size_t(B) * 512);
    for (std::size_t i = 0; i < sel.size(); ++i) sel[i] = int((i * 4) % 2048);
    device_buffer<int> ds(sel.size());
    ds.upload(sel);
    device_buffer<float> out(std::size_t(B) * 64 * 512), scratch(std::size_t(B) * 64 * 640);
    double t = time_median([&](int) {
      CUDA_CHECK(sparse_decode(q.ptr, w.ptr, en.ptr, ds.ptr, out.ptr, scratch.ptr, p, nullptr));
    });
    rows.push_back(timed("sparse_decode", "B=" + std::to_string(B), double(B) * 640 * 512 * 2,
                         4.0 * 64 * 512 * 640 * B, t, c));
  }
  // MoE grouped GEMM at decode rows: 8 experts touched, 2048 x 4096 each (bytes = weights).
  for (int rows_n : {8, 64}) {
    const int E = 8, in = 2048, outw = 4096;
    std::vector<int> offsets(E + 1);
    for (int e = 0; e <= E; ++e) offsets[e] = e * rows_n / E;
    // Rotate over copies of the weights so the L2 does not serve them.
    int copies = 8;
    device_buffer<bf16_bits> x(std::size_t(rows_n) * in), w(std::size_t(copies) * E * in * outw);
    device_buffer<int> doff(offsets.size());
    doff.upload(offsets);
    device_buffer<float> y(std::size_t(rows_n) * outw);
    moe_gemm_params p{E, in, outw, doff.ptr};
    double t = time_median([&](int i) {
      CUDA_CHECK(moe_gemm(x.ptr, w.ptr + std::size_t(i % copies) * E * in * outw, y.ptr, rows_n, p,
                          nullptr));
    });
    rows.push_back(timed("moe_gemm", "rows=" + std::to_string(rows_n), double(E) * in * outw * 2,
                         2.0 * rows_n * in * outw, t, c));
  }
  (void)rng;
  return rows;
}

}  // namespace

nlohmann::ordered_json run_kernel_checks(std::uint64_t seed) {
  ordered_json j;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  j["device"] = {
      {"name", prop.name},
      {"sms", prop.multiProcessorCount},
      {"l2_bytes", prop.l2CacheSize},
      {"memory_bytes", prop.totalGlobalMem},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)}};
  std::mt19937_64 rng(seed);
  ordered_json ceil_json;
  ceilings c = measure_ceilings(ceil_json);
  j["ceilings"] = ceil_json;
  j["correctness"] = correctness(rng);
  j["sweep"] = sweep(rng, c);
  return j;
}

}  // namespace calc::gpu

#endif  // CALC_WITH_CUDA
