// The unit of every number each command prints, by JSON path (see unit_map in
// report/format.h): "key", "object.key", "table.column", "object.*". A value left out prints as
// a plain count; tests/cli/units_test.cpp checks every number of every command is declared.
#include "cli/result_units.h"

#include <map>
#include <string>

namespace calc::cli {

namespace {

unit_map state_units() {
  unit_map u{{unit::tokens, {"length", "crossover_tokens"}},
             {unit::count, {"batch", "components.layers"}},
             {unit::bytes,
              {"total_bytes", "fixed_bytes", "growing_bytes", "per_token_bytes",
               "decode_read_bytes", "decode_state_rw_bytes", "global_history_bytes",
               "history_per_token_bytes", "window_bytes", "window_write_bytes",
               "next_token_history_bytes", "components.bytes", "components.per_token_bytes"}}};
  // 15 summary rows often carry three numbers: the repeats stay in JSON only.
  u.distinct_rows = true;
  return u;
}

unit_map forward_units() {
  return {{unit::tokens, {"context", "tokens"}},
          {unit::count,
           {"batch", "rows", "vocab_rows", "n_pair", "attention_pairs", "index_scans",
            "sparse_layers.layer", "sparse_layers.rows", "sparse_layers.window_records_read",
            "sparse_layers.selected_entries_read", "sparse_layers.index_entries_scanned"}},
          {unit::flops,
           {"flops", "linear_flops", "interaction_flops", "state_flops", "mhc_nonmatrix_flops",
            "connection_flops", "rope_flops", "vocab_flops", "stage_flops.*", "stages.flops",
            "modules.flops"}},
          {unit::params, {"stages.params", "modules.params"}},
          {unit::bytes,
           {"engram_read_bytes", "workspace_bytes", "weight_read_bytes", "embedding_read_bytes"}}};
}

unit_map params_units() {
  return {
      {unit::params,
       {"total_params", "active_params", "categories.*", "tensors.*", "groups.attention_params",
        "groups.ffn_params", "groups.other_params", "component_params", "components.params",
        "components.embedding_params", "components.block_params", "components.projector_params"}},
      {unit::count, {"groups.layers"}},
      {unit::bytes,
       {"weight_bytes", "bf16_bytes", "selected_expert_bytes_per_token", "embedding_table_bytes",
        "shared_read_bytes", "groups.attention_bytes", "groups.ffn_bytes", "checkpoint_bytes",
        "component_bytes", "components.bytes", "checkpoint_component_bytes"}}};
}

unit_map request_units() {
  return {
      {unit::tokens, {"cached", "prompt", "generate", "final_positions", "cumulative_read_tokens"}},
      {unit::count, {"prefill_calls", "decode_calls"}},
      {unit::flops, {"flops", "prefill_flops", "decode_flops"}},
      {unit::bytes,
       {"kv_written_bytes", "decode_written_bytes", "final_state_bytes", "cumulative_read_bytes"}}};
}

unit_map crossover_units() {
  return {{unit::tokens, {"length", "state_crossover_tokens", "max_tokens"}},
          {unit::count, {"batch_read_crossover"}},
          {unit::bytes, {"weight_read_bytes", "context_read_bytes", "budget_bytes"}}};
}

unit_map experts_units() {
  return {{unit::tokens, {"tokens"}},
          {unit::count,
           {"moe_layers", "experts", "top_k", "dispatches", "distinct_experts", "rows_per_expert"}},
          {unit::params, {"expert_params"}},
          {unit::flops, {"flops"}},
          {unit::bytes,
           {"expert_bytes", "layer_expert_bytes", "layer_weight_read_bytes", "weight_read_bytes",
            "uniform_layer_read_bytes", "concentrated_layer_read_bytes", "all_routed_bytes"}}};
}

unit_map layers_units() {
  return {{unit::count, {"layers_count", "modes.*", "candidate_pool", "layers.layer"}}};
}

unit_map capacity_units() {
  return {// plain capacity
          {unit::tokens, {"length", "page_tokens", "rows.length"}},
          {unit::count,
           {"gpus", "requests", "budget_requests", "rows.requests",
            // --engine
            "tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs", "block_size",
            "blocks", "blocks_per_request", "max_concurrency", "max_mamba_cache_size",
            "groups.layers", "groups.padding", "groups.block_size"}},
          {unit::tokens, {"max_model_len", "kv_cache_tokens", "estimated_max_model_len"}},
          {unit::bytes_as_sold, {"memory_bytes"}},
          {unit::params, {"max_params"}},
          {unit::bytes,
           {"weight_bytes", "workspace_bytes", "shared_prefix_bytes", "per_request_bytes",
            "free_bytes", "max_weight_bytes", "rows.per_request_bytes", "rows.free_bytes",
            "weight_bytes_per_rank", "activation_estimate_bytes", "available_kv_bytes",
            "page_bytes", "max_model_len_kv_bytes", "k_pool_bytes", "v_pool_bytes",
            "groups.request_bytes", "card_memory_bytes", "vision_weight_bytes_per_rank",
            "mamba_request_bytes", "conv_state_pool_bytes", "ssm_state_pool_bytes",
            // --engine without --kv-memory: the budget term by term
            "budget.engine_share_bytes", "budget.forward_peak_bytes", "budget.sampler_peak_bytes",
            "budget.activation_peak_bytes", "budget.non_torch_bytes", "budget.cuda_graph_bytes",
            "budget.activation_memory_given_bytes"}},
          {unit::tokens, {"budget.batched_tokens"}},
          {unit::count, {"budget.sampler_rows"}},
          {unit::ratio, {"budget.fraction"}},
          {unit::source, {"budget.rules_source"}}};
}

unit_map plan_units() {
  unit_map u = capacity_units();  // plan --engine prints a capacity body
  unit_map own{
      {unit::tokens, {"length"}},
      {unit::count,
       {"gpus", "requests", "tp", "pp", "ep", "dp", "fewer_gpus", "stages.stage", "instances",
        "max_requests"}},
      {unit::bytes,
       {"workspace_bytes", "weight_bytes", "worst_card_free_bytes", "fewer_gpus_shortfall_bytes",
        "stages.weight_bytes", "stages.state_per_request_bytes"}}};
  u.of.insert(own.of.begin(), own.of.end());
  return u;
}

unit_map roofline_units() {
  return {{unit::tokens, {"context", "prompt"}},
          {unit::count, {"gpus", "tp", "batch"}},
          {unit::flops, {"prefill.flops", "decode.flops"}},
          {unit::bytes, {"prefill.bytes", "decode.bytes"}},
          {unit::seconds,
           {"prefill.compute_s", "prefill.memory_s", "prefill.bound_s", "decode.compute_s",
            "decode.memory_s", "decode.bound_s", "ttft_lower_bound_s"}},
          {unit::ratio, {"decode_tokens_per_s_upper_bound"}},
          {unit::milliseconds, {"calls.bound_ms"}}};
}

unit_map speculative_units() {
  return {{unit::milliseconds, {"decode_ms", "round_ms", "amortised_ms_per_token"}},
          {unit::ratio, {"accepted_per_round", "speedup", "break_even_accepted"}}};
}

unit_map models_units() {
  return {{unit::count, {"models.layers", "models.hidden"}},
          {unit::params, {"models.total_params"}},
          {unit::source, {"models.source"}}};
}

unit_map gpus_units() {
  return {{unit::bytes_as_sold, {"gpus.memory_bytes"}},
          {unit::bytes, {"gpus.runtime_memory_bytes"}},
          {unit::rate, {"gpus.bandwidth_bytes", "gpus.interconnect_bytes", "gpus.pcie_bytes"}},
          {unit::tflops, {"gpus.bf16_tflops", "gpus.fp8_tflops", "gpus.fp4_tflops"}},
          {unit::count, {"gpus.nvlink_domain", "gpus.server_gpus"}},
          {unit::source, {"gpus.source"}}};
}

unit_map compare_units() {
  return {
      {unit::tokens, {"length"}},
      {unit::count, {"models.layers"}},
      {unit::params, {"models.total_params", "models.active_params"}},
      {unit::flops,
       {"models.prefill_flops", "models.decode_flops", "models.decode_interaction_flops"}},
      {unit::bytes, {"models.bf16_bytes", "models.state_bytes", "models.selected_expert_bytes"}}};
}

unit_map sweep_units() {
  return {{unit::tokens, {"points.length"}},
          {unit::bytes,
           {"points.state_bytes", "points.decode_read_bytes", "points.decode_state_rw_bytes"}},
          {unit::flops, {"points.decode_flops", "points.decode_interaction_flops"}}};
}

unit_map check_units() { return {{unit::count, {"claims", "passed", "failed", "open"}}}; }

unit_map validate_units() {
  return {{unit::count,
           {"scale", "decode_steps", "hidden", "vocab", "scaled_layers.layers", "checks.predicted",
            "checks.measured", "cuda_ceilings.repeats"}},
          {unit::tokens, {"length"}},
          {unit::error_measure,
           {"equivalences.nmse", "equivalences.max_abs_error", "equivalences.tolerance",
            "cuda_timed.of_read_ceiling", "cuda_timed.time_over_roofline",
            "cuda_timed.achieved_gb_s", "cuda_timed.achieved_tflop_s"}},
          {unit::bytes, {"cuda_timed.predicted_bytes"}},
          {unit::microseconds,
           {"cuda_ceilings.median_us", "cuda_timed.median_us", "cuda_timed.roofline_us"}}};
}

}  // namespace

const unit_map& units_of(std::string_view command) {
  static const std::map<std::string, unit_map, std::less<>> table = {
      {"state", state_units()},
      {"forward", forward_units()},
      {"params", params_units()},
      {"request", request_units()},
      {"crossover", crossover_units()},
      {"experts", experts_units()},
      {"layers", layers_units()},
      {"capacity", capacity_units()},
      {"plan", plan_units()},
      {"roofline", roofline_units()},
      {"speculative", speculative_units()},
      {"models", models_units()},
      {"gpus", gpus_units()},
      {"compare", compare_units()},
      {"sweep", sweep_units()},
      {"check", check_units()},
      {"validate", validate_units()}};
  static const unit_map none;
  auto it = table.find(command);
  return it == table.end() ? none : it->second;
}

}  // namespace calc::cli
