// libFuzzer target: command lines as a user types them, --set what-ifs included.
//
// The first byte picks a command, the second a bundled model; the rest is arguments, one per
// line. calc must answer (exit 0/1) or refuse with one line (exit 2): an internal error (exit 3),
// a crash, a sanitizer report, a hang or a blow-up is a finding, and so is a successful answer
// that prints nan or inf. Commands that run the executor or read every model are left out
// (validate, check, compare, models): they are slow by design, and their options are the same
// parsers.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace {

const char* const kCommands[] = {"state",     "forward", "params",   "request",
                                 "capacity",  "plan",    "roofline", "speculative",
                                 "crossover", "experts", "sweep",    "layers"};
const char* const kModels[] = {"qwen3-8b", "qwen3.6-35b-a3b", "deepseek-v4-flash", "kimi-k3",
                               "gpt2",     "deepseek-v3"};

bool prints_nonsense(const std::string& out) {
  for (const char* word : {" nan", "-nan", " inf ", " inf\n", ":nan", ":inf", "-inf"})
    if (out.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::vector<std::string> args = {kCommands[data[0] % std::size(kCommands)]};
  std::string command = args.front();
  if (command != "speculative") {
    args.push_back("--model");
    args.push_back(kModels[data[1] % std::size(kModels)]);
  }
  std::string arg;
  for (std::size_t i = 2; i < size; ++i) {
    char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  if (!arg.empty()) args.push_back(arg);
  std::ostringstream out, err;
  int code = calc::run_cli(args, out, err);
  if (code == 3 || (code == 0 && prints_nonsense(out.str()))) __builtin_trap();
  return 0;
}
