#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/output_path.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"
#include "prediction/tensor_parallel_comm.h"

namespace stagecut {

/// The flags `partition` and `compare` share, as typed; resolved once the profile is read.
struct PartitionFlags {
  std::string profile_path;
  int microbatch_size = 0;  ///< --microbatch-size: one of a profile's measured sizes; 0: its layers' size
  CLI::Option* microbatch_size_option = nullptr;
  int stages = 0;
  CLI::Option* stages_option = nullptr;  ///< unset: from --split
  int microbatches = 0;
  CLI::Option* microbatches_option = nullptr;  ///< unset: 4 x stages
  std::string schedule = "1f1b";
  /// --chunks as typed: resolvePartitionFlags turns it into the options' Placement.
  int chunks_flag = kDefaultInterleavedChunks;
  CLI::Option* chunks_option = nullptr;  ///< given: the schedule must run chunks

  /// --chunks where it was given.
  std::optional<int> chunksGiven() const;
  std::string memory_cap;
  std::string bandwidth;
  std::string latency;
  std::string stage_speed;
  std::string optimizer = "adam";
  double bytes_per_param = 0.0;  ///< 0: from --optimizer
  bool recompute = false;          ///< a bare flag (the report command's): full recomputation
  std::string recompute_spec;      ///< --recompute none|full|auto|selective:<kinds>; wins when set
  int data_parallel = 1;           ///< --data-parallel D
  std::string dp_bandwidth = "100GB/s";  ///< --dp-bandwidth
  std::string dp_latency = "10us";       ///< --dp-latency
  std::string tp_bandwidth;              ///< --tp-bandwidth: the tensor-parallel ranks' link; empty: not priced
  std::string tp_latency;                ///< --tp-latency
  bool any_split = false;          ///< --any-split: the free optimum, no framework's rules
  std::string split_text;          ///< --split: the user's own split, in any printed form
  CLI::Option* split_option = nullptr;
  bool json = false;
  std::string output_path;
  CLI::Option* output_option = nullptr;  ///< -o, to tell `-o ''` from no -o

  /// -o as given (even empty), with the profile as the input it must not be; nullopt without -o.
  std::optional<OutputPath> output() const;
};

/// Registers the shared flags on `command`.
void addPartitionFlags(CLI::App* command, PartitionFlags& flags);

/// Registers --split (partition and compare): with it, --stages may be left out.
void addSplitFlag(CLI::App* command, PartitionFlags& flags);


/// One line: the rules the compute split obeys and who can run it.
std::string rulesNote(const PartitionOptions& options, const Profile& profile);

/// Checks and converts the flags against the profile. Throws Error (input) with the flag's
/// name for anything out of range or unparsable. `user_split`, when given, receives --split as
/// layers per stage (parseSplitText; empty without --split), which sets the stage count.
/// `user_placement`, when given, lets --split be a virtual-pipeline layout (its chunks in
/// `user_split`, its ranks and chunks per rank here, --chunks taken from it; the schedule must run
/// chunks); without it such a layout is refused.
PartitionOptions resolvePartitionFlags(const PartitionFlags& flags, const Profile& profile,
                                       std::vector<int>* user_split = nullptr, Placement* user_placement = nullptr);

/// The line that says how communication is modelled: "no communication cost modelled (...)" or
/// "communication: 25 GB/s, 10 us latency per message".
std::string communicationNote(const PartitionFlags& flags);

/// Registers --tp-bandwidth and --tp-latency (a tensor-parallel profile's collectives) on `command`.
void addTensorParallelLinkFlags(CLI::App* command, std::string& bandwidth, std::string& latency);

/// --tp-bandwidth and --tp-latency as a link; unset: bandwidth 0 (nothing priced). Throws Error
/// (input) naming the flag.
TensorParallelLink tensorParallelLink(const std::string& bandwidth, const std::string& latency);

/// The profile at `path` with a tensor-parallel profile's collectives priced on the flags' link
/// (prediction/tensor_parallel_comm.h), and the line that says what they cost, empty when none.
Profile readPricedProfile(const std::string& path, int microbatch_size, const std::string& tp_bandwidth,
                          const std::string& tp_latency, std::string* note);

/// One line: the schedule, microbatches, optimizer and caps the figures assume.
std::string assumptionsNote(const PartitionFlags& flags, const PartitionOptions& options);

}  // namespace stagecut
