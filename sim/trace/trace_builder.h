#pragma once
// The rules of a trace that a correct model can pass, in one place. Every tool that makes or
// reshapes traces follows them: the swarm generator (`kvsim explore`), the RapidCheck
// generators, the fuzz mutator's repair, and the minimiser.
//
// validate_trace only asks for a well-formed trace. A passable one also avoids what upstream
// treats as a deployment error rather than a bug (a remote prefill sent to a kv_producer
// MooncakeConnector asserts), gives every request a pool it fits alone, and leaves max_steps
// enough room for everything to drain, so a liveness verdict means a hang.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/trace/trace.h"

namespace kvsim {

// ---- the connector stack ------------------------------------------------------------------

// The connector lines, in file order (MultiConnector children in that order).
enum class ConnectorStack { store, p2p, store_p2p, p2p_store };
inline constexpr EnumNames<ConnectorStack, 4> kConnectorStackNames = {{
    {ConnectorStack::store, "store"},
    {ConnectorStack::p2p, "p2p"},
    {ConnectorStack::store_p2p, "store+p2p"},
    {ConnectorStack::p2p_store, "p2p+store"},
}};
std::string_view to_string(ConnectorStack stack);

bool has_p2p(ConnectorStack stack);
bool has_store(ConnectorStack stack);

// MooncakeStoreConnector's kv_connector_extra_config.
struct StoreConnectorOptions {
    bool load_async = true;
    bool lookup_async = false;
    bool enable_lookup = true;
    bool save_decode_cache = false;
};

ConnectorSpec p2p_connector(KvRole role);
ConnectorSpec store_connector(KvRole role, const StoreConnectorOptions& options);
// The stack's connector lines: `p2p` and `store` in the stack's order, the others left out.
std::vector<ConnectorSpec> stack_connectors(ConnectorStack stack, const ConnectorSpec& p2p,
                                            const ConnectorSpec& store);

// ---- kv_transfer_params -------------------------------------------------------------------

// validate_trace's rules: remote_prefill=on needs a p2p or stand_in connector, remote_decode=on
// a p2p connector that sends (kv_producer or kv_both).
bool accepts_remote_prefill(std::span<const ConnectorSpec> connectors);
bool accepts_remote_decode(std::span<const ConnectorSpec> connectors);
// A passable remote prefill also needs a connector that loads: a stand_in, or a p2p connector
// that is not a kv_producer (upstream asserts on that misconfiguration).
bool passes_remote_prefill(std::span<const ConnectorSpec> connectors);

struct RemoteFlags {
    bool prefill = false;
    bool decode = false;
};
// The asked flags the connectors serve on a passable trace; never both (prefill wins).
RemoteFlags passable_remote_flags(std::span<const ConnectorSpec> connectors, RemoteFlags asked);

// ---- faults -------------------------------------------------------------------------------

constexpr bool fault_needs_store(FaultKind kind) { return kind != FaultKind::load_fail; }
constexpr bool fault_names_request(FaultKind kind) {
    return kind == FaultKind::load_fail || kind == FaultKind::lookup_pending;
}
constexpr bool fault_names_rank(FaultKind kind) {
    return kind == FaultKind::store_delay || kind == FaultKind::store_fail;
}
constexpr bool fault_has_steps(FaultKind kind) {
    return kind == FaultKind::store_delay || kind == FaultKind::lookup_pending;
}
// A store fault needs a store connector; load_fail needs any connector.
bool connectors_take_fault(std::span<const ConnectorSpec> connectors, FaultKind kind);

// ---- the engine --------------------------------------------------------------------------

// The smallest max_model_len that holds every prompt (a prompt is at most max_model_len - 1
// tokens) and every store prefix.
int min_model_len(std::int64_t longest_prompt, std::int64_t longest_store_prefix);
// min_model_len of `trace`'s own prompts and store prefixes.
int trace_min_model_len(const Trace& trace);
// Without chunked prefill a prompt is scheduled whole: the budget holds max_model_len tokens.
int batch_budget(bool chunked_prefill, int max_batched_tokens, int max_model_len);

// The engine limits upstream's configuration rules ask for (sim/trace/config_rules.h), fitted the way a
// generator keeps the pressure it drew: max_model_len comes down to what the pool holds without its null
// block, never below `shortest` (min_model_len of the trace's prompts and store prefixes), and the pool
// grows only beyond that; max_running is at most the budget; without chunked prefill the budget holds
// max_model_len tokens.
void fit_upstream_limits(EngineConfig& e, int shortest);

// ---- the block pool -----------------------------------------------------------------------

// num_blocks counts the null block, which no request ever holds.
inline constexpr int kNullBlocks = 1;

// Blocks a request holds at its peak: its whole sequence, capped at max_model_len.
int request_blocks(std::int64_t prompt_len, std::int64_t max_tokens, int max_model_len, int block_size);
// The smallest num_blocks in which every arrive of `trace` fits alone (upstream refuses to
// schedule a request larger than the pool, so a smaller pool never drains).
int min_num_blocks(const Trace& trace);

// How much of the requests' demand the pool holds. Every level fits the largest request alone.
enum class PoolPressure { roomy, moderate, tight, starved };
inline constexpr EnumNames<PoolPressure, 4> kPoolPressureNames = {{
    {PoolPressure::roomy, "roomy"},
    {PoolPressure::moderate, "moderate"},
    {PoolPressure::tight, "tight"},
    {PoolPressure::starved, "starved"},
}};
std::string_view to_string(PoolPressure pressure);

// Relative to every request's demand (swarm): roomy holds all at once plus the largest again,
// moderate the largest and half of the rest, tight the largest and one block, starved the
// largest alone.
int num_blocks_for_demands(PoolPressure pressure, std::span<const int> blocks_per_request);
// Relative to the largest request only (RapidCheck: dropping another request while shrinking
// keeps the pool): roomy 5x, moderate 2x, tight 1.5x, starved 1x the largest, plus `slack`.
int num_blocks_for_largest(PoolPressure pressure, std::span<const int> blocks_per_request, int slack);

// ---- events -------------------------------------------------------------------------------

// Event order inside one step: arrivals first, so a fault or an abort at the arrival's step
// names a request that arrives on an earlier line.
enum class EventClass { arrive = 0, fault = 1, abort = 2 };

// Events collected in any order, handed out in apply order: by step, then class, then the
// order they were added.
class EventPlan {
public:
    void add(int step, EventBody body, EventClass cls);
    // The events in apply order (the plan is left empty).
    std::vector<Event> take_ordered();

private:
    struct Pending {
        Event event;
        EventClass cls;
    };
    std::vector<Pending> pending_;
};

// The latest event step (0 without events).
int last_event_step(std::span<const Event> events);

// ---- max_steps ----------------------------------------------------------------------------

// What the drain bound is made of. A correct model drains long before it: every request
// alone, one prefill chunk or output token per step, each waiting for the slowest delays,
// kDrainFactor times over (preemption recomputes prompts).
struct DrainEstimate {
    std::int64_t last_event_step = 0;
    std::int64_t work = 0;          // prefill steps (or tokens) and output tokens, summed over requests
    std::int64_t delays = 0;        // the slowest worker and fault delays, summed
    std::int64_t delay_rounds = 0;  // how often `delays` is paid (one per request, or one more)
    std::int64_t slack = 0;         // steps added outright
};
inline constexpr std::int64_t kDrainFactor = 4;
// last_event_step + slack + kDrainFactor * (work + delays * delay_rounds), within 1..kMaxSteps.
int drain_step_bound(const DrainEstimate& estimate);

}  // namespace kvsim
