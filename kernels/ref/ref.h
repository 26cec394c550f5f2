// CPU twins of the kernels calc's tallies describe (Eigen, float32 with BF16 storage rounding).
//
// Every twin counts the work it actually executes: a GEMM adds 2*m*k*n to the counter it is
// given; attention adds 2*width per query-key dot product and per aggregated value. The reference
// executor (src/exec/) routes these counters to the tally's categories and compares. Twins own
// their state buffers, so measured state is what was allocated. CUDA kernels in kernels/cuda/
// have the same signatures where they exist.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

namespace calc::ref {

using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using vec = Eigen::VectorXf;

/// x[m,k] * w[k,n]; adds 2*m*k*n to *flops when given.
mat gemm(const mat& x, const mat& w, std::int64_t* flops);

/// Rounds to the nearest BF16 value (ties to even), as a kernel storing BF16 would.
float bf16_round(float v);

/// A state buffer in its storage format: measured bytes are element count x element size.
class state_buffer {
 public:
  enum class format { bf16, fp32, int64 };
  explicit state_buffer(format f = format::bf16) : format_(f) {}
  void resize(std::size_t n);
  std::size_t size() const { return size_; }
  float get(std::size_t i) const;
  void set(std::size_t i, float v);
  /// The value as this buffer would store it (rounded to its format).
  float stored(float v) const;
  std::int64_t bytes() const;

 private:
  format format_;
  std::size_t size_ = 0;
  std::vector<std::uint16_t> b16_;
  std::vector<float> f32_;
  std::vector<std::int64_t> i64_;
};

/// Maps a dtype name to a storage format the twins support (bf16, fp32, int64); false otherwise.
bool storage_format(const std::string& dtype_name, state_buffer::format& out);

/// Row-wise L2 normalisation (element-wise work, not counted).
void l2_normalize_rows(mat& x);

/// Indices of the k largest scores, highest first (ties: lower index first).
std::vector<int> top_k(const std::vector<float>& scores, int k);
/// The same by sorting everything: the brute-force reference top_k is checked against.
std::vector<int> top_k_sorted(const std::vector<float>& scores, int k);

/// Chunked delta-rule linear attention over one head (gated DeltaNet / KDA), from state S0.
///   q, k: [c, dk] (k already scaled by beta where the algorithm says), v: [c, dv],
///   log_decay: [c, dk] per-step log of the per-channel decay, beta: [c].
/// `dense`: full C x C GEMMs over a chunk padded to `chunk` rows (HF torch_chunk_gated_delta_rule
/// counting); otherwise valid triangles only. Matrix work goes to *matrix, the two triangular
/// solves to *solve. Returns outputs [c, dv]; S is updated in place.
mat chunked_delta(const mat& q, const mat& k, const mat& v, const mat& log_decay, const vec& beta,
                  mat& S, int chunk, bool dense, std::int64_t* matrix, std::int64_t* solve);

/// The same recurrence one token at a time; the three state products (S^T k, k (x) delta, S^T q)
/// go to *step.
mat recurrent_delta(const mat& q, const mat& k, const mat& v, const mat& log_decay, const vec& beta,
                    mat& S, std::int64_t* step);

/// Mamba2's SSD over one head, chunked, from state S [N, P]: x [T, P] (already scaled by dt),
/// B, C [T, N], log_decay [T] (dt * A per step). Chunks of `chunk` rows, the tail padded with
/// zeros as HF's torch_forward pads it; the four products per chunk (C B^T, masked scores times
/// x, B^T x for the chunk's state, C S for the carried state) go to *matrix. Returns y [T, P]
/// (the D skip excluded); S is updated in place.
mat chunked_ssd(const mat& x, const mat& B, const mat& C, const vec& log_decay, mat& S, int chunk,
                std::int64_t* matrix);

/// The same recurrence one token at a time: S = e^a S + B^T x, y = C S; both products (2 N P
/// each) go to *step.
mat recurrent_ssd(const mat& x, const mat& B, const mat& C, const vec& log_decay, mat& S,
                  std::int64_t* step);

}  // namespace calc::ref
