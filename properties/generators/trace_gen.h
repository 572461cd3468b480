#pragma once
// RapidCheck generators for kvsim traces, small and composable (tests/README.md, Property tests).
//
// Each generator builds one record of trace_spec.h; gen_trace() assembles them into a
// TraceSpec and maps it through build_trace(), which yields a valid trace for every spec. So
// RapidCheck shrinks the records (fewer requests, segments, store lines and faults; smaller
// numbers; flags back to the engine defaults) and every shrunk candidate is still a valid
// trace. A counterexample prints as trace text (showValue below), ready to save and replay
// with `kvsim run FILE --variant V`.
#include <algorithm>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "properties/generators/trace_spec.h"
#include "sim/trace/trace.h"

namespace kvsim {

// RapidCheck's printer for a Trace: the canonical trace text (print_trace), so a
// counterexample is a trace file.
void showValue(const Trace& trace, std::ostream& os);

namespace propgen {

void showValue(const TraceSpec& spec, std::ostream& os);  // as the trace it builds

// What a suite lets the generators draw from. The defaults cover the whole space.
struct GenOptions {
    std::vector<ConnectorStack> stacks = {ConnectorStack::store, ConnectorStack::p2p, ConnectorStack::store_p2p,
                                          ConnectorStack::p2p_store};
    std::vector<KvRole> roles = {KvRole::kv_consumer, KvRole::kv_both, KvRole::kv_producer};
    int max_requests = 6;
    int max_segments = 4;
    int max_store_lines = 3;
    int max_faults = 3;
    bool aborts = true;
    bool faults = true;
};

// Engine sizes from roomy to starved: pressure 3 leaves room for one request at a time, so
// preemption and allocation failures happen; small budgets and thresholds chunk prefills.
rc::Gen<EngineRec> gen_engine();
// A role from `roles` (shrinks towards the first).
rc::Gen<KvRole> gen_role(const std::vector<KvRole>& roles);
// MooncakeStoreConnector kv_connector_extra_config.
rc::Gen<StoreOptionsRec> gen_store_options();
// The connector stack and its roles.
rc::Gen<StackRec> gen_stack(const GenOptions& options);
// Ranks and delay ranges (store jobs up to ~14 steps, so preemption overtakes in-flight saves).
rc::Gen<WorkersRec> gen_workers();
// The shared segment pool (1 .. max_segments segments of 0..3 blocks plus a partial tail).
rc::Gen<std::vector<SegmentRec>> gen_segments(int max_segments);
// A prompt: 1..4 segments from the pool, mostly starting with the pool's first segments.
rc::Gen<std::vector<int>> gen_prompt();
// One request with its arrival gap, output length, remote flags and an optional abort (in
// any lifecycle state: before its first schedule, waiting for remote KV, running,
// preempted, finished with a delayed free, gone).
rc::Gen<RequestRec> gen_request(bool aborts);
rc::Gen<std::vector<RequestRec>> gen_requests(int max_requests, bool aborts);
// Store contents: prefixes of the requests' prompts.
rc::Gen<std::vector<StoreRec>> gen_store_contents(int max_lines);
// Faults early in the run: store_delay, store_fail, load_fail, lookup_pending.
rc::Gen<FaultRec> gen_fault();
rc::Gen<std::vector<FaultRec>> gen_faults(int max_faults);
// The run's PRNG seed.
rc::Gen<std::uint64_t> gen_seed();

rc::Gen<TraceSpec> gen_trace_spec(const GenOptions& options = {});
// gen_trace_spec mapped through build_trace.
rc::Gen<Trace> gen_trace(const GenOptions& options = {});

// A vector of 0..max_len elements whose length grows with RapidCheck's size; elements are
// generated at the full size. Shrinks by dropping any element, then by shrinking elements.
template <class T>
rc::Gen<std::vector<T>> vector_upto(int max_len, rc::Gen<T> element) {
    return rc::gen::withSize([max_len, element](int size) {
        const int cap = std::max(0, std::min(max_len, (size * max_len + 99) / 100));
        return rc::gen::resize(cap, rc::gen::container<std::vector<T>>(rc::gen::resize(size, element)));
    });
}

}  // namespace propgen
}  // namespace kvsim
