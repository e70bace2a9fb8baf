#include "core/device_name.h"

namespace stagecut {

std::optional<DeviceName> parseDeviceName(const std::string& text) {
  if (text == "cpu") return DeviceName{};
  if (text == "cuda") return DeviceName{true, -1};
  const std::string prefix = "cuda:";
  if (text.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = text.substr(prefix.size());
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return DeviceName{true, std::stoi(digits)};
}

}  // namespace stagecut
