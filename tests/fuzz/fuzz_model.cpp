// libFuzzer target: any bytes as a model file, through the reader, the graph and every tally.
//
// A model either reads or fails with calc's own errors (spec_error: a located line, exit 2;
// overflow_error: an exact count past 128 bits, exit 2). Anything else escaping, a crash, a
// sanitizer report, a hang (-timeout) or a memory blow-up (-rss_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/checked.h"
#include "common/error.h"
#include "graph/graph.h"
#include "spec/model_reader.h"
#include "tally/tally.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    calc::model_spec spec = calc::read_model_text(text, "fuzz.yaml");
    calc::graph g = calc::build_graph(spec);
    calc::tally_params(g);
    calc::tally_state(g, 4096);
    calc::tally_forward(g, calc::make_call(spec, 1, 0, 256));
    calc::tally_forward(g, calc::make_call(spec, 4, 4096, 1));
  } catch (const calc::spec_error&) {
  } catch (const calc::overflow_error&) {
  }
  return 0;
}
