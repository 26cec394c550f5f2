// Output people and scripts read (issue 19, items 6-8): aligned Markdown in declared units,
// tidy CSV, report files and charts, calc check from any folder, no internal error on a path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "../unit/scratch.h"
#include "cli/cli.h"
#include "cli/result_units.h"
#include "report/chart.h"
#include "report/document.h"
#include "report/format.h"
#include "run_cli.h"

using namespace calc;
using cli_testing::outcome;
using cli_testing::run;

namespace {

/// Display width of UTF-8 text.
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// Every Markdown table of `text` (runs of lines starting with '|').
std::vector<std::vector<std::string>> tables_of(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> cur;
  for (const std::string& l : lines_of(text)) {
    if (l.starts_with("|")) {
      cur.push_back(l);
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// The cells of a table row, trimmed.
std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> out;
  std::size_t at = 1;
  while (at < row.size()) {
    std::size_t bar = row.find('|', at);
    if (bar == std::string::npos) break;
    std::string c = row.substr(at, bar - at);
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
    out.push_back(c);
    at = bar + 1;
  }
  return out;
}

/// RFC 4180 fields of one CSV line (no newlines inside fields in calc's output).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The command lines of the golden files, Markdown and JSON of each checked below.
const std::vector<std::vector<std::string>>& commands() {
  static const std::vector<std::vector<std::string>> c = {
      {"state", "--model", "qwen3-8b", "--length", "8192"},
      {"state", "--model", "kimi-k3", "--length", "8192"},
      {"state", "--model", "deepseek-v4.1-flash", "--length", "8192"},
      {"forward", "--model", "qwen3-8b", "--tokens", "8192"},
      {"forward", "--model", "deepseek-v4-flash", "--tokens", "8192"},
      {"params", "--model", "qwen3-8b"},
      {"params", "--model", "kimi-k3"},
      {"request", "--model", "qwen3-8b", "--prompt", "8192", "--generate", "1025"},
      {"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8192"},
      {"capacity", "--engine", "vllm", "--model", "qwen3-8b", "--gpu", "h100-sxm",
       "--max-model-len", "32768"},
      {"crossover", "--model", "qwen3-8b", "--length", "8192"},
      {"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "8192"},
      {"plan", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--length", "8192", "--requests", "64"},
      {"layers", "--model", "qwen3-8b"},
      {"compare", "--models", "qwen3-8b,kimi-k3", "--length", "8192"},
      {"sweep", "--model", "qwen3.6-35b-a3b", "--length", "1K:1M:x4"},
      {"experts", "--model", "qwen3-235b-a22b", "--batch", "16"},
      {"speculative", "--decode-ms", "20", "--round-ms", "30", "--accepted", "2.5"},
      {"models"},
      {"gpus"},
  };
  return c;
}

std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// Every number in a JSON result, with its unit_map path ("a.b", "table.column").
void numbers(const ojson& v, const std::string& path, bool in_table,
             std::vector<std::string>& out) {
  if (v.is_number()) {
    out.push_back(path);
  } else if (v.is_object()) {
    bool index =
        !v.empty() && std::all_of(v.begin(), v.end(), [](const ojson& x) { return x.is_object(); });
    if (index && !in_table && !path.empty()) return;  // a map of records: left out of Markdown
    for (const auto& [k, x] : v.items())
      numbers(x, path.empty() ? k : path + "." + k, in_table, out);
  } else if (v.is_array()) {
    for (const auto& x : v) numbers(x, path, true, out);
  }
}

}  // namespace

// ---- item 7: readable Markdown --------------------------------------------------------------

TEST_CASE("lengths print as asked: powers of two with K/M, other counts with separators") {
  CHECK(human_tokens(128000) == "128,000");
  CHECK(human_tokens(131072) == "128K");
  CHECK(human_tokens(1048576) == "1M");
  CHECK(human_tokens(8192) == "8K");
  CHECK(human_tokens(3072) == "3,072");
  CHECK(human_tokens(1000) == "1,000");
  outcome o = run({"state", "--model", "qwen3-8b", "--length", "128000"});
  REQUIRE(o.code == 0);
  CHECK(o.out.find("128,000") != std::string::npos);
  CHECK(o.out.find("125K") == std::string::npos);
}

TEST_CASE("parameter counts say params in M/B/T, never the bytes unit") {
  CHECK(human_params(2'779'484'000'000) == "2.779 T params");
  CHECK(human_params(8'190'735'360) == "8.191 B params");
  CHECK(human_params(560'500'000) == "560.5 M params");
  for (const char* model : {"qwen3-8b", "kimi-k3"}) {
    outcome o = run({"params", "--model", model});
    REQUIRE(o.code == 0);
    for (const std::string& l : lines_of(o.out)) {
      if (l.find("params") == std::string::npos || !l.starts_with("| ")) continue;
      std::vector<std::string> c = cells_of(l);
      // A parameter row never ends in the bytes unit "B" alone, and never reads as a raw count.
      for (const std::string& cell : c) {
        CAPTURE(l);
        CHECK_FALSE((cell.ends_with(" B") && cell.find("params") == std::string::npos &&
                     c.front().find("params") != std::string::npos));
      }
    }
    CHECK(o.out.find("total params") != std::string::npos);
  }
  outcome k = run({"params", "--model", "kimi-k3"});
  CHECK(k.out.find(" T params") != std::string::npos);
}

TEST_CASE("Markdown tables are aligned: every row of a table has the same width") {
  for (const auto& args : commands()) {
    outcome o = run(args);
    CAPTURE(args[0]);
    REQUIRE(o.code == 0);
    for (const auto& table : tables_of(o.out)) {
      std::size_t w = width(table.front());
      for (const std::string& row : table) {
        CAPTURE(row);
        CHECK(width(row) == w);
      }
    }
  }
}

TEST_CASE("no scientific notation and one time unit per table") {
  for (const auto& args : commands()) {
    outcome o = run(args);
    CAPTURE(args[0]);
    for (const auto& table : tables_of(o.out)) {
      std::set<std::string> time_units;
      for (const std::string& row : table)
        for (const std::string& c : cells_of(row)) {
          CAPTURE(c);
          bool sci = c.size() > 3 && std::isdigit(static_cast<unsigned char>(c[0])) &&
                     (c.find("e-") != std::string::npos || c.find("e+") != std::string::npos);
          CHECK_FALSE(sci);
          for (const char* unit : {" s", " ms", " µs"})
            if (c.ends_with(unit) && std::isdigit(static_cast<unsigned char>(c[0])))
              time_units.insert(unit);
        }
      CHECK(time_units.size() <= 1);
    }
  }
  outcome r = run({"roofline", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "8192"});
  CHECK(r.out.find("e-05") == std::string::npos);
}

TEST_CASE("a number's unit is declared, not read from its key") {
  ojson body = {{"total_bytes", 1207959552}, {"flops", 2000000000}};
  std::string plain = render(body, output_format::md, "t");
  CHECK(plain.find("1,207,959,552") != std::string::npos);  // no unit declared: a plain count
  std::string declared = render(body, output_format::md, "t",
                                unit_map{{unit::bytes, {"total_bytes"}}, {unit::flops, {"flops"}}});
  CHECK(declared.find("1.125 GiB") != std::string::npos);
  CHECK(declared.find("2 GFLOPs") != std::string::npos);
  // A key spelled like bytes but declared as a count stays a count.
  CHECK(render(body, output_format::md, "t", unit_map{{unit::count, {"total_bytes"}}})
            .find("1,207,959,552") != std::string::npos);
}

TEST_CASE("every number each command prints has a declared unit") {
  std::vector<std::vector<std::string>> all = commands();
  all.push_back({"validate", "--model", "kimi-k3", "--scale", "64", "--length", "160"});
  all.push_back({"crossover", "--model", "qwen3-8b", "--budget", "256MiB"});
  all.push_back({"capacity", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length", "8K",
                 "--requests", "64"});
  for (const auto& args : all) {
    ojson body = evaluate(with(args, {"--format", "json"}));
    std::vector<std::string> paths;
    numbers(body, "", false, paths);
    const unit_map& u = cli::units_of(args[0]);
    for (const std::string& p : paths) {
      CAPTURE(args[0]);
      CAPTURE(p);
      CHECK(u.find(p) != nullptr);
    }
  }
}

TEST_CASE("gpus: the source column is short; the full text stays in JSON") {
  outcome md = run({"gpus"});
  outcome json = run({"gpus", "--format", "json"});
  REQUIRE(md.code == 0);
  for (const std::string& l : lines_of(md.out)) {
    if (!l.starts_with("| ")) continue;
    CAPTURE(l);
    CHECK(cells_of(l).back().size() <= 80);
  }
  CHECK(json.out.find("citing the NVIDIA H100 whitepaper") != std::string::npos);
  CHECK(md.out.find("citing the NVIDIA H100 whitepaper") == std::string::npos);
  CHECK(short_source("NVIDIA H100: see https://www.glennklockwood.com/garden/h100 and "
                     "http://m.anandtech.com/Show/1") == "glennklockwood.com, anandtech.com");
}

TEST_CASE("state: Markdown keeps only rows with distinct values; JSON keeps every key") {
  outcome md = run({"state", "--model", "qwen3-8b", "--length", "8192"});
  outcome json = run({"state", "--model", "qwen3-8b", "--length", "8192", "--format", "json"});
  auto table = tables_of(md.out).front();
  std::vector<std::string> values;
  for (std::size_t i = 2; i < table.size(); ++i) values.push_back(cells_of(table[i])[1]);
  std::set<std::string> distinct(values.begin(), values.end());
  CHECK(distinct.size() == values.size());
  CHECK(values.size() < 10);
  for (const char* key : {"growing_bytes", "decode_read_bytes", "global_history_bytes",
                          "window_write_bytes", "next_token_history_bytes"})
    CHECK(json.out.find(key) != std::string::npos);
}

// ---- item 8: machine output -----------------------------------------------------------------

TEST_CASE("sweep -f csv is tidy: one header row, one row per length, same field count") {
  outcome o =
      run({"sweep", "--model", "qwen3.6-35b-a3b", "--length", "1K:1M:x4", "--format", "csv"});
  REQUIRE(o.code == 0);
  std::vector<std::string> rows = lines_of(o.out);
  REQUIRE(rows.size() == 7);  // header + 6 lengths
  CHECK(rows[0] ==
        "model,length,state_bytes,decode_read_bytes,decode_state_rw_bytes,decode_flops,"
        "decode_interaction_flops");
  for (const std::string& r : rows) CHECK(csv_fields(r).size() == 7);
  CHECK(rows[1].starts_with("qwen3.6-35b-a3b,1024,"));
}

TEST_CASE("CSV cells never hold JSON; several tables come as sections") {
  for (const auto& args : commands()) {
    outcome o = run(with(args, {"--format", "csv"}));
    CAPTURE(args[0]);
    REQUIRE(o.code == 0);
    for (const std::string& l : lines_of(o.out))
      for (const std::string& f : csv_fields(l)) {
        CAPTURE(f);
        CHECK_FALSE((f.starts_with("{") || f.starts_with("[")));
      }
  }
  // Every header names one column: a table column named like a single value takes its table's
  // name.
  outcome st = run({"state", "--model", "qwen3-8b", "--length", "8K", "--format", "csv"});
  std::vector<std::string> head = csv_fields(lines_of(st.out).front());
  CHECK(std::set<std::string>(head.begin(), head.end()).size() == head.size());
  CHECK(std::find(head.begin(), head.end(), "components.per_token_bytes") != head.end());
  outcome one = run({"params", "--model", "qwen3-8b", "--format", "csv"});
  CHECK(one.out.starts_with("model,formats,total_params,"));  // one table: the single values lead rows
}

TEST_CASE("report -f csv: points, components and models sections, no JSON in cells") {
  outcome o = run(
      {"report", "--model", "qwen3-8b,qwen3.6-35b-a3b", "--length", "4K,32K", "--format", "csv"});
  REQUIRE(o.code == 0);
  std::vector<std::string> ls = lines_of(o.out);
  CHECK(ls[0] == "# points");
  CHECK(ls[1].starts_with("model,length,state_bytes,"));
  std::size_t fields = csv_fields(ls[1]).size();
  for (std::size_t i = 2; i < 6; ++i) CHECK(csv_fields(ls[i]).size() == fields);
  CHECK(ls[6].empty());
  CHECK(ls[7] == "# components");
  CHECK(o.out.find("\n# models\n") != std::string::npos);
  std::vector<std::string> head = csv_fields(ls[1]);
  CHECK(std::set<std::string>(head.begin(), head.end()).size() == head.size());
  // Several GPUs: still one points section, a row per GPU, model and length.
  outcome two = run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm,h200", "--length",
                     "4K,32K", "--format", "csv"});
  REQUIRE(two.code == 0);
  std::vector<std::string> rows = lines_of(two.out);
  CHECK(std::count(rows.begin(), rows.end(), "# points") == 1);
  CHECK(rows[6].empty());  // header + 2 GPUs x 2 lengths
  CHECK(rows[4].find(",h200,") != std::string::npos);
  for (const std::string& l : ls)
    for (const std::string& f : csv_fields(l))
      CHECK_FALSE((f.starts_with("{") || f.starts_with("[")));
}

TEST_CASE("report --output: chart links relative to the file, chart names unique per report") {
  namespace fs = std::filesystem;
  fs::path root = calc::testing::scratch_dir("calc-report-output");
  fs::path docs = root / "docs", plots = root / "plots";  // --output creates docs/
  outcome a = run({"report", "--model", "qwen3-8b", "--length", "4K,32K", "--plot-dir",
                   plots.string(), "--output", (docs / "a.md").string()});
  outcome b = run({"report", "--model", "qwen3.6-35b-a3b", "--length", "4K,32K", "--plot-dir",
                   plots.string(), "--output", (docs / "b.md").string()});
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(a.out == "calc report: wrote " + (docs / "a.md").string() + "\n");
  // The second report wrote its own scripts beside the first's.
  for (const char* id : {"a-state", "a-requests", "a-decode", "b-state", "b-requests", "b-decode"})
    CHECK(fs::exists(plots / (std::string(id) + ".gp")));
  if (!have_gnuplot()) {
    MESSAGE("gnuplot missing: SVG links not checked");
    return;
  }
  std::string doc = read(docs / "a.md");
  CHECK(doc.find("](../plots/a-state.svg)") != std::string::npos);
  CHECK(fs::exists(docs / "../plots/a-state.svg"));
  // Without --output two different reports still get different names.
  ojson one = evaluate({"report", "--model", "qwen3-8b", "--length", "4K", "--format", "json"});
  ojson two = evaluate({"report", "--model", "qwen3-32b", "--length", "4K", "--format", "json"});
  CHECK(chart_stem(one, "") != chart_stem(two, ""));
  CHECK(chart_stem(one, "") == chart_stem(one, ""));
}

TEST_CASE("report --output to a file that cannot be written: one line, exit 2") {
  // A folder that cannot exist: its parent is a file.
  std::filesystem::path file = calc::testing::scratch_dir("calc-report-output") / "plain-file";
  std::ofstream(file) << "x";
  std::string path = (file / "x" / "report.md").string();
  outcome o = run({"report", "--model", "qwen3-8b", "--length", "4K", "--output", path});
  CHECK(o.code == 2);
  CHECK(o.err.rfind("--output: cannot write " + path + ": ", 0) != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

TEST_CASE("calc check <repo>/scenarios passes from another working folder") {
  namespace fs = std::filesystem;
  struct at {
    fs::path before = fs::current_path();
    explicit at(const fs::path& p) { fs::current_path(p); }
    ~at() { fs::current_path(before); }
  };
  fs::path elsewhere = calc::testing::scratch_dir("calc-check-elsewhere");
  outcome o = [&] {
    at here(elsewhere);
    return run({"check", std::string(CALC_SOURCE_DIR) + "/scenarios"});
  }();
  CHECK(o.code == 0);
  CHECK(o.out.find(" 0 failed") != std::string::npos);
  CHECK(fs::current_path() != elsewhere);  // the working folder is restored
}

TEST_CASE("no internal error on a long or odd path") {
  std::string long_path(5000, 'a');
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"check", long_path},
           {"check", "/" + long_path + "/scenarios"},
           {"state", "--model", long_path + ".yaml", "--length", "8K"},
           {"report", "--model", "qwen3-8b", "--length", "4K", "--output", long_path + ".md"},
           {"report", "--model", "qwen3-8b", "--length", "4K", "--plot-dir", long_path}}) {
    outcome o = run(args);
    CAPTURE(args[0]);
    CAPTURE(o.err.substr(0, 200));
    CHECK(o.code == 2);
    CHECK(o.err.find("internal error") == std::string::npos);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.size() < 600);
  }
}

// ---- item 6: charts -------------------------------------------------------------------------

TEST_CASE("a model that does not fit is said so in words, not drawn as a zero line") {
  // On a layout given: DeepSeek-V3's weights exceed one card.
  outcome o = run({"report", "--model", "qwen3-8b,deepseek-v3", "--gpu", "h100-sxm", "--length",
                   "4K,32K", "--tp", "1"});
  REQUIRE(o.code == 0);
  std::string requests = o.out.substr(o.out.find("## Requests per deployment"));
  requests = requests.substr(0, requests.find("The fewest cards"));
  CHECK(requests.find("line [0, 0]") == std::string::npos);
  CHECK(requests.find("does not fit") != std::string::npos);
  CHECK(requests.find("| deepseek-v3 | not drawn") != std::string::npos);
  CHECK(requests.find("its weights (") != std::string::npos);
  CHECK(o.out.find("it does not fit on tp 1 x pp 1 (1 x h100-sxm)") != std::string::npos);
  // Planned: no deployment within --max-gpus holds it.
  outcome none = run({"report", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--length",
                      "4K,32K", "--max-gpus", "4"});
  REQUIRE(none.code == 0);
  CHECK(none.out.find("it does not fit: no deployment of up to 4 h100-sxm cards holds one "
                      "request") != std::string::npos);
}

TEST_CASE("report: the layout is planned per model, or given; bounds and requests are its") {
  ojson planned = evaluate({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length",
                            "4K,1M", "--memory", "as-sold", "--format", "json"});
  const ojson& m = planned["models"][0];
  CHECK(m["layout_planned"] == true);
  CHECK(m["layout"] == "tp 4 x pp 1");  // 144 GiB at 1M: 36 GiB a card on tp 4
  CHECK(m["gpus"] == 4);
  CHECK(m["points"][1]["requests"].get<std::int64_t>() >= 1);
  ojson one = evaluate({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--length",
                        "4K,1M", "--memory", "as-sold", "--tp", "1", "--format", "json"});
  CHECK(one["layout"] == "tp 1 x pp 1");
  CHECK(one["models"][0]["layout_planned"] == false);
  CHECK(one["models"][0]["points"][1]["requests"] == 0);
  // Four cards' peaks and bandwidth: a decode step bound four times shorter, near enough.
  double four = m["points"][0]["decode_bound_s"].get<double>();
  double single = one["models"][0]["points"][0]["decode_bound_s"].get<double>();
  CHECK(four < single / 3);
  CHECK(m["points"][0]["requests"].get<std::int64_t>() >
        one["models"][0]["points"][0]["requests"].get<std::int64_t>());
}

TEST_CASE("report --gpu takes a list: one section per GPU") {
  outcome o = run({"report", "--model", "qwen3-8b", "--gpu", "h100-sxm,h200", "--length", "4K"});
  REQUIRE(o.code == 0);
  CHECK(o.out.find("# Serving report: qwen3-8b on NVIDIA H100") != std::string::npos);
  CHECK(o.out.find("# Serving report: qwen3-8b on NVIDIA H200") != std::string::npos);
  ojson j = evaluate(
      {"report", "--model", "qwen3-8b", "--gpu", "h100-sxm,h200", "--length", "4K", "-f", "json"});
  REQUIRE(j["reports"].size() == 2);
  CHECK(j["reports"][0]["gpu"] == "h100-sxm");
  CHECK(j["reports"][1]["gpu"] == "h200");
}

TEST_CASE("chart titles name the GPU, the formats and the layout") {
  outcome o =
      run({"report", "--model", "qwen3-8b", "--gpu", "h200", "--length", "4K,32K", "--kv", "fp8"});
  REQUIRE(o.code == 0);
  CHECK(o.out.find("title \"State per request (NVIDIA H200 SXM 141GB, bf16 weights, fp8 KV, tp 1 "
                   "x pp 1)\"") != std::string::npos);
  chart c{"x", "T", "len", "y", {1, 2}, {}, "GPU", "fp8 weights", "tp 8"};
  CHECK(full_title(c) == "T (GPU, fp8 weights, tp 8)");
}

TEST_CASE("line styles stay distinct past 10 models") {
  std::set<std::tuple<std::string, int, int>> svg;
  std::set<std::string> mermaid_colours;
  for (std::size_t i = 0; i < 20; ++i) {
    line_style s = style_of(i);
    svg.insert({s.hex, s.dash, s.point});
    mermaid_colours.insert(s.hex);
  }
  CHECK(svg.size() == 20);
  CHECK(mermaid_colours.size() == 20);
  for (std::size_t i = 0; i < 40; ++i) svg.insert({style_of(i).hex, style_of(i).dash, 0});
  CHECK(svg.size() >= 40);
  chart c{"x", "T", "len", "y", {1024, 2048}, {}, "", "", ""};
  for (int i = 0; i < 12; ++i) c.lines.push_back({"m" + std::to_string(i), {1.0 + i, 2.0 + i}, ""});
  std::string gp = gnuplot_script(c, "x.dat", "x.svg");
  CHECK(gp.find("lc rgb '#aec7e8'") != std::string::npos);  // line 11: not blue again
}

TEST_CASE("log axes where values span decades; the Mermaid chart has a legend table") {
  chart c{"x", "T", "len", "ms", {1024, 1048576}, {}, "", "", ""};
  c.lines.push_back({"a", {1.0, 1000.0}, ""});
  c.lines.push_back({"b", {NAN, NAN}, "does not fit"});
  CHECK(log_x(c));
  CHECK(log_y(c));  // a line with no values does not stop the log axis
  std::string m = mermaid(c);
  CHECK(m.find("y-axis \"log10 of ms\" 0 --> 3") != std::string::npos);
  CHECK(m.find("line [0, 3]") != std::string::npos);

  CHECK(m.find("| b    | not drawn |     — |     — | does not fit |") != std::string::npos);
  CHECK(m.find("| line | colour    | at 1K | at 1M | note") != std::string::npos);
  CHECK(m.find("does not fit") != std::string::npos);
  std::string gp = gnuplot_script(c, "x.dat", "x.svg");
  CHECK(gp.find("set logscale y 10") != std::string::npos);
  CHECK(gp.find("using 1:3") == std::string::npos);  // b is not drawn
  CHECK(gnuplot_data(c).find("1024 1 ?") != std::string::npos);
}
