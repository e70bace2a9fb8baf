#pragma once

// `stagecut plan PROFILE --gpus G --global-batch B`: the whole parallel layout for G GPUs
// (planner/layout_search.h), printed as a ranked table and the winner in the framework's words.

#include <string>

#include <CLI/CLI.hpp>

#include "cli/partition_flags.h"

namespace stagecut {

/// The flags of plan's layout mode, as typed.
struct LayoutPlanFlags {
  int gpus = 0;                     ///< --gpus: 0 plans microbatches of a fixed pipeline instead
  std::string cluster = "dgx-h100"; ///< --cluster: the preset the other flags override
  int gpus_per_node = 0;            ///< 0: the preset's
  std::string gpu_memory;           ///< e.g. 80GiB; empty: the preset's
  std::string intra_bandwidth, intra_latency, inter_bandwidth, inter_latency;
  std::string fix;                  ///< --fix tp=4,pp=8,v=5
  std::string format = "megatron";  ///< the framework planned for and printed
  std::string write_split;          ///< --write-split: the winner's split as a partition file
  int most_chunks = 8;
  int top = 10;
};

/// Registers --gpus and the cluster, --fix, --format, --most-chunks, --top and --write-split on
/// plan.
void addLayoutPlanFlags(CLI::App* command, LayoutPlanFlags& flags);

/// Runs plan's layout mode: the partition flags that shape one pipeline (--stages, --schedule,
/// --chunks, --data-parallel, --memory-cap, links, --recompute) are refused with the --fix or
/// cluster flag that says the same. Prints the table (or --json, and -o) on stdout.
void runLayoutPlan(const LayoutPlanFlags& flags, const PartitionFlags& partition, int global_batch,
                   const CLI::App& command);

}  // namespace stagecut
