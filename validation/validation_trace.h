#pragma once

#include <string>

#include "validation/validation_report.h"

namespace stagecut {

/// A Chrome trace of a validation: the predicted and the measured step as processes, one track
/// per rank (and the other replicas' and the checkpointed run's steps when the run had them).
std::string validationTrace(const ValidationReport& report);

}  // namespace stagecut
