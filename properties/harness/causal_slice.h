#pragma once
// The causal slice of a finding: the events that touched the request, blocks or job the finding
// names, and the trace events that started them (the arrivals, aborts and faults of every request
// the slice involves). `kvsim explain` prints it; `kvsim run --html` filters the page to it.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"

namespace kvsim {

struct CausalSlice {
    // What the finding names.
    std::string request;
    IdList blocks;
    std::optional<std::int64_t> job;
    // A finding that names none of these (liveness): the requests still alive at the end.
    std::set<std::string> unfinished;
    // Indices into RunResult::events and Trace::events, in order.
    std::vector<std::size_t> events;
    std::vector<std::size_t> trace_events;
    std::set<std::string> requests;  // every request the slice involves
};

// Whether `event` touches the request, one of the blocks, the job, or an unfinished request.
bool touches(const LogEvent& event, const CausalSlice& names);

CausalSlice causal_slice(const Trace& trace, const RunResult& result, const Finding& finding);

// A dozen lines to paste into an upstream issue: the finding, the upstream assertion or
// invariant, the trace lines that started it, the events of the slice (the middle elided past
// `max_events`), `settings` (settings_text's lines, or none), and the command that reproduces it.
std::string explain_text(const Trace& trace, const RunResult& result, const CausalSlice& slice,
                         std::string_view trace_path, std::string_view variant, std::size_t max_events = 12,
                         std::string_view settings = {});

// What `kvsim explain` prints for a run: explain_text over its first finding's causal slice, with the
// trace's settings against upstream's defaults for the variant (settings_view.h) before the repro line.
std::string explain_run(const Trace& trace, const RunResult& result, std::string_view trace_path,
                        const Variant& variant, std::size_t max_events = 12);

}  // namespace kvsim
