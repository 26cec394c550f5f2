// Bad input never crashes: thousands of mutated model files either read or fail with a located
// spec_error (what the CLI turns into one line and exit code 2). A fuzzer in miniature, run in CI.
#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "graph/graph.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

using namespace calc;

TEST_CASE("mutated model files read or fail with a located error") {
  for (const char* name : {"qwen3-8b", "kimi-k3", "deepseek-v4.1-flash"}) {
    std::ifstream in(resolve_model_path(name));
    std::stringstream text;
    text << in.rdbuf();
    const std::string original = text.str();
    std::mt19937 rng(42);
    const std::string alphabet = "abcxyz019-:{}[],# \n\"'*@.";
    int parsed = 0, rejected = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::string s = original;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = rng() % s.size();
        switch (rng() % 3) {
          case 0:
            s[at] = alphabet[rng() % alphabet.size()];
            break;  // replace
          case 1:
            s.erase(at, 1 + rng() % 8);
            break;  // delete
          default:
            s.insert(at, 1, alphabet[rng() % alphabet.size()]);  // insert
        }
      }
      try {
        model_spec spec = read_model_text(s, "mutated.yaml");
        graph g = build_graph(spec);
        tally_params(g);
        tally_state(g, 4096);
        tally_forward(g, make_call(spec, 1, 0, 256));
        ++parsed;
      } catch (const spec_error& e) {
        CHECK(std::string(e.what()).rfind("mutated.yaml", 0) == 0);  // located at the file or --set
        ++rejected;
      } catch (const overflow_error&) {
        ++rejected;  // an absurd width that would overflow: reported, not wrapped
      }
    }
    CHECK(parsed + rejected == 3000);
    CHECK(rejected > 0);
  }
}
