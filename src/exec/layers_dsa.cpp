// Runtime of DeepSeek sparse attention (window + compressed global entries + indexer), with
// cross-layer sharing (a layer reads a source layer's entries) and selections handed from an
// indexer layer to the Reuse layers after it (§2.3.3, §2.3.6).
#include <cmath>

#include "exec/runtime.h"

namespace calc::exec {

using ref::gemm;
using ref::state_buffer;

/// The entries a source layer completes, shared with every layer that reads them.
struct entry_store {
  std::int64_t ratio = 1;
  std::int64_t width = 0;    // main record width (head_dim)
  std::int64_t idx_dim = 0;  // index key width (0: none)
  state_buffer main, index;
  std::int64_t entries = 0;
  // Selections per query position, made by the latest indexer layer reading this store.
  std::map<std::int64_t, std::vector<int>> selected;
  std::map<std::int64_t, std::vector<int>> candidates;  // the pool a Full indexer left
  entry_store(state_buffer::format main_fmt, state_buffer::format index_fmt)
      : main(main_fmt), index(index_fmt) {}
};

namespace {

/// Compresses every `ratio` positions into one entry: a per-channel softmax of gate scores over
/// the block (and, with overlap, the previous block through a second projection set) weighting
/// the projected rows. The incomplete blocks wait in FP32 kv/score buffers.
class compressor {
 public:
  compressor(std::int64_t d, std::int64_t width, std::int64_t ratio, bool overlap, bool gate,
             bool bias, state_buffer::format buffer_fmt, std::mt19937_64& rng)
      : width_(width),
        ratio_(ratio),
        f_(overlap ? 2 : 1),
        gate_(gate),
        kv_state_(buffer_fmt),
        score_state_(buffer_fmt) {
    wkv_ = random_weight(rng, d, f_ * width);
    if (gate) wgate_ = random_weight(rng, d, f_ * width);
    if (bias) ape_ = random_weight(rng, ratio, f_ * width);
    if (ratio > 1) {
      // [overlap*ratio, overlap*width] each: the current block and, with overlap, the previous.
      kv_state_.resize(static_cast<std::size_t>(f_ * ratio * f_ * width));
      score_state_.resize(static_cast<std::size_t>(f_ * ratio * f_ * width));
    }
  }

  /// Feeds new positions [first, first+rows); returns the entries they complete.
  mat feed(const mat& x, std::int64_t first, std::int64_t* flops) {
    mat kv = gemm(x, wkv_, flops);
    mat score = gate_ ? gemm(x, wgate_, flops) : mat::Zero(x.rows(), f_ * width_);
    std::vector<Eigen::RowVectorXf> done;
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      std::int64_t t = first + i;
      if (ratio_ == 1) {  // 1:1: each position is an entry
        done.push_back(kv.row(i).head(width_));
        continue;
      }
      std::int64_t slot = t % ratio_;
      std::int64_t row = (f_ - 1) * ratio_ + slot;  // the current block sits after the previous
      for (std::int64_t e = 0; e < f_ * width_; ++e) {
        float bias = ape_.size() > 0 ? ape_(slot, e) : 0.0f;
        kv_state_.set(static_cast<std::size_t>(row * f_ * width_ + e), kv(i, e));
        score_state_.set(static_cast<std::size_t>(row * f_ * width_ + e), score(i, e) + bias);
      }
      if (slot != ratio_ - 1) continue;
      // Block complete: softmax over its rows (first channel set) and, with overlap, the
      // previous block's rows (second set).
      Eigen::RowVectorXf entry = Eigen::RowVectorXf::Zero(width_);
      for (std::int64_t e = 0; e < width_; ++e) {
        float top = -INFINITY, total = 0, acc = 0;
        for (std::int64_t r = 0; r < f_ * ratio_; ++r) {
          std::int64_t ch = r < (f_ - 1) * ratio_ ? width_ + e : e;
          top = std::max(top, score_state_.get(static_cast<std::size_t>(r * f_ * width_ + ch)));
        }
        for (std::int64_t r = 0; r < f_ * ratio_; ++r) {
          std::int64_t ch = r < (f_ - 1) * ratio_ ? width_ + e : e;
          float w =
              std::exp(score_state_.get(static_cast<std::size_t>(r * f_ * width_ + ch)) - top);
          total += w;
          acc += w * kv_state_.get(static_cast<std::size_t>(r * f_ * width_ + ch));
        }
        entry(e) = acc / total;
      }
      done.push_back(entry);
      // With overlap, this block becomes the previous one.
      if (f_ == 2)
        for (std::int64_t r = 0; r < ratio_; ++r)
          for (std::int64_t e = 0; e < f_ * width_; ++e) {
            std::size_t from = static_cast<std::size_t>((ratio_ + r) * f_ * width_ + e);
            std::size_t to = static_cast<std::size_t>(r * f_ * width_ + e);
            kv_state_.set(to, kv_state_.get(from));
            score_state_.set(to, score_state_.get(from));
          }
    }
    mat out(static_cast<Eigen::Index>(done.size()), width_);
    for (std::size_t j = 0; j < done.size(); ++j) out.row(static_cast<Eigen::Index>(j)) = done[j];
    return out;
  }

  std::int64_t buffer_bytes() const { return kv_state_.bytes() + score_state_.bytes(); }

 private:
  std::int64_t width_, ratio_, f_;
  bool gate_;
  mat wkv_, wgate_, ape_;
  state_buffer kv_state_, score_state_;
};

class dsa_runtime final : public layer_runtime {
 public:
  dsa_runtime(const attention_dsa& a, const model_spec& s, std::int64_t layer, std::mt19937_64& rng)
      : a_(a), layer_(layer), window_(storage_of(s.precision.window)) {
    const std::int64_t d = s.hidden, qw = a.heads * a.head_dim;
    wq_a_ = random_weight(rng, d, a.q_rank);
    wq_b_ = random_weight(rng, a.q_rank, qw);
    wkv_ = random_weight(rng, d, a.head_dim);
    for (std::int64_t g = 0; g < a.o_groups; ++g)
      wo_a_.push_back(random_weight(rng, qw / a.o_groups, a.o_rank));
    wo_b_ = random_weight(rng, a.o_groups * a.o_rank, d);
    if (a.global && a.global->source < 0) {
      const dsa_global& g = *a.global;
      store_ =
          std::make_shared<entry_store>(storage_of(s.precision.kv), storage_of(s.precision.index));
      store_->ratio = g.ratio;
      store_->width = a.head_dim;
      main_ =
          std::make_unique<compressor>(d, a.head_dim, g.ratio, g.overlap, g.gate, g.position_bias,
                                       storage_of(s.precision.compressor), rng);
      if (a.indexer && a.indexer->keys == dsa_indexer::keys_kind::compressor) {
        store_->idx_dim = a.indexer->dim;
        index_ =
            std::make_unique<compressor>(d, a.indexer->dim, g.ratio, g.overlap, true,
                                         g.position_bias, storage_of(s.precision.compressor), rng);
      }
      if (a.indexer && a.indexer->keys == dsa_indexer::keys_kind::projection) {
        store_->idx_dim = a.indexer->dim;
        wk_idx_ = random_weight(rng, a.head_dim, a.indexer->dim);
      }
    }
    if (a.indexer) {
      wq_idx_ = random_weight(rng, a.q_rank, a.indexer->heads * a.indexer->dim);
      w_idx_ = random_weight(rng, d, a.indexer->heads);
    }
    for (const auto& [name, v] : s.layers.variants)
      if (v.attention)
        if (const auto* x = std::get_if<attention_dsa>(&*v.attention))
          if (x->indexer) pool_ = std::max(pool_, x->indexer->candidates);
    if (const auto* x = std::get_if<attention_dsa>(&*s.layers.base.attention))
      if (x->indexer) pool_ = std::max(pool_, x->indexer->candidates);
  }

  mat forward(const mat& x, const mat& x_all, const pass& p, run_context& ctx,
              counters& c) override {
    std::int64_t lin = 0, inter = 0;
    const std::int64_t m = x.rows(), w = a_.head_dim, H = a_.heads, W = a_.window;
    mat q_lat = gemm(x, wq_a_, &lin);
    mat q = gemm(q_lat, wq_b_, &lin);
    // Window records: the ring holds positions before this call; this call's rows are read
    // from its own (BF16-rounded) records, and written to the ring once every query is done.
    mat kv = gemm(x, wkv_, &lin);
    mat stored = kv.unaryExpr([this](float v) { return window_.stored(v); });
    mat ring(written_, w);
    for (std::int64_t r = 0; r < written_; ++r)
      for (std::int64_t e = 0; e < w; ++e)
        ring(r, e) = window_.get(static_cast<std::size_t>(r * w + e));
    auto window_record = [&](std::int64_t pos) -> Eigen::RowVectorXf {
      if (pos >= p.first) return stored.row(pos - p.first);
      return ring.row(pos % W);
    };
    // A source layer compresses every new position (x_all), then projects index keys.
    if (store_) {
      mat fresh = main_->feed(x_all, p.context, &lin);
      append(store_->main, fresh, w);
      if (index_) append(store_->index, index_->feed(x_all, p.context, &lin), store_->idx_dim);
      if (wk_idx_.size() > 0 && fresh.rows() > 0)
        append(store_->index, gemm(fresh, wk_idx_, &lin), store_->idx_dim);
      store_->entries += fresh.rows();
      ctx.sources[layer_] = store_;
    }
    std::shared_ptr<entry_store> src;
    if (a_.global) src = a_.global->source < 0 ? store_ : ctx.sources.at(a_.global->source);

    // The entries this layer reads, decoded from their storage once per call.
    mat entries;
    if (src) {
      entries.resize(src->entries, w);
      for (std::int64_t r = 0; r < src->entries; ++r)
        for (std::int64_t e = 0; e < w; ++e)
          entries(r, e) = src->main.get(static_cast<std::size_t>(r * w + e));
    }
    mat q_idx, w_idx;
    if (a_.indexer) {
      q_idx = gemm(q_lat, wq_idx_, &lin);
      w_idx = gemm(x, w_idx_, &lin);
    }
    mat out(m, H * w);
    const float scale = 1.0f / std::sqrt(static_cast<float>(w));
    for (std::int64_t i = 0; i < m; ++i) {
      std::int64_t t = p.first + i;
      // Records this query reads: its window, then selected (or all visible) entries.
      std::vector<std::pair<bool, std::int64_t>> reads;  // (is entry, index or position)
      for (std::int64_t pos = std::max(p.window_floor, t - W + 1); pos <= t; ++pos)
        reads.push_back({false, pos});
      if (src) {
        std::int64_t visible = (t + 1) / src->ratio;
        for (int e : select(*src, i, t, visible, q_idx, w_idx, p, inter, c))
          reads.push_back({true, e});
      }
      c.attention_pairs += static_cast<std::int64_t>(reads.size());
      std::vector<Eigen::RowVectorXf> window_rows;
      for (const auto& [is_entry, at] : reads)
        window_rows.push_back(is_entry ? Eigen::RowVectorXf() : window_record(at));
      for (std::int64_t h = 0; h < H; ++h) {
        std::vector<float> scores;
        auto rec = [&](std::size_t j, std::int64_t e) {
          return reads[j].first ? entries(reads[j].second, e) : window_rows[j](e);
        };
        for (std::size_t j = 0; j < reads.size(); ++j) {
          float s = 0;
          for (std::int64_t e = 0; e < w; ++e) s += q(i, h * w + e) * rec(j, e);
          scores.push_back(s * scale);
        }
        float top = -INFINITY, total = 0;
        for (float s : scores) top = std::max(top, s);
        Eigen::RowVectorXf o = Eigen::RowVectorXf::Zero(w);
        for (std::size_t j = 0; j < reads.size(); ++j) {
          float pj = std::exp(scores[j] - top);
          total += pj;
          for (std::int64_t e = 0; e < w; ++e) o(e) += pj * rec(j, e);  // K = V: one record
        }
        out.block(i, h * w, 1, w) = o / total;
        inter += 4 * w * static_cast<std::int64_t>(reads.size());  // QK and PV per record
      }
    }
    // Now the ring takes this call's records (the last W positions survive).
    written_ = std::min<std::int64_t>(W, p.end());
    window_.resize(static_cast<std::size_t>(written_ * w));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t e = 0; e < w; ++e)
        window_.set(static_cast<std::size_t>(((p.first + i) % W) * w + e), kv(i, e));
    // Grouped low-rank output: each group projects its slice of heads, then one projection back.
    const std::int64_t slice = H * w / a_.o_groups;
    mat grouped(m, a_.o_groups * a_.o_rank);
    for (std::int64_t g = 0; g < a_.o_groups; ++g)
      grouped.block(0, g * a_.o_rank, m, a_.o_rank) =
          gemm(out.block(0, g * slice, m, slice), wo_a_[g], &lin);
    mat y = gemm(grouped, wo_b_, &lin);
    c.linear += lin;
    c.interaction += inter;
    c.by_kind["dsa"] += lin + inter;
    return y;
  }

  void state_bytes(std::map<std::string, std::int64_t>& out) const override {
    out["window"] += window_.bytes();
    if (!store_) return;
    std::string prefix =
        store_->ratio > 1 ? "compressed_r" + std::to_string(store_->ratio) : "global";
    out[prefix + "_main"] += store_->main.bytes();
    if (store_->idx_dim > 0) out[prefix + "_index"] += store_->index.bytes();
    std::int64_t buffers = main_->buffer_bytes() + (index_ ? index_->buffer_bytes() : 0);
    if (buffers > 0) out["compressor_buffers"] += buffers;
  }

 private:
  static void append(state_buffer& b, const mat& rows, std::int64_t width) {
    std::size_t at = b.size();
    b.resize(at + static_cast<std::size_t>(rows.rows() * width));
    for (Eigen::Index r = 0; r < rows.rows(); ++r)
      for (std::int64_t e = 0; e < width; ++e)
        b.set(at + static_cast<std::size_t>(r * width + e), rows(r, e));
  }

  /// The entries main attention reads for query row i at position t.
  std::vector<int> select(entry_store& src, std::int64_t i, std::int64_t t, std::int64_t visible,
                          const mat& q_idx, const mat& w_idx, const pass& p, std::int64_t& inter,
                          counters& c) {
    std::int64_t top = a_.global->top_k;
    if (!a_.indexer) {
      // Reuse the selection an indexer layer made for this position; with no top-k, read all.
      if (top > 0 && src.selected.count(t)) return src.selected[t];
      std::vector<int> all(static_cast<std::size_t>(visible));
      for (std::int64_t e = 0; e < visible; ++e)
        all[static_cast<std::size_t>(e)] = static_cast<int>(e);
      return all;
    }
    const dsa_indexer& x = *a_.indexer;
    // Which entries are scored: a candidate pool, every visible entry, or (reference) every
    // entry completed by the end of the call, masked afterwards.
    std::vector<int> scan;
    bool rect = p.exec->index_scan == pair_counting::rectangular;
    if (!rect && x.candidates > 0 && src.candidates.count(t)) {
      scan = src.candidates[t];
    } else {
      std::int64_t n = rect ? p.end() / src.ratio : visible;
      for (std::int64_t e = 0; e < n; ++e) scan.push_back(static_cast<int>(e));
    }
    std::vector<float> scores(scan.size());
    for (std::size_t j = 0; j < scan.size(); ++j) {
      float s = 0;
      for (std::int64_t h = 0; h < x.heads; ++h) {
        float dot = 0;
        for (std::int64_t e = 0; e < x.dim; ++e)
          dot += q_idx(i, h * x.dim + e) *
                 src.index.get(static_cast<std::size_t>(scan[j] * x.dim + e));
        s += w_idx(i, h) * std::max(0.0f, dot);
      }
      scores[j] = scan[j] < visible ? s : -INFINITY;  // the rectangle's future entries masked
    }
    inter += 2 * x.heads * x.dim * static_cast<std::int64_t>(scan.size());
    c.index_scans += static_cast<std::int64_t>(scan.size());
    std::int64_t keep = std::min<std::int64_t>(top > 0 ? top : visible, visible);
    std::vector<int> pick = ref::top_k(scores, static_cast<int>(keep));
    std::vector<int> brute = ref::top_k_sorted(scores, static_cast<int>(keep));
    ++c.selections;
    if (pick != brute) ++c.selection_mismatches;
    std::vector<int> chosen;
    for (int j : pick) chosen.push_back(scan[static_cast<std::size_t>(j)]);
    src.selected[t] = chosen;
    if (pool_ > 0 && x.candidates == 0) {
      // A Full indexer also leaves the candidate pool the Reindex layers search within.
      std::vector<int> pool;
      for (int j : ref::top_k(scores, static_cast<int>(std::min<std::int64_t>(pool_, visible))))
        pool.push_back(scan[static_cast<std::size_t>(j)]);
      src.candidates[t] = pool;
    }
    return chosen;
  }

  attention_dsa a_;
  std::int64_t layer_;
  std::int64_t pool_ = 0;
  mat wq_a_, wq_b_, wkv_, wo_b_, wk_idx_, wq_idx_, w_idx_;
  std::vector<mat> wo_a_;
  state_buffer window_;
  std::int64_t written_ = 0;
  std::shared_ptr<entry_store> store_;
  std::unique_ptr<compressor> main_, index_;
};

}  // namespace

std::unique_ptr<layer_runtime> make_dsa(const attention_dsa& a, const model_spec& s,
                                        std::int64_t layer, std::mt19937_64& rng) {
  return std::make_unique<dsa_runtime>(a, s, layer, rng);
}

}  // namespace calc::exec
