#pragma once

// The machines a layout is planned for: how many GPUs, how they sit in nodes, what each holds and
// how fast the links inside a node and between nodes move a collective's bytes. Ranks are laid out
// in Megatron's order (tensor-parallel innermost, then context-parallel, data-parallel and
// pipeline), so a group's link follows from its stride: a group whose ranks all sit in one node
// talks over the node's link, any other over the network.

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "schedule/profile_costs.h"

namespace stagecut {

/// One machine room: G GPUs in nodes of `gpus_per_node`, each with `memory_bytes`, the link
/// inside a node (NVLink) and between nodes (one NIC per GPU), and the GPU's dense bf16 peak
/// for MFU (0: not known, MFU is not printed).
struct Cluster {
  std::string name;      ///< the preset's name, or "custom"
  std::string gpu;       ///< "H100 SXM"; what a profile's device must name for MFU and for figures to mean time
  int gpus = 1;          ///< G
  int gpus_per_node = 8;
  std::uint64_t memory_bytes = 0;  ///< per GPU
  BoundaryLink intra_node;         ///< per GPU, one direction, as a ring collective sees it
  BoundaryLink inter_node;
  double peak_bf16_flops = 0.0;    ///< per GPU, dense

  /// The number of nodes, ceil(G / gpus_per_node).
  int nodes() const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
};

/// The named clusters `plan --cluster` knows, with what each assumes: "dgx-h100" (8 x H100 SXM
/// 80 GB, NVLink 4, 400 Gb/s InfiniBand per GPU), "dgx-h200" (141 GB), "dgx-a100" (8 x A100
/// 80 GB, NVLink 3, 200 Gb/s per GPU).
const std::vector<Cluster>& clusterPresets();

/// The preset called `name` with `gpus` GPUs. Throws Error (input) naming --cluster and the
/// nearest preset for an unknown name.
Cluster clusterPreset(const std::string& name, int gpus);

/// Checks the cluster can hold a layout at all: G >= 1, gpus_per_node >= 1, memory > 0, link
/// bandwidths > 0 and latencies >= 0. Throws Error (input) naming the flag otherwise.
void checkCluster(const Cluster& cluster);

/// The link a group of `size` ranks `stride` apart takes (stride 1: tensor parallel; tp: context
/// parallel; tp x cp: data parallel; tp x cp x dp: pipeline): the node's when the group's ranks
/// all sit in one node, the network's otherwise.
const BoundaryLink& groupLink(const Cluster& cluster, int stride, int size);

/// Whether `profile` was measured on the cluster's GPU (a CUDA device whose name holds the GPU's
/// model, "H100" of "H100 SXM"): then its times are the GPUs' and MFU means something; a CPU
/// profile priced against GPU links ranks layouts by the wrong costs.
bool profiledOnClusterGpu(const Profile& profile, const Cluster& cluster);

/// Whether a group of `size` ranks `stride` apart fits in one node.
bool groupInNode(const Cluster& cluster, int stride, int size);

}  // namespace stagecut
