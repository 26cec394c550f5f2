#include "serve/measured.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "common/dtype.h"
#include "common/error.h"
#include "common/limits.h"
#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "spec/hf/hub.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

namespace calc::serve {

namespace {

const std::vector<std::string> kRequired = {
    "id",         "backend", "model_path", "system",          "isl",           "osl",
    "batch_size", "tp_size", "pp_size",    "gemm_quant_mode", "moe_quant_mode"};

/// Splits one CSV line (RFC 4180 quoting); nullopt on an unterminated quote.
std::optional<std::vector<std::string>> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += c;
    }
  }
  if (quoted) return std::nullopt;
  out.push_back(cell);
  return out;
}

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A quant mode of the file as a calc format, or "" when calc has none for it.
std::string format_of(const std::string& mode) {
  std::string m = lower(mode);
  if (m.empty() || m == "bf16" || m == "bfloat16" || m == "float16" || m == "fp16") return "bf16";
  if (m == "fp8" || m == "fp8_tensor" || m == "fp8_static") return "fp8";
  if (m == "fp8_block") return "fp8:g128:fp32";  // 128-wide blocks, one fp32 scale each
  if (m == "nvfp4") return "nvfp4";
  if (m == "w4a16_mxfp4" || m == "mxfp4" || m == "w4a8_mxfp4_fp8" || m == "w4a8_mxfp4_mxfp8")
    return "mxfp4";
  return "";
}

/// Bits the tensor cores multiply at: weight-only quantisation (w4a16) multiplies in 16 bits.
int compute_bits(const std::string& mode, const dtype& weights) {
  std::string m = lower(mode);
  if (m.starts_with("w4a16") || m.starts_with("w8a16")) return 16;
  if (m.starts_with("w4a8")) return 8;
  return weights.bits;
}

std::int64_t whole(const measured_row& r, const std::string& column, std::int64_t fallback,
                   std::int64_t min, std::int64_t max) {
  const std::string& text = r.at(column);
  if (text.empty()) return fallback;
  auto v = number(text);
  if (!v || *v != std::floor(*v) || *v < static_cast<double>(min))
    throw spec_error(column, fmt::format("'{}' is not a whole number >= {}", text, min));
  // The limits serve's options have (--tp, --isl, --concurrency): a row is no bigger a question.
  if (*v > static_cast<double>(max))
    throw spec_error(column, fmt::format("{} is more than the limit of {}", text, max));
  return static_cast<std::int64_t>(*v);
}

}  // namespace

std::int64_t shortest_length(std::int64_t nominal, double low) {
  // The lowest length is the client's own arithmetic, int(len * range_ratio) in Python floats:
  // the same IEEE double product, floored (int() truncates, and the product is >= 0), is that
  // bound bit for bit. `nominal` is a whole number of at most limits::tokens (2^32 < 2^53), so
  // its conversion is exact. At 0.8 it is also the exact floor(4 n / 5): the double nearest 0.8
  // lies above it (by 4.4e-17), so the product never falls below an integer 0.8 n reaches, and
  // where 0.8 n is not whole its fraction is at least 0.2 from the next integer, far more than
  // the product's error (under 1e-6 at 2^32). Tested for every n to 2^20 and near 2^32.
  return static_cast<std::int64_t>(std::floor(static_cast<double>(nominal) * low));
}

std::int64_t mean_length(std::int64_t nominal, double low) {
  return (shortest_length(nominal, low) + nominal + 1) / 2;
}

const std::string& measured_row::at(const std::string& column) const {
  static const std::string kEmpty;
  auto it = fields.find(column);
  return it == fields.end() ? kEmpty : it->second;
}

std::pair<checked, checked> bundle_shapes(const std::string& name) {
  model_spec spec = read_model_file(resolve_model_path(name));
  graph g = build_graph(spec);  // keeps a pointer to spec
  return {tally_params(g).total, tally_state(g, 4096).total};
}

std::vector<measured_row> read_measured(const std::string& path) {
  // A folder opens as a stream that reads nothing: "the file is empty" would hide the mistake.
  if (std::filesystem::is_directory(path))
    throw spec_error(source_location{path, 0, 0}, "measurements", "is a folder, not a file");
  std::ifstream in(path);
  if (!in) throw spec_error(source_location{path, 0, 0}, "measurements", "cannot open the file");
  std::string line;
  int number_line = 0;
  std::vector<std::string> header;
  std::vector<measured_row> rows;
  auto fail = [&](const std::string& field, const std::string& message) {
    throw spec_error(source_location{path, number_line, 1}, field, message);
  };
  while (std::getline(in, line)) {
    ++number_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A spreadsheet's UTF-8 export starts with a byte-order mark, which is not part of "id".
    if (number_line == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
    // A row is a few hundred characters; a megabyte line is not a measurement file.
    constexpr std::size_t kMaxLine = 1 << 20;
    if (line.size() > kMaxLine)
      fail("line", fmt::format("a line of more than the limit of {} characters", kMaxLine));
    auto cells = split_csv(line);
    if (!cells) fail("line", "a quoted field is not closed");
    if (header.empty()) {
      header = *cells;
      for (const std::string& col : kRequired)
        if (std::find(header.begin(), header.end(), col) == header.end())
          fail(col, "the header lacks this column (see docs/validation/latency.md)");
      continue;
    }
    if (line.empty()) continue;
    if (cells->size() != header.size())
      fail("line", fmt::format("{} fields where the header has {}", cells->size(), header.size()));
    measured_row r;
    r.line = number_line;
    for (std::size_t i = 0; i < header.size(); ++i) r.fields[header[i]] = (*cells)[i];
    r.id = r.at("id");
    if (r.id.empty()) fail("id", "empty row id");
    for (const char* col : {"silicon_ttft_ms", "silicon_tpot_ms"}) {
      const std::string& t = r.at(col);
      if (t.empty()) continue;
      auto v = number(t);
      if (!v || *v <= 0) fail(col, fmt::format("'{}' is not a positive number of ms", t));
      (std::string(col) == "silicon_ttft_ms" ? r.ttft_ms : r.tpot_ms) = *v;
    }
    rows.push_back(std::move(r));
  }
  if (header.empty()) fail("header", "the file is empty");
  return rows;
}

struct row_mapper::impl {
  const calibration& cal;
  struct loaded {
    std::unique_ptr<model_spec> spec;
    graph g;
    model_forms forms;  // compiled once, under the calibration's expert popularity
  };
  // By name + formats; shared with the rows mapped on them, whose steps may be costed again
  // after the mapper is gone (at_expert_popularity).
  std::map<std::string, std::shared_ptr<loaded>> models;
  std::map<std::string, std::optional<gpu_spec>> gpus;
  std::map<std::string, std::shared_ptr<const deployment>> deployments;

  explicit impl(const calibration& c) : cal(c) {}

  /// How a row's model_path resolves, once per id.
  struct resolved {
    std::string name;
    bool by_shape = false;  // a bundle of the same shapes under another repository
    std::string error;      // several bundles of that name with different shapes
  };
  std::map<std::string, resolved> names;

  /// The model a row's model_path names, for its shapes (the row's quant modes give the formats):
  /// the calibration's alias, else the bundled model whose source is that repository, else one
  /// whose repository has the same shapes by name (hf::shape_name: Llama-3.1-8B-Instruct-FP8 is
  /// Llama-3.1-8B), else the id itself (a snapshot in the Hugging Face cache, or a bundled name).
  /// Names that match bundles of different shapes are an error, never the first one's.
  const resolved& model_name(const std::string& id) {
    auto known = names.find(id);
    if (known != names.end()) return known->second;
    resolved r{id};
    if (auto it = cal.models.find(id); it != cal.models.end()) {
      r.name = it->second;
    } else if (hf::looks_like_repo_id(id)) {
      std::vector<std::string> bundled = bundled_models();
      if (auto exact = hf::bundled_with_repo(id, models_dir(), bundled)) {
        r.name = *exact;
      } else if (auto same = hf::bundles_with_shapes_of(id, models_dir(), bundled); !same.empty()) {
        r.name = same.front();
        r.by_shape = true;
        std::optional<std::pair<checked, checked>> first;
        for (const std::string& name : same) {
          std::pair<checked, checked> shape = bundle_shapes(name);
          if (!first) first = shape;
          if (shape != *first)
            r.error = fmt::format(
                "model_path '{}': its name matches bundled models of different shapes ({} and "
                "{}); map it in the calibration's models table",
                id, same.front(), name);
        }
      }
    }
    return names.emplace(id, r).first->second;
  }

  const gpu_spec* gpu(const std::string& system, std::string& name) {
    auto it = gpus.find(system);
    if (it == gpus.end()) {
      std::optional<gpu_spec> found;
      auto alias = cal.systems.find(system);
      std::string n = lower(alias != cal.systems.end() ? alias->second : system);
      std::replace(n.begin(), n.end(), '_', '-');
      for (const std::string& candidate :
           {n, n.ends_with("-sxm") ? n.substr(0, n.size() - 4) : std::string()}) {
        if (candidate.empty() || found) continue;
        try {
          found = find_gpu(candidate);
        } catch (const spec_error&) {
        }
      }
      it = gpus.emplace(system, found).first;
    }
    if (!it->second) return nullptr;
    name = it->second->name;
    return &*it->second;
  }
};

row_mapper::row_mapper(const calibration& c) : p_(std::make_unique<impl>(c)) {}
row_mapper::~row_mapper() = default;

mapped_row row_mapper::map(const measured_row& r) {
  mapped_row m;
  m.id = r.id;
  m.system = r.at("system");
  m.ttft_ms = r.ttft_ms;
  m.tpot_ms = r.tpot_ms;
  m.engine = lower(r.at("backend"));
  try {
    if (const std::string& mode = r.at("mode"); !mode.empty() && mode != "agg")
      return m.error = fmt::format("mode '{}': only aggregated serving is modelled", mode), m;
    const gpu_spec* gpu = p_->gpu(m.system, m.gpu);
    if (!gpu)
      return m.error = fmt::format("system '{}': no such GPU in the catalogue", m.system), m;
    m.family = p_->cal.family_of(m.gpu);
    const engine_defaults* found = nullptr;
    for (const engine_defaults& e : engines())
      if (m.engine == e.name) found = &e;
    if (!found)
      return m.error = fmt::format("backend '{}': no such engine (known: vllm, sglang, trtllm)",
                                   r.at("backend")),
             m;
    const engine_defaults& eng = *found;
    if (std::string why = engine_gpu_problem(eng, *gpu); !why.empty())
      return m.error = "backend: " + why, m;
    const impl::resolved& named = p_->model_name(r.at("model_path"));
    if (!named.error.empty()) return m.error = named.error, m;
    m.model = named.name;
    std::string gemm_mode = r.at("gemm_quant_mode"), moe_mode = r.at("moe_quant_mode");
    if (gemm_mode.empty()) gemm_mode = r.at("precision");
    if (moe_mode.empty()) moe_mode = gemm_mode;
    std::string wf = format_of(gemm_mode), ef = format_of(moe_mode);
    if (wf.empty())
      return m.error = fmt::format("gemm_quant_mode '{}': no calc format", gemm_mode), m;
    if (ef.empty())
      return m.error = fmt::format("moe_quant_mode '{}': no calc format", moe_mode), m;
    // The cache's format is a launch option (vLLM and SGLang --kv-cache-dtype, TensorRT-LLM
    // kv_cache_config.dtype) the other columns do not imply; a file that records it says so in
    // the optional kv_cache_dtype column, and without it (or at "auto") the cache keeps the
    // model's own format.
    std::string kv_name = engine_format_name(lower(r.at("kv_cache_dtype")));
    if (kv_name == "auto") kv_name.clear();
    std::optional<dtype> kv_format;
    if (!kv_name.empty()) {
      try {
        kv_format = parse_dtype(kv_name);
      } catch (const std::invalid_argument&) {
        return m.error = fmt::format("kv_cache_dtype '{}': no calc format", r.at("kv_cache_dtype")),
               m;
      }
    }
    std::string key = m.model + "|" + wf + "|" + ef + "|" + kv_name;
    auto it = p_->models.find(key);
    if (it == p_->models.end()) {
      std::string path;
      try {
        path = resolve_model_path(m.model);
      } catch (const spec_error&) {
        return m.error = fmt::format(
                   "model_path '{}': no bundled model has its shapes, and the Hugging Face cache "
                   "has no snapshot of it",
                   r.at("model_path")),
               m;
      }
      auto l = std::make_shared<impl::loaded>();
      try {
        l->spec = std::make_unique<model_spec>(read_model_file(path));
      } catch (const spec_error& e) {
        // A path that is no model file: the row says which column led there, and where it broke.
        return m.error = fmt::format("model_path '{}': {}", r.at("model_path"), e.what()), m;
      }
      precision_spec& p = l->spec->precision;
      p.set_weights(parse_dtype(wf));
      p.experts = parse_dtype(ef);
      // A bundle of the same shapes lends only its shapes: what the quant columns do not name
      // (the cache, the embedding and the head) keeps the activations' format, not a quantised
      // release's (Kimi-K2.5 read through its NVFP4 bundle would take its FP8 cache).
      if (named.by_shape) p.kv = p.embedding = p.head = p.activations;
      if (kv_format) p.kv = *kv_format;
      l->g = build_graph(*l->spec);
      l->forms = compile_forms(l->g, p_->cal.expert_zipf_s);
      it = p_->models.emplace(key, std::move(l)).first;
    }
    const graph& g = it->second->g;
    m.model_graph = std::shared_ptr<const graph>(it->second, &it->second->g);
    serve_layout lay;
    lay.tp = whole(r, "tp_size", 1, 1, limits::cards);
    lay.pp = whole(r, "pp_size", 1, 1, limits::cards);
    lay.dp = whole(r, "attention_dp_size", 1, 1, limits::cards);
    lay.ep = std::max<std::int64_t>(1, whole(r, "moe_ep_size", 1, 0, limits::cards));
    std::int64_t moe_tp = whole(r, "moe_tp_size", 0, 0, limits::cards);
    bool moe = has_ffn<ffn_moe>(g);
    if (!moe) lay.ep = 1;                // a dense model's moe_* columns describe nothing
    std::int64_t clients_per_group = 1;  // batch_size's multiplier when dp is read anew
    // The engines' `--tp N --ep N` is N ranks whose experts are split N ways (EP is carved out
    // of the tp x dp ranks). Some rows count it twice: moe_tp = moe_ep = N and tp x dp = N x N,
    // a tensor-parallel group wider than the GPU's NVLink domain, which no aggregated engine
    // runs. Such a row is read as the N ranks it ran on.
    if (moe && moe_tp > 1 && moe_tp == lay.ep && lay.tp * lay.dp == moe_tp * moe_tp &&
        lay.tp * lay.dp > tp_domain(*gpu, gpu->server_gpus)) {
      if (lay.tp > 1) lay.tp = moe_tp;
      // batch_size is per attention-DP group: the clients of the row stay batch_size x dp.
      if (lay.dp > 1) {
        clients_per_group = lay.dp / moe_tp;
        lay.dp = moe_tp;
      }
      moe_tp = 1;
    }
    if (moe && moe_tp > 0 && r.at("moe_ep_size") != "" && moe_tp * lay.ep != lay.tp * lay.dp)
      return m.error = fmt::format(
                 "layout: moe_tp {} x moe_ep {} differs from tp {} x "
                 "attention_dp {}",
                 moe_tp, lay.ep, lay.tp, lay.dp),
             m;
    // Past the NVLink domain the row ran over a network calc has no bandwidth for: refused as
    // `calc serve` refuses it (a PCIe card's server: the catalogue's server_gpus).
    if (std::string why = domain_problem(*gpu, lay, gpu->server_gpus); !why.empty())
      return m.error = "layout: " + why, m;
    int bits = compute_bits(gemm_mode, g.spec->precision.weights);
    std::string dkey =
        fmt::format("{}|{}|{}|{}|{}|{}|{}", key, m.gpu, lay.tp, lay.ep, lay.dp, lay.pp, bits);
    auto dit = p_->deployments.find(dkey);
    if (dit == p_->deployments.end()) {
      deployment d = make_deployment(g, *gpu, lay, bits, it->second->forms);
      dit = p_->deployments.emplace(dkey, std::make_shared<const deployment>(d)).first;
    }
    std::int64_t isl = whole(r, "isl", 0, 1, limits::tokens);
    std::int64_t osl = whole(r, "osl", 0, 1, limits::tokens);
    // A client that draws lengths around the nominal ones sends requests of its mean lengths on
    // average: a request's TTFT follows its own prompt and the decode batch the mean lengths.
    m.isl = isl;
    m.osl = osl;
    const benchmark_client* client = client_of(p_->cal.clients, r.at("silicon_data_source"));
    if (client) {
      // A length_low so small that the shortest draw is empty describes no client.
      for (std::int64_t nominal : {isl, osl})
        if (shortest_length(nominal, client->length_low) < 1)
          throw spec_error("silicon_data_source",
                           fmt::format("client '{}' (length_low {}) would draw empty requests "
                                       "of a nominal {} tokens",
                                       client->name, client->length_low, nominal));
      m.length_low = client->length_low;
      isl = mean_length(isl, client->length_low);
      osl = mean_length(osl, client->length_low);
    }
    batching_config cfg = engine_batching(eng, isl, osl, dit->second->gpu);
    std::int64_t batch = whole(r, "batch_size", 0, 1, limits::requests);
    launch_row lr{.engine = m.engine,
                  .model_path = r.at("model_path"),
                  .system = m.system,
                  .gemm_quant = gemm_mode,
                  .isl = m.isl,
                  .osl = m.osl,
                  .tp = lay.tp,
                  .dp = lay.dp,
                  .concurrency = batch};
    if (const benchmark_launch* l = client ? launch_of(*client, lr) : nullptr) cfg.holds = l->holds;
    std::int64_t c = batch * clients_per_group;
    m.s = std::make_shared<const scenario>(make_scenario(*dit->second, cfg, c));
  } catch (const spec_error& e) {
    m.error = e.field().empty() ? e.message() : e.field() + ": " + e.message();
    m.s.reset();
  }
  return m;
}

std::vector<mapped_row> at_expert_popularity(const std::vector<mapped_row>& rows, double s) {
  std::vector<mapped_row> out = rows;
  std::map<const graph*, model_forms> forms;  // one compile per model
  for (mapped_row& m : out) {
    if (!m.s || !m.s->d.forms.experts || m.s->d.forms.expert_zipf_s == s) continue;
    const graph& g = *m.s->d.g;
    auto it = forms.find(&g);
    if (it == forms.end())
      it = forms.emplace(&g, with_expert_popularity(g, m.s->d.forms, s)).first;
    // Only the experts' costs change: the deployment's memory, the KV pool and the caps do not
    // depend on which experts a step touches.
    deployment d = m.s->d;
    d.forms = it->second;
    m.s = std::make_shared<const scenario>(make_scenario(d, m.s->cfg, m.s->concurrency));
  }
  return out;
}

steady_state predict(const mapped_row& r, const calibration& c) {
  const coefficients& k = c.lookup(r.family, r.engine);
  if (r.s->d.forms.experts && r.s->d.forms.expert_zipf_s != k.expert_zipf_s)
    return solve_steady_state(*at_expert_popularity({r}, k.expert_zipf_s).front().s, k);
  return solve_steady_state(*r.s, k);
}

simulation simulate_row(const mapped_row& r, const calibration& c) {
  // As `calc serve --simulate` refuses the knob, a row its launch script gave it is refused here
  // rather than simulated without its hold.
  if (r.s->cfg.holds.batch_wait_iters > 0)
    throw spec_error("batch_wait_timeout_iters",
                     "this row's benchmark ran TensorRT-LLM's batch wait, which the closed "
                     "loop's steady state costs and the simulation has not");
  if (r.s->cfg.holds.adp_balance)
    throw spec_error("attention_dp_config",
                     "this row's benchmark ran TensorRT-LLM's attention-DP balance, which the "
                     "closed loop's steady state costs and the simulation has not");
  const coefficients& k = c.lookup(r.family, r.engine);
  std::shared_ptr<const scenario> costed = r.s;
  if (r.s->d.forms.experts && r.s->d.forms.expert_zipf_s != k.expert_zipf_s)
    costed = at_expert_popularity({r}, k.expert_zipf_s).front().s;
  const scenario& s = *costed;
  std::int64_t groups = s.d.layout.dp;
  std::vector<arrival> requests(
      static_cast<std::size_t>(default_requests_per_client * s.concurrency * groups),
      arrival{0, r.isl, r.osl});
  draw_lengths(requests, r.length_low, 1);
  return simulate_clients(s.d, s.cfg, k, s.concurrency, std::move(requests));
}

}  // namespace calc::serve
