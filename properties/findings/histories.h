#pragma once
// Named request histories: the registry's `history NAME` conditions, each a predicate over the
// trace and the run's typed events that a flat event condition cannot state (an order of events
// for one request, a count over steps).
#include <string_view>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"

namespace kvsim {

// self_reserved_after_failed_load: an unfinished request lost its whole async load, was promoted
//   with nothing computed, and from then on only asks the store again (async lookups), never
//   parked or admitted (its stale _inflight_prefills entry reserves the blocks it needs);
// loaded_but_never_promoted: an unfinished request finished an async load (recv_done) and was
//   never promoted after it;
// repeated_whole_batch_preemption: at least two steps preempted the whole running batch and
//   scheduled nothing.
// An unknown name holds nowhere (the parser rejects it).
bool history_holds(std::string_view name, const Trace& trace, const std::vector<LogEvent>& events);

}  // namespace kvsim
