// Shell completion (`calc completion bash|zsh`), generated from the command table: each script
// lists every subcommand and every option of the table, is valid for its shell (`bash -n`,
// `zsh -n`, loaded under compinit), and completes typed lines as a user expects: bash through
// _calc with COMP_WORDS set, zsh through an interactive shell in a pty (scripts/install.sh
// installs zsh).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "run_cli.h"

using namespace calc;

namespace {

using cli_testing::outcome;
using cli_testing::run;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The text between `start` and the next `end` after it ("" when `start` is absent).
std::string block(const std::string& text, const std::string& start, const std::string& end) {
  std::size_t from = text.find(start);
  if (from == std::string::npos) return "";
  std::size_t to = text.find(end, from + start.size());
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

/// Writes `text` to a fresh file under the temporary folder and returns its path.
std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("calc-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

/// Exit status of a shell command line (-1 when it could not run).
int shell(const std::string& line) {
  int status = std::system(line.c_str());
  return status == -1 ? -1 : WEXITSTATUS(status);
}

bool have_zsh() { return shell("command -v zsh > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("completion scripts list every subcommand and option of the command table") {
  auto table = command_options();
  REQUIRE(table.size() >= 20);  // the table as built, not an empty stand-in
  outcome bash = run({"completion", "bash"});
  outcome zsh = run({"completion", "zsh"});
  REQUIRE(bash.code == 0);
  REQUIRE(zsh.code == 0);
  std::string zsh_commands = block(zsh.out, "commands=(", "\n  )");
  // The first word's choices: `compgen -W "state forward ... --help --version"`.
  std::string bash_first_word = block(bash.out, "compgen -W \"", "\"");
  bash_first_word = " " + bash_first_word.substr(bash_first_word.find('"') + 1) + " ";
  for (const auto& entry : table) {
    // Named copies, not structured bindings: clang 14 cannot capture a binding in the lambdas
    // CAPTURE and REQUIRE_MESSAGE expand to (the hardening build is clang).
    const std::string& name = entry.first;
    const auto& options = entry.second;
    CAPTURE(name);
    REQUIRE(!options.empty());
    // zsh: the command in the `commands` list, and each option in its own case branch.
    CHECK(contains(zsh_commands, "\n    '" + name + ":"));
    std::string zsh_case = block(zsh.out, "\n    " + name + ")\n", " ;;\n");
    REQUIRE_MESSAGE(!zsh_case.empty(), "zsh has no branch for " << name);
    // bash: the command among the first words, its long options in its own case branch.
    CHECK(contains(bash_first_word, " " + name + " "));
    std::string bash_case = block(bash.out, "\n    " + name + ") opts=\"", "\" ;;\n");
    REQUIRE_MESSAGE(!bash_case.empty(), "bash has no branch for " << name);
    // The branch reads `name) opts="--help --model ..."`: its words, each between spaces.
    std::string bash_words = " " + bash_case.substr(bash_case.find('"') + 1) + " ";
    for (const std::string& option : options) {
      CAPTURE(option);
      CHECK(contains(zsh_case, "'" + option + "["));
      if (option.starts_with("--")) CHECK(contains(bash_words, " " + option + " "));
    }
  }
  // Values a user picks from a list are offered: model and GPU names, output formats.
  std::string state_case = block(zsh.out, "\n    state)\n", " ;;\n");
  CHECK(contains(state_case, "'--model["));
  CHECK(contains(state_case, ":model:("));
  CHECK(contains(state_case, "qwen3-8b"));
  CHECK(contains(block(zsh.out, "\n    plan)\n", " ;;\n"), ":gpu:("));
  CHECK(contains(state_case, ":format:(md json csv)"));
}

TEST_CASE("the zsh completion script is valid zsh and defines _calc under compinit") {
  REQUIRE_MESSAGE(have_zsh(), "zsh is not installed (scripts/install.sh installs it)");
  outcome zsh = run({"completion", "zsh"});
  REQUIRE(zsh.code == 0);
  std::filesystem::path script = write_temp("completion.zsh", zsh.out);
  // The check can fail: the same script with its last `esac` cut is refused.
  std::string broken = zsh.out;
  broken.erase(broken.rfind("esac"), 4);
  std::filesystem::path bad = write_temp("broken.zsh", broken);
  CHECK(shell("zsh -n " + bad.string() + " 2>/dev/null") != 0);
  CHECK(shell("zsh -n " + script.string()) == 0);
  // Loaded as a user would (compinit defines compdef), it defines the completion function and
  // binds it to calc.
  std::string load = "zsh -f -c 'autoload -Uz compinit && compinit -u -D && source " +
                     script.string() +
                     " && (( $+functions[_calc] )) && [[ ${_comps[calc]} == _calc ]]'";
  CHECK(shell(load) == 0);
  std::filesystem::remove(script);
  std::filesystem::remove(bad);
}

namespace {

/// Drives zsh's completion system as a user at a terminal would: an interactive zsh in a pty
/// (zsh/zpty) with the script loaded and `calc` a function that echoes its words; each line is
/// typed after "calc ", then Tab and Enter, and what ran is printed, one line per input line.
const char* const zsh_driver = R"(zmodload zsh/zpty
script=$1; shift
zpty z 'zsh -f -o zle -i'
zpty -w z "PS1='> '; autoload -Uz compinit; compinit -u -D; source $script; calc() { print -r -- \"RES\"\"ULT:\$*\" }; print REA\"\"DY"
wait_for() {
  local line deadline=$(( SECONDS + 10 ))
  while (( SECONDS < deadline )); do
    zpty -r -t z line || { sleep 0.05; continue; }
    line=${line//$'\r'/}
    if [[ $line == *$1* ]]; then REPLY=$line; return 0; fi
  done
  return 1
}
wait_for 'READY' || { print 'no prompt'; exit 1; }
for l in "$@"; do
  zpty -w -n z "calc $l"$'\t\n'
  if wait_for 'RESULT:'; then print -r -- "${${REPLY##*RESULT:}%%$'\n'}"; else print 'TIMEOUT'; fi
done
zpty -d z
)";

/// The lines zsh completed them to (Tab, then Enter), in order.
std::string zsh_completes(const std::string& script, const std::vector<std::string>& lines) {
  std::filesystem::path driver = write_temp("driver.zsh", zsh_driver);
  std::filesystem::path out = write_temp("driver.out", "");
  std::string command = "zsh -f " + driver.string() + " " + script;
  for (const std::string& l : lines) command += " '" + l + "'";
  shell("timeout 120 " + command + " > " + out.string() + " 2>&1");
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(driver);
  std::filesystem::remove(out);
  return text;
}

}  // namespace

TEST_CASE("zsh completes subcommands, their options and the values of lists") {
  REQUIRE_MESSAGE(have_zsh(), "zsh is not installed (scripts/install.sh installs it)");
  outcome zsh = run({"completion", "zsh"});
  REQUIRE(zsh.code == 0);
  std::filesystem::path script = write_temp("typed.zsh", zsh.out);
  CHECK(zsh_completes(script.string(),
                      {"st", "state --mo", "state --model qwen3-8", "state --length 8K --form",
                       "plan --gpu h100-s", "state --format j", "report --plot-d"}) ==
        "state\n"
        "state --model\n"
        "state --model qwen3-8b\n"
        "state --length 8K --format\n"
        "plan --gpu h100-sxm\n"
        "state --format json\n"
        "report --plot-dir\n");
  std::filesystem::remove(script);
}

TEST_CASE("the bash completion script is valid bash and registers _calc") {
  outcome bash = run({"completion", "bash"});
  REQUIRE(bash.code == 0);
  std::filesystem::path script = write_temp("completion.bash", bash.out);
  CHECK(shell("bash -n " + script.string()) == 0);
  CHECK(shell("bash -c 'source " + script.string() +
              " && complete -p calc | grep -q -- \"-F _calc\"'") == 0);
  // What _calc offers for a partly typed line, as bash calls it on Tab.
  auto offers = [&](const std::string& words, int cword) {
    std::filesystem::path out = write_temp("bash.out", "");
    shell("bash -c 'source " + script.string() + "; COMP_WORDS=(" + words + "); COMP_CWORD=" +
          std::to_string(cword) + "; _calc; echo \"${COMPREPLY[*]}\"' > " + out.string());
    std::ifstream in(out);
    std::string line;
    std::getline(in, line);
    std::filesystem::remove(out);
    return line;
  };
  CHECK(offers("calc st", 1) == "state");
  CHECK(offers("calc state --mo", 2) == "--model --models");
  CHECK(offers("calc state --model qwen3-8", 3) == "qwen3-8b");
  CHECK(offers("calc plan --gpu h100-s", 3) == "h100-sxm");
  CHECK(offers("calc state --format j", 3) == "json");
  std::filesystem::remove(script);
}
