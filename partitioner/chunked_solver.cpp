#include "partitioner/chunked_solver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

// Loads within this relative distance are equal: sums of the same costs in another order differ
// by rounding only.
constexpr double kRelativeTolerance = 1e-9;
// Dominance entries kept per (chunk, first layer): enough for the loads that recur in chains of
// identical blocks, few enough that a check stays cheap.
constexpr std::size_t kEntriesPerState = 48;

// The packing bound's slack for rounding in sums of layers: far inside kRelativeTolerance, so
// that a bound met by the best split proves it.
constexpr double kBoundSlack = 1e-12;

bool withinTolerance(double a, double b) { return std::abs(a - b) <= kRelativeTolerance * std::max(std::abs(a), std::abs(b)); }
bool above(double a, double b) { return a > b && !withinTolerance(a, b); }

class ChunkSearch {
 public:
  explicit ChunkSearch(const ChunkedProblem& problem)
      : problem_(problem),
        model_(*problem.chunks),
        placement_(problem.placement),
        chunk_count_(placement_.chunkCount()),
        layers_(model_.layerCount()),
        load_(static_cast<std::size_t>(placement_.ranks), 0.0),
        ends_(static_cast<std::size_t>(chunk_count_), 0),
        terms_(static_cast<std::size_t>(placement_.ranks),
               std::vector<StageMemoryTerms>(static_cast<std::size_t>(placement_.chunks_per_rank))),
        memo_(static_cast<std::size_t>(chunk_count_) * static_cast<std::size_t>(layers_ + 1)) {
    for (int r = 0; r < placement_.ranks; ++r) {
      const double speed = model_.costs().stage_speed[static_cast<std::size_t>(placement_.chunkAt(r, 0))];
      speed_.push_back(speed);
      speed_sum_ += speed;
      fastest_ = std::max(fastest_, speed);
    }
  }

  ChunkedSplit run() {
    ChunkedSplit result;
    tabulateLeastWork();
    const auto& compute = model_.costs().compute_ms;
    result.lower_bound_ms =
        std::max(least_work_[0] / speed_sum_, *std::max_element(compute.begin(), compute.end()) / fastest_);
    greedyStart(result.lower_bound_ms);
    if (!best_ends_.empty()) {
      // The greedy start's pacing cannot foresee a heavy last chunk.
      best_ends_ = descended(best_ends_, &best_load_, &best_chunk_);
      result.lower_bound_ms = std::max(result.lower_bound_ms, packingBound(result.lower_bound_ms));
    }
    visit(0, 0, 0.0);
    if (best_ends_.empty()) {
      throw Error(aborted_ ? "no chunking into " + std::to_string(chunk_count_) + " chunks found within " +
                                 std::to_string(problem_.node_budget) + " search nodes; relax --memory-cap"
                           : "no chunking into " + std::to_string(chunk_count_) + " chunks fits " +
                                 (hasCaps() ? "the memory caps and " : std::string()) +
                                 "the framework's rules; use fewer --chunks or --stages" +
                                 (hasCaps() ? ", or a larger --memory-cap" : std::string()));
    }
    result.layers_per_chunk = chunkSizes(best_ends_);
    result.bottleneck_ms = best_load_;
    result.largest_chunk_ms = best_chunk_;
    // A search cut short still proves its slowest rank when that equals the packing bound.
    result.search_complete = !aborted_;
    result.exact = result.search_complete || !above(best_load_, result.lower_bound_ms);
    if (result.exact) result.lower_bound_ms = std::max(result.lower_bound_ms, best_load_);
    result.nodes = nodes_;
    return result;
  }

 private:
  struct Entry {
    std::vector<double> load;
    double largest_chunk;
  };

  bool hasCaps() const { return problem_.memory.table != nullptr; }

  static std::vector<int> chunkSizes(const std::vector<int>& ends) {
    std::vector<int> sizes;
    int first = 0;
    for (int end : ends) {
      sizes.push_back(end - first + 1);
      first = end + 1;
    }
    return sizes;
  }

  std::size_t stateKey(int chunk, int first) const {
    return static_cast<std::size_t>(chunk) * static_cast<std::size_t>(layers_ + 1) + static_cast<std::size_t>(first);
  }

  // least_work_[(c, p)]: the least work (cost x speed: compute and messages) of chunks c.. over
  // layers p.., as the cuts allow: all ranks together do at least this much more.
  void tabulateLeastWork() {
    least_work_.assign(memo_.size(), std::numeric_limits<double>::infinity());
    for (int first = layers_ - 1; first >= 0; --first) {
      const int c = chunk_count_ - 1;
      least_work_[stateKey(c, first)] = chunkMs(c, first, layers_ - 1) * chunkSpeed(c);
    }
    for (int c = chunk_count_ - 2; c >= 0; --c) {
      for (int first = layers_ - (chunk_count_ - c); first >= c; --first) {
        double least = std::numeric_limits<double>::infinity();
        for (int end = first; end <= lastEnd(c); ++end) {
          if (!mayEnd(c, end)) continue;
          least = std::min(least, chunkMs(c, first, end) * chunkSpeed(c) + least_work_[stateKey(c + 1, end + 1)]);
        }
        least_work_[stateKey(c, first)] = least;
      }
    }
  }

  // A bound that counts what each rank can hold rather than the average: the layers as items
  // shared out among the ranks, each rank's compute within T x its speed (contiguity dropped, the
  // layers the cuts force onto the first and last chunk kept there, messages at their cheapest). Rank r holds at
  // most k free layers, k how many of the smallest fit its room, and at most min(room, the k
  // largest) of their compute, so T is too small when the ranks together cannot hold the chain's
  // layers or its compute. Against the average this sees that 80 equal blocks and a head heavier
  // than a block cannot keep 8 ranks under 11 blocks.
  // The least T that passes, by bisection from `below` (too small or equal) to the best found.
  double packingBound(double below) const {
    int head_end = 0;
    while (!model_.canEndAt(head_end)) ++head_end;
    int tail_first = layers_ - 1;
    while (tail_first > head_end + 1 && !model_.canEndAt(tail_first - 1)) --tail_first;
    std::vector<double> forced(speed_.size(), 0.0);
    forced[static_cast<std::size_t>(placement_.rankOf(0))] += model_.computeMs(0, head_end);
    if (tail_first > head_end) {
      forced[static_cast<std::size_t>(placement_.rankOf(chunk_count_ - 1))] += model_.computeMs(tail_first, layers_ - 1);
    }
    std::vector<double> free_layers;
    for (int layer = head_end + 1; layer < tail_first; ++layer) free_layers.push_back(model_.computeMs(layer, layer));
    std::sort(free_layers.begin(), free_layers.end());
    std::vector<double> smallest_sum{0.0}, largest_sum{0.0};
    for (std::size_t i = 0; i < free_layers.size(); ++i) {
      smallest_sum.push_back(smallest_sum.back() + free_layers[i]);
      largest_sum.push_back(largest_sum.back() + free_layers[free_layers.size() - 1 - i]);
    }
    // Each chunk sends and receives at its ends but the chain's and a V's turn, at least the
    // cheapest message.
    double least_message = 0.0;
    int messages = 0;
    if (model_.hasCommunication()) {
      least_message = std::numeric_limits<double>::infinity();
      for (int end = head_end; end < tail_first; ++end) {
        if (model_.canEndAt(end)) least_message = std::min(least_message, model_.commOutMs(end));
      }
      for (int boundary = 0; boundary + 1 < chunk_count_; ++boundary) {
        if (!placement_.crossesRanks(boundary)) continue;
        forced[static_cast<std::size_t>(placement_.rankOf(boundary))] += least_message;
        forced[static_cast<std::size_t>(placement_.rankOf(boundary + 1))] += least_message;
        messages += 2;
      }
    }
    const double total = model_.totalComputeMs() + (messages > 0 ? messages * least_message : 0.0);
    const auto holds_chain = [&](double slowest) {
      double held = 0.0;
      std::size_t count = 0;
      for (std::size_t r = 0; r < speed_.size(); ++r) {
        const double room = slowest * speed_[r] - forced[r];
        if (above(forced[r], slowest * speed_[r])) return false;
        const auto fitting = std::upper_bound(smallest_sum.begin(), smallest_sum.end(), std::max(room, 0.0) * (1.0 + kBoundSlack)) - smallest_sum.begin() - 1;
        held += forced[r] + std::min(std::max(room, 0.0), largest_sum[static_cast<std::size_t>(fitting)]);
        count += static_cast<std::size_t>(fitting);
      }
      return count >= free_layers.size() && !above(total, held);
    };
    double low = below, high = best_load_;
    if (holds_chain(low)) return low;
    for (int step = 0; step < 100 && high - low > kBoundSlack * high; ++step) {
      const double middle = 0.5 * (low + high);
      (holds_chain(middle) ? high : low) = middle;
    }
    return low;
  }

  double chunkMs(int chunk, int first, int last) const { return chunkCostMs(model_, placement_, chunk, first, last); }

  double chunkSpeed(int chunk) const { return speed_[static_cast<std::size_t>(placement_.rankOf(chunk))]; }

  // Whether a chunking whose slowest rank and largest chunk are at least (load, chunk) can beat
  // the best: the slowest rank first, then the largest chunk.
  bool canImprove(double load, double chunk) const {
    if (best_ends_.empty()) return true;
    if (withinTolerance(load, best_load_)) return chunk < best_chunk_ && !withinTolerance(chunk, best_chunk_);
    return load < best_load_;
  }

  // Whether rank `rank`'s placed chunks fit its cap: the whole timeline once its last chunk is
  // placed, before that the state it holds all step (weights, gradients, optimizer), which only grows.
  bool fitsCap(int rank, bool complete) const {
    if (!hasCaps()) return true;
    const std::size_t r = static_cast<std::size_t>(rank);
    if (complete) return chunkedRankPeakBytes(problem_.memory, rank, terms_[r]) <= problem_.memory.rank_cap_bytes[r];
    double held = 0.0;
    for (const StageMemoryTerms& terms : terms_[r]) held += terms.weights + terms.gradients + terms.optimizer;
    return held <= problem_.memory.rank_cap_bytes[r];
  }

  bool lastOfRank(int chunk) const { return placement_.localOf(chunk) + 1 == placement_.chunks_per_rank; }

  // Chunk `chunk` holds first..last (first > last: nothing) as far as its rank's memory goes.
  void place(int chunk, int first, int last) {
    if (!hasCaps()) return;
    const std::size_t r = static_cast<std::size_t>(placement_.rankOf(chunk));
    const std::size_t local = static_cast<std::size_t>(placement_.localOf(chunk));
    terms_[r][local] = first <= last ? problem_.memory.table->terms(first, last) : StageMemoryTerms{};
  }

  // The last layer chunk `chunk` starting at `first` may end at, leaving one layer per later chunk.
  int lastEnd(int chunk) const { return chunk + 1 == chunk_count_ ? layers_ - 1 : layers_ - 1 - (chunk_count_ - chunk - 1); }

  bool mayEnd(int chunk, int end) const { return chunk + 1 == chunk_count_ ? end == layers_ - 1 : model_.canEndAt(end); }

  // A first incumbent: each chunk fills its rank up to an even pace toward `target`, for targets
  // from the lower bound up; the best complete chunking that fits the caps. A rank over its cap
  // gets a smaller share of the target and the same target is tried again, so that the others
  // take the layers it cannot hold.
  void greedyStart(double lower_bound) {
    for (int step = 0; step <= 200; ++step) {
      const double target = lower_bound * (1.0 + 0.005 * step);
      std::vector<double> share(load_.size(), 1.0);
      for (int retry = 0; retry <= (hasCaps() ? 40 : 0); ++retry) {
        std::vector<int> over_cap;
        pacedChunking(target, share, &over_cap);
        if (over_cap.empty()) break;
        for (int rank : over_cap) share[static_cast<std::size_t>(rank)] *= 0.97;
      }
    }
    for (auto& ranks : terms_) std::fill(ranks.begin(), ranks.end(), StageMemoryTerms{});
  }

  // One paced chunking (rank r's pace: target x share[r]); kept when it is the best so far. Ranks
  // whose memory does not fit go to `over_cap`.
  void pacedChunking(double target, const std::vector<double>& share, std::vector<int>* over_cap) {
    const int v = placement_.chunks_per_rank;
    std::vector<double> load(load_.size(), 0.0);
    std::vector<int> ends;
    double largest = 0.0;
    int first = 0;
    for (int c = 0; c < chunk_count_; ++c) {
      const std::size_t r = static_cast<std::size_t>(placement_.rankOf(c));
      const double pace = target * share[r] * (placement_.localOf(c) + 1) / v;
      int chosen = -1;
      for (int end = first; end <= lastEnd(c); ++end) {
        if (!mayEnd(c, end)) continue;
        if (chosen >= 0 && load[r] + chunkMs(c, first, end) > pace) break;
        place(c, first, end);
        if (chosen >= 0 && !fitsCap(placement_.rankOf(c), lastOfRank(c))) break;
        chosen = end;
      }
      if (chosen < 0) return;
      const double cost = chunkMs(c, first, chosen);
      load[r] += cost;
      largest = std::max(largest, cost);
      ends.push_back(chosen);
      place(c, first, chosen);
      first = chosen + 1;
    }
    for (int r = 0; r < placement_.ranks; ++r) {
      if (!fitsCap(r, true)) over_cap->push_back(r);
    }
    const double slowest = *std::max_element(load.begin(), load.end());
    if (over_cap->empty() && canImprove(slowest, largest)) {
      best_load_ = slowest;
      best_chunk_ = largest;
      best_ends_ = ends;
    }
  }

  // The ranks' loads of a chunking given by its ends, slowest first, and its largest chunk.
  std::vector<double> sortedLoads(const std::vector<int>& ends, double* largest) const {
    std::vector<double> load(load_.size(), 0.0);
    *largest = 0.0;
    for (int c = 0, first = 0; c < chunk_count_; first = ends[static_cast<std::size_t>(c)] + 1, ++c) {
      const double cost = chunkMs(c, first, ends[static_cast<std::size_t>(c)]);
      load[static_cast<std::size_t>(placement_.rankOf(c))] += cost;
      *largest = std::max(*largest, cost);
    }
    std::sort(load.begin(), load.end(), std::greater<double>());
    return load;
  }

  // `ends` after one-boundary moves while they make the ranks' loads, slowest first, lighter
  // (its slowest rank never grows); `largest` its largest chunk.
  std::vector<int> descended(std::vector<int> ends, double* slowest, double* largest_out) {
    double largest = 0.0;
    std::vector<double> loads = sortedLoads(ends, &largest);
    const auto lighter = [](const std::vector<double>& a, const std::vector<double>& b) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (!withinTolerance(a[i], b[i])) return a[i] < b[i];
      }
      return false;
    };
    const auto fits = [&](const std::vector<int>& candidate) {
      if (!hasCaps()) return true;
      for (int c = 0, first = 0; c < chunk_count_; first = candidate[static_cast<std::size_t>(c)] + 1, ++c) {
        place(c, first, candidate[static_cast<std::size_t>(c)]);
      }
      bool all = true;
      for (int r = 0; r < placement_.ranks && all; ++r) all = fitsCap(r, true);
      return all;
    };
    for (bool moved = true; moved;) {
      moved = false;
      for (int c = 0; c + 1 < chunk_count_; ++c) {
        for (const int step : {-1, 1}) {
          std::vector<int> candidate = ends;
          int& end = candidate[static_cast<std::size_t>(c)];
          end += step;
          const int first = c == 0 ? 0 : candidate[static_cast<std::size_t>(c) - 1] + 1;
          if (end < first || end >= candidate[static_cast<std::size_t>(c) + 1] || !model_.canEndAt(end)) continue;
          double candidate_largest = 0.0;
          const std::vector<double> candidate_loads = sortedLoads(candidate, &candidate_largest);
          if (!lighter(candidate_loads, loads) || !fits(candidate)) continue;
          ends = candidate;
          loads = candidate_loads;
          largest = candidate_largest;
          moved = true;
        }
      }
    }
    *slowest = loads.front();
    *largest_out = largest;
    for (auto& ranks : terms_) std::fill(ranks.begin(), ranks.end(), StageMemoryTerms{});
    return ends;
  }

  bool dominated(std::size_t key, double largest_chunk) const {
    for (const Entry& entry : memo_[key]) {
      if (entry.largest_chunk > largest_chunk) continue;
      bool all = true;
      for (std::size_t r = 0; r < load_.size() && all; ++r) all = entry.load[r] <= load_[r];
      if (all) return true;
    }
    return false;
  }

  void visit(int chunk, int first, double largest_chunk) {
    if (aborted_) return;
    if (++nodes_ > problem_.node_budget) {
      aborted_ = true;
      return;
    }
    double slowest = 0.0, weighted = 0.0;
    for (std::size_t r = 0; r < load_.size(); ++r) {
      slowest = std::max(slowest, load_[r]);
      weighted += load_[r] * speed_[r];
    }
    if (chunk == chunk_count_) {
      if (canImprove(slowest, largest_chunk)) {
        best_load_ = slowest;
        best_chunk_ = largest_chunk;
        best_ends_ = ends_;
      }
      return;
    }
    const double bound = std::max(slowest, (weighted + least_work_[stateKey(chunk, first)]) / speed_sum_);
    if (!canImprove(bound, largest_chunk)) return;
    const std::size_t key = stateKey(chunk, first);
    if (!hasCaps() && dominated(key, largest_chunk)) return;

    const int rank = placement_.rankOf(chunk);
    const std::size_t r = static_cast<std::size_t>(rank);
    // The longest chunk whose compute alone keeps the rank within the best; then longest first.
    int longest = first;
    for (int end = first; end <= lastEnd(chunk); ++end) {
      if (!best_ends_.empty() && above(load_[r] + model_.computeMs(first, end) / speed_[r], best_load_)) break;
      longest = end;
    }
    for (int end = longest; end >= first; --end) {
      if (!mayEnd(chunk, end)) continue;
      const double cost = chunkMs(chunk, first, end);
      const double chunk_max = std::max(largest_chunk, cost);
      if (!canImprove(std::max(slowest, load_[r] + cost), chunk_max)) continue;
      place(chunk, first, end);
      if (fitsCap(rank, lastOfRank(chunk))) {
        load_[r] += cost;
        ends_[static_cast<std::size_t>(chunk)] = end;
        visit(chunk + 1, end + 1, chunk_max);
        load_[r] -= cost;
      }
      place(chunk, 1, 0);
      if (aborted_) return;
    }
    if (!hasCaps()) {
      std::vector<Entry>& entries = memo_[key];
      if (entries.size() < kEntriesPerState) entries.push_back(Entry{load_, largest_chunk});
    }
  }

  const ChunkedProblem& problem_;
  const CostModel& model_;
  Placement placement_;
  int chunk_count_;
  int layers_;
  std::vector<double> load_;
  std::vector<double> speed_;
  double speed_sum_ = 0.0;
  double fastest_ = 0.0;
  std::vector<int> ends_;
  std::vector<std::vector<StageMemoryTerms>> terms_;  // per rank, per local chunk placed (with caps)
  std::vector<std::vector<Entry>> memo_;        // per (chunk, first layer): explored states
  std::vector<double> least_work_;              // per (chunk, first layer)
  std::vector<int> best_ends_;
  double best_load_ = std::numeric_limits<double>::infinity();
  double best_chunk_ = std::numeric_limits<double>::infinity();
  std::int64_t nodes_ = 0;
  bool aborted_ = false;
};

}  // namespace

double chunkedRankPeakBytes(const ChunkedMemory& memory, int rank, const std::vector<StageMemoryTerms>& terms) {
  double peak = 0.0;
  for (const std::vector<MemoryState>& states : memory.rank_states[static_cast<std::size_t>(rank)]) {
    peak = std::max(peak, rankStateParts(states, terms).total());
  }
  return peak;
}

double chunkCommMs(const CostModel& model, const Placement& placement, int chunk, int first, int last) {
  const bool receives = chunk > 0 && placement.crossesRanks(chunk - 1);
  const bool sends = chunk + 1 < placement.chunkCount() && placement.crossesRanks(chunk);
  return (receives ? model.commInMs(first) : 0.0) + (sends ? model.commOutMs(last) : 0.0);
}

double chunkCostMs(const CostModel& model, const Placement& placement, int chunk, int first, int last) {
  // Chunked splits run without recomputation or an all-reduce (chunkPlacement refuses them), so
  // a chunk's cost is its compute and messages over its speed, as stageCostMs prices a stage.
  return (model.computeMs(first, last) + chunkCommMs(model, placement, chunk, first, last)) /
         model.costs().stage_speed[static_cast<std::size_t>(chunk)];
}

namespace {

// Whether the chunking of `layers_per_chunk` keeps every rank within its cap.
bool fitsEveryCap(const ChunkedProblem& problem, const std::vector<int>& layers_per_chunk) {
  const Placement& placement = problem.placement;
  std::vector<std::vector<StageMemoryTerms>> terms(
      static_cast<std::size_t>(placement.ranks),
      std::vector<StageMemoryTerms>(static_cast<std::size_t>(placement.chunks_per_rank)));
  int first = 0;
  for (int c = 0; c < placement.chunkCount(); ++c) {
    const int last = first + layers_per_chunk[static_cast<std::size_t>(c)] - 1;
    terms[static_cast<std::size_t>(placement.rankOf(c))][static_cast<std::size_t>(placement.localOf(c))] =
        problem.memory.table->terms(first, last);
    first = last + 1;
  }
  for (int r = 0; r < placement.ranks; ++r) {
    const std::size_t rank = static_cast<std::size_t>(r);
    if (chunkedRankPeakBytes(problem.memory, r, terms[rank]) > problem.memory.rank_cap_bytes[rank]) return false;
  }
  return true;
}

}  // namespace

ChunkedSplit solveChunkedSplit(const ChunkedProblem& problem) {
  const int chunks = problem.placement.chunkCount();
  if (problem.chunks->stageCount() != chunks) {
    throw Error("chunked split: the cost model prices " + std::to_string(problem.chunks->stageCount()) +
                " chunks, the placement holds " + std::to_string(chunks));
  }
  if (problem.chunks->layerCount() < chunks) {
    throw Error("--chunks: " + std::to_string(problem.placement.ranks) + " stages x " +
                std::to_string(problem.placement.chunks_per_rank) + " chunks need " + std::to_string(chunks) +
                " layers, the profile has " + std::to_string(problem.chunks->layerCount()) +
                "; use fewer --chunks or --stages");
  }
  if (problem.memory.table != nullptr) {
    // No chunking under the caps beats the best without them: where that one fits, it is the
    // answer. The search without caps prunes by dominance, which the caps' memory rules out, so
    // this is the fast way to the common case of caps that do not bind.
    ChunkedProblem uncapped = problem;
    uncapped.memory = ChunkedMemory{};
    ChunkedSplit free_best = ChunkSearch(uncapped).run();
    if (free_best.search_complete && fitsEveryCap(problem, free_best.layers_per_chunk)) return free_best;
  }
  return ChunkSearch(problem).run();
}

}  // namespace stagecut
