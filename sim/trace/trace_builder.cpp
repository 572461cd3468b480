#include "sim/trace/trace_builder.h"

#include <algorithm>
#include <utility>

#include "sim/trace/trace_schema.h"

namespace kvsim {
namespace {

const ConnectorSpec* connector_of(std::span<const ConnectorSpec> connectors, std::string_view kind) {
    for (const ConnectorSpec& c : connectors)
        if (c.kind == kind) return &c;
    return nullptr;
}

std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string_view to_string(ConnectorStack stack) { return enum_name(kConnectorStackNames, stack); }

bool has_p2p(ConnectorStack stack) { return stack != ConnectorStack::store; }
bool has_store(ConnectorStack stack) { return stack != ConnectorStack::p2p; }

ConnectorSpec p2p_connector(KvRole role) {
    ConnectorSpec c;
    c.kind = std::string(kConnectorP2p);
    c.role = role;
    return c;
}

ConnectorSpec store_connector(KvRole role, const StoreConnectorOptions& options) {
    ConnectorSpec c;
    c.kind = std::string(kConnectorStore);
    c.role = role;
    c.load_async = options.load_async;
    c.lookup_async = options.lookup_async;
    c.enable_lookup = options.enable_lookup;
    c.save_decode_cache = options.save_decode_cache;
    return c;
}

std::vector<ConnectorSpec> stack_connectors(ConnectorStack stack, const ConnectorSpec& p2p,
                                            const ConnectorSpec& store) {
    switch (stack) {
        case ConnectorStack::store: return {store};
        case ConnectorStack::p2p: return {p2p};
        case ConnectorStack::store_p2p: return {store, p2p};
        case ConnectorStack::p2p_store: return {p2p, store};
    }
    return {};
}

bool accepts_remote_prefill(std::span<const ConnectorSpec> connectors) {
    return connector_of(connectors, kConnectorP2p) != nullptr || connector_of(connectors, kConnectorStandIn) != nullptr;
}

bool accepts_remote_decode(std::span<const ConnectorSpec> connectors) {
    const ConnectorSpec* p2p = connector_of(connectors, kConnectorP2p);
    return p2p != nullptr && p2p->role != KvRole::kv_consumer;
}

bool passes_remote_prefill(std::span<const ConnectorSpec> connectors) {
    const ConnectorSpec* p2p = connector_of(connectors, kConnectorP2p);
    return connector_of(connectors, kConnectorStandIn) != nullptr ||
           (p2p != nullptr && p2p->role != KvRole::kv_producer);
}

RemoteFlags passable_remote_flags(std::span<const ConnectorSpec> connectors, RemoteFlags asked) {
    RemoteFlags out;
    out.prefill = asked.prefill && passes_remote_prefill(connectors);
    out.decode = !out.prefill && asked.decode && accepts_remote_decode(connectors);
    return out;
}

bool connectors_take_fault(std::span<const ConnectorSpec> connectors, FaultKind kind) {
    if (fault_needs_store(kind)) return connector_of(connectors, kConnectorStore) != nullptr;
    return !connectors.empty();
}

int min_model_len(std::int64_t longest_prompt, std::int64_t longest_store_prefix) {
    return static_cast<int>(std::max({std::int64_t{2}, longest_prompt + 1, longest_store_prefix}));
}

int trace_min_model_len(const Trace& t) {
    const SegmentIndex segments(t);
    std::int64_t prompt = 0, prefix = 0;
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body))
            prompt = std::max<std::int64_t>(prompt, static_cast<std::int64_t>(segments.concat(a->prompt).size()));
    for (const StoreEntry& s : t.store)
        prefix = std::max<std::int64_t>(prefix, static_cast<std::int64_t>(segments.concat(s.prefix).size()));
    return min_model_len(prompt, prefix);
}

void fit_upstream_limits(EngineConfig& e, int shortest) {
    const std::int64_t usable = static_cast<std::int64_t>(e.num_blocks - kNullBlocks) * e.block_size;
    e.max_model_len = static_cast<int>(std::min<std::int64_t>(e.max_model_len, std::max<std::int64_t>(usable, shortest)));
    e.num_blocks = std::max(e.num_blocks, static_cast<int>(cdiv(e.max_model_len, e.block_size)) + kNullBlocks);
    e.max_batched_tokens = batch_budget(e.chunked_prefill, e.max_batched_tokens, e.max_model_len);
    e.max_running = std::min(e.max_running, e.max_batched_tokens);
}

int batch_budget(bool chunked_prefill, int max_batched_tokens, int max_model_len) {
    return chunked_prefill ? max_batched_tokens : std::max(max_batched_tokens, max_model_len);
}

int request_blocks(std::int64_t prompt_len, std::int64_t max_tokens, int max_model_len, int block_size) {
    return static_cast<int>(cdiv(std::min<std::int64_t>(prompt_len + max_tokens, max_model_len), block_size));
}

int min_num_blocks(const Trace& t) {
    int largest = 1;
    for (const Event& ev : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&ev.body)) {
            const auto prompt = static_cast<std::int64_t>(t.concat_segments(a->prompt).size());
            largest = std::max(largest, request_blocks(prompt, a->max_tokens, t.engine.max_model_len,
                                                       t.engine.block_size));
        }
    return largest + kNullBlocks;
}

std::string_view to_string(PoolPressure pressure) { return enum_name(kPoolPressureNames, pressure); }

int num_blocks_for_demands(PoolPressure pressure, std::span<const int> blocks_per_request) {
    int largest = 1;
    int total = 0;
    for (const int demand : blocks_per_request) {
        largest = std::max(largest, demand);
        total += demand;
    }
    int usable = largest;
    switch (pressure) {
        case PoolPressure::roomy: usable = total + largest; break;
        case PoolPressure::moderate: usable = largest + (total - largest) / 2; break;
        case PoolPressure::tight: usable = largest + 1; break;
        case PoolPressure::starved: usable = largest; break;
    }
    return kNullBlocks + std::max(usable, 1);
}

int num_blocks_for_largest(PoolPressure pressure, std::span<const int> blocks_per_request, int slack) {
    const long long largest =
        blocks_per_request.empty() ? 1 : *std::max_element(blocks_per_request.begin(), blocks_per_request.end());
    static constexpr long long kHalvesOfLargest[] = {10, 4, 3, 2};  // by PoolPressure
    const long long usable =
        largest * kHalvesOfLargest[static_cast<int>(pressure)] / 2 + std::clamp(slack, 0, 1024);
    return static_cast<int>(std::clamp<long long>(usable + kNullBlocks, 2, limits::kMaxBlocks));
}

void EventPlan::add(int step, EventBody body, EventClass cls) {
    pending_.push_back({.event = Event{.step = step, .body = std::move(body), .line = 0}, .cls = cls});
}

std::vector<Event> EventPlan::take_ordered() {
    std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
        if (a.event.step != b.event.step) return a.event.step < b.event.step;
        return static_cast<int>(a.cls) < static_cast<int>(b.cls);
    });
    std::vector<Event> out;
    out.reserve(pending_.size());
    for (Pending& p : pending_) out.push_back(std::move(p.event));
    pending_.clear();
    return out;
}

int last_event_step(std::span<const Event> events) {
    int last = 0;
    for (const Event& e : events) last = std::max(last, e.step);
    return last;
}

int drain_step_bound(const DrainEstimate& e) {
    const std::int64_t bound =
        e.last_event_step + e.slack + kDrainFactor * (e.work + e.delays * e.delay_rounds);
    return static_cast<int>(std::clamp<std::int64_t>(bound, 1, limits::kMaxSteps));
}

}  // namespace kvsim
