// The benchmark clients behind measured rows: how each drew its requests' lengths and what its
// launch scripts gave the engine for some runs and not others. These are facts about how a row
// was measured that its columns omit, so they are data (the calibration file's `clients`
// section, each with its provenance), never code: the row mapping reads them and nothing in the
// time model branches on a model or a benchmark.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "serve/holds.h"

namespace calc::serve {

/// A launch option a benchmark's scripts give the engine for some of its runs: the rows it
/// applies to (every condition set must hold) and the engine knobs it sets.
struct benchmark_launch {
  std::string engine;             // the row's backend
  std::string model_path;         // the row's model_path column, as the benchmark's rows spell it
  std::int64_t isl = 0, osl = 0;  // the nominal lengths it is given at (0: any)
  std::int64_t tp_below = 0;      // only below this tensor parallelism (0: any)
  bool attention_dp = false;      // only with attention DP (else only without it)
  std::string system;             // only on this system column ("": any)
  std::string gemm_quant;  // only with this gemm_quant_mode ("": any; precision where it is empty)
  // Only at these closed-loop clients (the row's batch_size): at least, and below (0: any). Only
  // without attention DP, where batch_size counts every client of the run.
  std::int64_t concurrency_at_least = 0, concurrency_below = 0;
  // TensorRT-LLM's batch waiting (both of its values given) and attention-DP balance (the
  // engine's timeout 50 and batching wait 10 where the scripts give none).
  prompt_holds holds;
  std::string source;  // provenance
};

/// A benchmark client a measured row's data source names: how it drew the requests' lengths.
/// Like the engine, the client is a fact of the row (its silicon_data_source column), not of
/// its model or lengths.
struct benchmark_client {
  std::string name;
  std::vector<std::string> source_prefixes;  // a silicon_data_source starting with one of these
  // Input and output lengths drawn uniformly among the whole numbers in
  // [floor(length_low x nominal), nominal] (1: every request at the nominal lengths).
  double length_low = 1;
  std::string source;  // provenance
  // What its launch scripts give the engine for some runs only (the first that matches a row).
  std::vector<benchmark_launch> launches;
};

/// The client among `clients` whose source prefix starts `data_source`, else null (nominal
/// lengths).
const benchmark_client* client_of(const std::vector<benchmark_client>& clients,
                                  const std::string& data_source);

/// What a measured row says of its launch: the columns a launch option's conditions read.
struct launch_row {
  std::string engine, model_path, system, gemm_quant;
  std::int64_t isl = 0, osl = 0;  // nominal lengths
  std::int64_t tp = 1, dp = 1;    // tensor parallelism and attention-DP groups
  std::int64_t concurrency = 0;   // closed-loop clients (the batch_size column)
};

/// The first launch option of `client` whose conditions `row` meets, else null (the engine's
/// defaults).
const benchmark_launch* launch_of(const benchmark_client& client, const launch_row& row);

/// Reads a calibration file's `clients` list strictly; a bad field is a located spec_error.
std::vector<benchmark_client> read_clients(const YAML::Node& list, const std::string& file);

/// The `clients` section as read_clients reads it back ("" for none).
std::string write_clients(const std::vector<benchmark_client>& clients);

/// A YAML double-quoted scalar of `s`.
std::string yaml_quoted(const std::string& s);

}  // namespace calc::serve
