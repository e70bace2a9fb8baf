#include "prediction/recompute.h"

#include <algorithm>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"

namespace stagecut {

std::string RecomputePolicy::text() const {
  switch (mode) {
    case Mode::kNone: return "none";
    case Mode::kFull: return "full";
    case Mode::kAuto:
    case Mode::kSelective: break;
  }
  std::string joined;
  for (const std::string& kind : kinds) joined += (joined.empty() ? "" : "+") + kind;
  if (mode == Mode::kAuto) return kinds.empty() ? "auto" : "auto:" + joined;
  return "selective:" + joined;
}

RecomputePolicy parseRecomputePolicy(const std::string& text, const Profile& profile) {
  RecomputePolicy policy;
  if (text == "none") return policy;
  if (text == "full") {
    policy.mode = RecomputePolicy::Mode::kFull;
    return policy;
  }
  if (text == "auto") {
    policy.mode = RecomputePolicy::Mode::kAuto;
    return policy;
  }
  const bool automatic = text.compare(0, 5, "auto:") == 0;
  const std::string prefix = automatic ? "auto:" : "selective:";
  std::vector<std::string> known;
  for (const LayerCost& layer : profile.layers) {
    if (!layer.kind.empty() && std::find(known.begin(), known.end(), layer.kind) == known.end()) {
      known.push_back(layer.kind);
    }
  }
  if (text.compare(0, prefix.size(), prefix) != 0) {
    const std::string mode = text.substr(0, text.find(':'));
    throw Error("--recompute " + text + ": unknown mode '" + mode + "'" +
                unknownNameHint(mode, {"none", "full", "auto", "selective"}) +
                " (selective takes layer kinds: selective:" +
                (known.empty() ? std::string("KIND") : known.back()) + ")");
  }
  policy.mode = automatic ? RecomputePolicy::Mode::kAuto : RecomputePolicy::Mode::kSelective;
  std::string rest = text.substr(prefix.size());
  std::replace(rest.begin(), rest.end(), '+', ',');
  std::vector<std::string> kinds = splitCommaList(rest);
  if (kinds.empty()) kinds.push_back("");
  for (const std::string& kind : kinds) {
    if (kind.empty()) {
      throw Error("--recompute " + text + ": an empty layer kind; name kinds like selective:" +
                  (known.empty() ? std::string("KIND") : known.back()) +
                  (known.size() > 1 ? "+" + known.front() : std::string()));
    }
    if (std::find(known.begin(), known.end(), kind) == known.end()) {
      if (known.empty()) {
        throw Error("--recompute " + text + ": the profile's layers carry no kinds; use " +
                    "--recompute full or auto");
      }
      throw Error("--recompute " + text + ": the profile has no layer of kind '" + kind + "'" +
                  unknownNameHint(kind, known));
    }
    if (std::find(policy.kinds.begin(), policy.kinds.end(), kind) == policy.kinds.end()) {
      policy.kinds.push_back(kind);
    }
  }
  return policy;
}

std::vector<RecomputeOption> recomputeOptions(const Profile& profile, const RecomputePolicy& policy) {
  auto option = [&](const std::string& name, auto recomputed) {
    RecomputeOption result{name, {}, {}};
    for (const LayerCost& layer : profile.layers) {
      const bool yes = recomputed(layer);
      result.recomputed.push_back(yes ? 1 : 0);
      result.extra_ms.push_back(yes ? layer.recomputeMedianMs() : 0.0);
    }
    return result;
  };
  const auto none = [](const LayerCost&) { return false; };
  const auto all = [](const LayerCost&) { return true; };
  switch (policy.mode) {
    case RecomputePolicy::Mode::kNone:
      return {option("none", none)};
    case RecomputePolicy::Mode::kFull:
      return {option("full", all)};
    case RecomputePolicy::Mode::kAuto:
    case RecomputePolicy::Mode::kSelective:
      break;
  }
  std::string joined;
  for (const std::string& kind : policy.kinds) joined += (joined.empty() ? "" : "+") + kind;
  const RecomputeOption selective = option("selective:" + joined, [&](const LayerCost& layer) {
    return std::find(policy.kinds.begin(), policy.kinds.end(), layer.kind) != policy.kinds.end();
  });
  if (policy.mode == RecomputePolicy::Mode::kSelective) return {selective};
  if (policy.kinds.empty()) return {option("none", none), option("full", all)};
  return {option("none", none), selective, option("full", all)};
}

RecomputeOption stageRecomputeOption(const Profile& profile, const std::string& mode) {
  const RecomputePolicy policy = parseRecomputePolicy(mode, profile);
  if (policy.mode == RecomputePolicy::Mode::kAuto) {
    throw Error("recompute \"" + mode + "\" is a policy, not a stage's mode; give none, full or " +
                "selective:<kinds>");
  }
  return recomputeOptions(profile, policy).front();
}

std::uint64_t stageKeptBytes(const Profile& profile, const RecomputeOption& option, int first, int last) {
  double kept = 0.0;
  for (int k = first; k <= last; ++k) {
    const auto layer = static_cast<std::size_t>(k);
    const bool recomputed = !option.recomputed.empty() && option.recomputed[layer];
    const bool run_starts = recomputed && (k == first || !option.recomputed[layer - 1]);
    const double input_bytes = k > 0 ? static_cast<double>(profile.layers[layer - 1].output_bytes) : 0.0;
    kept += keptBytesOfLayer(recomputed, run_starts, static_cast<double>(profile.layers[layer].activation_bytes),
                             input_bytes);
  }
  return static_cast<std::uint64_t>(kept);
}

double stageRecomputeMs(const RecomputeOption& option, int first, int last) {
  double extra_ms = 0.0;
  for (int k = first; k <= last && !option.extra_ms.empty(); ++k) {
    if (option.recomputed[static_cast<std::size_t>(k)]) extra_ms += option.extra_ms[static_cast<std::size_t>(k)];
  }
  return extra_ms;
}

}  // namespace stagecut
