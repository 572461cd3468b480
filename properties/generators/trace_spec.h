#pragma once
// A generated trace as small records that shrink well (RapidCheck shrinks each record towards
// its zero value and drops vector elements), and build_trace(), which maps ANY spec to a trace
// that validate_trace accepts: every rule of sim/trace/README.md holds by construction or by
// repair, never by rejection, so shrinking never hits an invalid trace.
//
// Conventions: every field's zero value is the "simple" choice (engine defaults, no faults,
// delay 1, ...), so a shrunk counterexample drifts towards a small, ordinary trace. Indices
// into pools (segments, requests) are taken modulo the pool size, so dropping a pool element
// keeps every other record meaningful.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace/trace.h"
#include "sim/trace/trace_builder.h"

namespace kvsim::propgen {

struct EngineRec {
    int block_size_index = 0;     // kBlockSizes
    int pressure = 0;             // PoolPressure 0 roomy .. 3 starved (num_blocks_for_largest)
    int slack = 0;                // blocks above the pressure level's floor
    int budget_index = 0;         // max_batched_tokens, kBudgets
    int max_running_index = 0;    // kMaxRunning
    int long_prefill_index = 0;   // long_prefill_threshold, kLongPrefill (0 = off)
    int model_len_slack = 0;      // 0: roomy max_model_len; k > 0: longest prompt + k (length caps bite)
    bool no_chunked_prefill = false;
    bool no_prefix_caching = false;
    bool no_reserve_full_isl = false;
    int load_failure_policy = 0;  // 0: unstated (the variant's default), 1: recompute, 2: fail
    int async_scheduling = 0;     // 0: unstated (the variant's default), 1: off, 2: on
};

// Loads are always asynchronous: upstream's store worker asserts load_async (rule store_load_async).
struct StoreOptionsRec {
    bool lookup_async = false;
    bool no_lookup = false;       // enable_lookup=off
    bool save_decode_cache = false;
};

struct StackRec {
    ConnectorStack kind = ConnectorStack::store;  // store alone, p2p alone, or both in either order
    KvRole p2p_role = KvRole::kv_consumer;
    KvRole store_role = KvRole::kv_consumer;
    KvRole multi_role = KvRole::kv_consumer;  // a stack of two: the MultiConnector's own kv_role
    StoreOptionsRec store;
};

struct WorkersRec {
    int extra_ranks = 0;     // ranks = 1 + extra_ranks
    int store_min = 0;       // store_delay_min = 1 + store_min
    int store_spread = 0;    // store_delay_max = store_delay_min + store_spread
    int load_min = 0;        // load_delay_min = 1 + load_min
    int load_spread = 0;
    int pull_delay = 0;      // pull_delay = 1 + pull_delay
    // A transfer that lands within its own step (delay 0: an RDMA faster than a step); false is the
    // simple choice a counterexample shrinks to.
    bool loads_in_step = false;   // load_delay_min = 0 (load_delay_max = load_spread)
    bool stores_in_step = false;  // store_delay_min = 0 (store_delay_max = store_spread)
    bool pulls_in_step = false;   // pull_delay = 0
};

// One segment of the shared pool: `blocks` full blocks plus `extra` tokens (at least 1 token).
struct SegmentRec {
    int blocks = 0;
    int extra = 0;
};

struct RequestRec {
    int gap = 0;                  // arrival step = previous arrival + gap
    std::vector<int> prompt;      // segment pool indices (modulo the pool); empty = segment 0
    int max_tokens = 0;           // max_tokens = 1 + max_tokens
    bool remote_prefill = false;  // dropped when no p2p connector can load it (repair)
    bool remote_decode = false;   // dropped unless p2p is kv_producer or kv_both (repair)
    bool abort = false;
    int abort_after = 0;          // abort at arrival + abort_after (0: before its first schedule())
    bool abort_twice = false;     // a second abort one step later (upstream ignores it)
};

// The store already holds the first 1 + `take` prompt segments of request `request`.
struct StoreRec {
    int request = 0;
    int take = 0;
};

struct FaultRec {
    FaultKind kind = FaultKind::store_delay;
    int at = 0;        // rank faults: absolute step; request faults: steps after the request arrives
    int rank = 0;      // modulo ranks
    int steps = 0;     // steps = 1 + steps
    int request = 0;   // modulo the requests
};

struct TraceSpec {
    EngineRec engine;
    StackRec stack;
    WorkersRec workers;
    std::vector<SegmentRec> segments;
    std::vector<RequestRec> requests;
    std::vector<StoreRec> store;
    std::vector<FaultRec> faults;
    std::uint64_t seed = 0;
};

inline constexpr int kBlockSizes[] = {4, 8, 16};
inline constexpr int kBudgets[] = {2048, 256, 48, 12};
inline constexpr int kMaxRunning[] = {16, 4, 2, 1};
inline constexpr int kLongPrefill[] = {0, 64, 20, 5};
inline constexpr int kRoomyModelLen = 2048;

// Deterministic, total: every spec gives a trace that validate_trace accepts and that follows
// the passable-trace rules (sim/trace/trace_builder.h). It has no variant and no expect lines.
Trace build_trace(const TraceSpec& spec);

// Which block count the pressure level asks for, given the blocks each request needs for its
// whole sequence (exposed for tests of the generator).
int num_blocks_for(const EngineRec& engine, const std::vector<int>& blocks_per_request);

}  // namespace kvsim::propgen
