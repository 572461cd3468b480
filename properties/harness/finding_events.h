#pragma once
// A finding as the event-log entry that reports it (category crash, internal, violation or
// liveness), with the finding's fields.
#include "properties/checkers/finding.h"
#include "sim/common/event_log.h"

namespace kvsim {

void log_finding(EventLog& log, const Finding& finding);

}  // namespace kvsim
