#pragma once
// A run's typed results as JSON (nlohmann-json): each event-log entry as one object (step,
// category and its typed fields: `kvsim run --log-format jsonl`), each finding, and the whole
// result (`kvsim run --json`, which adds the trace, variant, expectation and repro command).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/harness/run_trace.h"

namespace kvsim {

using Json = nlohmann::ordered_json;

Json event_json(const LogEvent& event);
// One JSON object per line, in log order.
std::string events_jsonl(const std::vector<LogEvent>& events);
Json finding_json(const Finding& finding);
// verdict ("internal-error" for kvsim's own failure), signature, message, steps, digest (16 hex
// digits, as in the verdict line), internal_error, findings, crash, lifecycle_edges.
Json run_result_json(const RunResult& result);

}  // namespace kvsim
