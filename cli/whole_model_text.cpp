#include "cli/whole_model_text.h"

namespace stagecut {

std::string wholeModelScope(const Profile& profile) {
  if (!profile.whole_model || profile.whole_model->window.size() != 2) return "";
  const auto& window = profile.whole_model->window;
  const auto name = [&](int index) {
    return static_cast<std::size_t>(index) < profile.layers.size() ? profile.layers[index].name : std::to_string(index);
  };
  return " of layers " + std::to_string(window[0]) + "-" + std::to_string(window[1]) + " (" + name(window[0]) + " to " +
         name(window[1]) + "), the longest run that fit in memory";
}

}  // namespace stagecut
