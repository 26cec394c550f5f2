// `calc sweep --format csv` writes its rows directly (a million lengths in well under a second);
// the text must be what rendering the JSON result as CSV gives, byte for byte.
#include <doctest/doctest.h>

#include <sstream>

#include "cli/cli.h"
#include "report/format.h"

using namespace calc;

TEST_CASE("sweep CSV written row by row equals the rendered JSON") {
  for (const char* model : {"qwen3-8b", "deepseek-v4.1-flash", "kimi-k3", "qwen3.6-35b-a3b"}) {
    CAPTURE(model);
    std::vector<std::string> args = {"sweep", "--model", model, "--lengths", "1:5000:+127"};
    std::ostringstream out, err;
    std::vector<std::string> csv_args = args;
    csv_args.insert(csv_args.end(), {"--format", "csv"});
    REQUIRE(run_cli(csv_args, out, err) == 0);
    std::vector<std::string> json_args = args;
    json_args.insert(json_args.end(), {"--format", "json"});
    ojson body = evaluate(json_args);
    REQUIRE(body["points"].size() == 40);
    CHECK(out.str() == render(body, output_format::csv, ""));
  }
}
