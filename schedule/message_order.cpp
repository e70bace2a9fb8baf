#include "schedule/message_order.h"

#include <map>
#include <tuple>
#include <vector>

namespace stagecut {

namespace {

// Between one sender and one receiver, one kind of tensor (activations or input gradients): the
// ops whose tensor travels, in the order the sender sends them and the order the receiver waits
// for them.
struct Channel {
  std::vector<PipelineOp> sent;
  std::vector<PipelineOp> received;
};

std::string ordinal(std::size_t index) {
  const std::size_t n = index + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

std::string tensorOf(const PipelineOp& op, const Placement& placement) {
  return describeOp(op, placement) + (op.kind == OpKind::kForward ? "'s activation" : "'s input gradient");
}

}  // namespace

std::optional<std::string> firstMessageOrderMismatch(const Schedule& schedule) {
  const int model_stages = schedule.placement.chunkCount();
  const Placement placement = schedule.placement;
  // Keyed by (sender, receiver, what travels: F for activations, B for input gradients).
  std::map<std::tuple<int, int, OpKind>, Channel> channels;
  for (int rank = 0; rank < static_cast<int>(schedule.ranks.size()); ++rank) {
    for (const PipelineOp& op : schedule.ranks[rank]) {
      if (op.kind != OpKind::kForward && op.kind != OpKind::kBackward) continue;
      const int stage = schedule.placement.chunkAt(rank, op.chunk);
      // F sends its output down the chain and waits for its input from up it; B the reverse.
      const int to = op.kind == OpKind::kForward ? stage + 1 : stage - 1;
      const int from = op.kind == OpKind::kForward ? stage - 1 : stage + 1;
      // Between two chunks of one rank (a V placement's turn) nothing travels.
      if (to >= 0 && to < model_stages && placement.rankOf(to) != rank) {
        channels[{rank, placement.rankOf(to), op.kind}].sent.push_back(op);
      }
      if (from >= 0 && from < model_stages && placement.rankOf(from) != rank) {
        channels[{placement.rankOf(from), rank, op.kind}].received.push_back(op);
      }
    }
  }
  for (const auto& [ends, channel] : channels) {
    const int sender = std::get<0>(ends);
    const int receiver = std::get<1>(ends);
    const std::size_t common = std::min(channel.sent.size(), channel.received.size());
    for (std::size_t k = 0; k <= common; ++k) {
      const bool sent_more = k < channel.sent.size();
      const bool received_more = k < channel.received.size();
      if (k == common && sent_more == received_more) break;
      // A channel carries one kind of tensor; the receiver's op is the one of the same
      // microbatch on the next (or previous) model stage.
      if (sent_more && received_more && channel.sent[k].microbatch == channel.received[k].microbatch) continue;
      const std::string who = "rank " + std::to_string(sender);
      const std::string whom = "rank " + std::to_string(receiver);
      if (!received_more) {
        return who + " sends " + tensorOf(channel.sent[k], placement) + " to " + whom + " as its " + ordinal(k) +
               " message to it, which " + whom + " never receives";
      }
      if (!sent_more) {
        return whom + "'s " + ordinal(k) + " receive from " + who + " waits for " +
               tensorOf(channel.received[k], placement) + ", which " + who + " never sends";
      }
      return who + " sends " + tensorOf(channel.sent[k], placement) + " to " + whom + " as its " + ordinal(k) +
             " message to it, where " + whom + "'s " + ordinal(k) + " receive from " + who + " is " +
             tensorOf(channel.received[k], placement);
    }
  }
  return std::nullopt;
}

}  // namespace stagecut
