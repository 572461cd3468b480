#include "properties/generators/trace_spec.h"

#include <algorithm>
#include <iterator>
#include <tuple>

namespace kvsim::propgen {
namespace {

// Upper bounds of the mapping (the generators stay far below them; a hand-built spec may not).
constexpr int kMaxSegmentBlocks = 64;
constexpr int kMaxPromptSegments = 8;
constexpr int kMaxGap = 100;
constexpr std::size_t kMaxPool = 64;        // segments
constexpr std::size_t kMaxRecords = 1000;   // requests, store lines, faults
constexpr int kMaxOutputTokens = 1000;
constexpr int kMaxFaultSteps = 10'000;

int clamp(int v, int lo, int hi) { return std::max(lo, std::min(v, hi)); }
int cdiv(int a, int b) { return (a + b - 1) / b; }

// Index into a table, total for any int.
template <class T, std::size_t N>
T pick(const T (&table)[N], int index) {
    const auto n = static_cast<int>(N);
    return table[static_cast<std::size_t>(((index % n) + n) % n)];
}

std::size_t wrap(int index, std::size_t n) {
    const auto m = static_cast<long long>(n);
    return static_cast<std::size_t>(((static_cast<long long>(index) % m) + m) % m);
}

struct PendingEvent {
    int step = 0;
    int order = 0;  // arrive 0, fault 1, abort 2: an id always arrives on an earlier line
    std::size_t seq = 0;
    Event event;
};

}  // namespace

std::string_view to_string(StackKind kind) {
    switch (kind) {
        case StackKind::store: return "store";
        case StackKind::p2p: return "p2p";
        case StackKind::store_then_p2p: return "store+p2p";
        case StackKind::p2p_then_store: return "p2p+store";
    }
    return "?";
}

int num_blocks_for(const EngineRec& engine, const std::vector<int>& blocks_per_request) {
    // Only the largest request sets the scale (not the sum), so dropping any other request while
    // shrinking keeps the pool as it was.
    const long long floor = blocks_per_request.empty()
                                ? 1
                                : *std::max_element(blocks_per_request.begin(), blocks_per_request.end());
    // Halves of the largest request: roomy 5x .. starved 1x (one request at a time).
    static constexpr long long kHalvesOfLargest[] = {10, 4, 3, 2};
    const long long usable =
        floor * kHalvesOfLargest[clamp(engine.pressure, 0, 3)] / 2 + clamp(engine.slack, 0, 1024);
    return static_cast<int>(std::clamp<long long>(usable + 1, 2, limits::kMaxBlocks));  // + the null block
}

Trace build_trace(const TraceSpec& spec) {
    Trace t;
    const int bs = pick(kBlockSizes, spec.engine.block_size_index);

    // Segments: a small shared pool, so prompts and store prefixes overlap.
    std::vector<SegmentRec> segs = spec.segments;
    if (segs.empty()) segs.push_back({});
    if (segs.size() > kMaxPool) segs.resize(kMaxPool);
    for (std::size_t i = 0; i < segs.size(); ++i) {
        int len = clamp(segs[i].blocks, 0, kMaxSegmentBlocks) * bs + clamp(segs[i].extra, 0, bs - 1);
        if (len == 0) len = bs;
        Segment s;
        s.name = "s" + std::to_string(i);
        s.tokens = generated_segment_tokens(s.name, len);
        s.generated = true;
        t.segments.push_back(std::move(s));
    }
    auto seg_len = [&](const std::vector<std::string>& names) {
        int n = 0;
        for (const auto& name : names) n += static_cast<int>(t.find_segment(name)->tokens.size());
        return n;
    };

    // Connectors, in stack order.
    const StackKind kind = spec.stack.kind;
    const bool has_store = kind != StackKind::p2p;
    const bool has_p2p = kind != StackKind::store;
    ConnectorSpec store;
    store.kind = "store";
    store.role = spec.stack.store_role;
    store.load_async = !spec.stack.store.load_sync;
    store.lookup_async = spec.stack.store.lookup_async;
    store.enable_lookup = !spec.stack.store.no_lookup;
    store.save_decode_cache = spec.stack.store.save_decode_cache;
    ConnectorSpec p2p;
    p2p.kind = "p2p";
    p2p.role = spec.stack.p2p_role;
    switch (kind) {
        case StackKind::store: t.connectors = {store}; break;
        case StackKind::p2p: t.connectors = {p2p}; break;
        case StackKind::store_then_p2p: t.connectors = {store, p2p}; break;
        case StackKind::p2p_then_store: t.connectors = {p2p, store}; break;
    }
    // A decode engine loads remote prefills (p2p not kv_producer: upstream asserts not producer);
    // a prefill engine sends remote decodes (p2p kv_producer or kv_both).
    const bool can_remote_prefill = has_p2p && p2p.role != KvRole::kv_producer;
    const bool can_remote_decode = has_p2p && p2p.role != KvRole::kv_consumer;

    // Workers.
    WorkerConfig& w = t.workers;
    w.ranks = 1 + clamp(spec.workers.extra_ranks, 0, 63);
    w.store_delay_min = 1 + clamp(spec.workers.store_min, 0, 100);
    w.store_delay_max = w.store_delay_min + clamp(spec.workers.store_spread, 0, 100);
    w.load_delay_min = 1 + clamp(spec.workers.load_min, 0, 100);
    w.load_delay_max = w.load_delay_min + clamp(spec.workers.load_spread, 0, 100);
    w.pull_delay = 1 + clamp(spec.workers.pull_delay, 0, 100);

    // Requests.
    struct Req {
        std::string id;
        int arrival = 0;
        int prompt_len = 0;
        int max_tokens = 1;
        std::vector<std::string> prompt;
    };
    std::vector<Req> reqs;
    std::vector<PendingEvent> events;
    std::size_t seq = 0;
    int arrival = 0;
    int longest_prompt = 1;
    for (std::size_t i = 0; i < std::min(spec.requests.size(), kMaxRecords); ++i) {
        const RequestRec& r = spec.requests[i];
        Req q;
        q.id = "r" + std::to_string(i);
        arrival += clamp(r.gap, 0, kMaxGap);
        q.arrival = arrival;
        std::vector<int> idx = r.prompt;
        if (idx.empty()) idx.push_back(0);
        if (idx.size() > static_cast<std::size_t>(kMaxPromptSegments)) idx.resize(kMaxPromptSegments);
        for (int s : idx) q.prompt.push_back(t.segments[wrap(s, t.segments.size())].name);
        q.prompt_len = seg_len(q.prompt);
        q.max_tokens = 1 + clamp(r.max_tokens, 0, kMaxOutputTokens);
        longest_prompt = std::max(longest_prompt, q.prompt_len);

        ArriveEvent a;
        a.request_id = q.id;
        a.prompt = q.prompt;
        a.max_tokens = q.max_tokens;
        a.remote_prefill = r.remote_prefill && can_remote_prefill;
        a.remote_decode = r.remote_decode && can_remote_decode && !a.remote_prefill;
        events.push_back({q.arrival, 0, seq++, Event{q.arrival, a, 0}});
        if (r.abort) {
            const int at = q.arrival + clamp(r.abort_after, 0, kMaxGap);
            events.push_back({at, 2, seq++, Event{at, AbortEvent{q.id}, 0}});
            if (r.abort_twice) events.push_back({at + 1, 2, seq++, Event{at + 1, AbortEvent{q.id}, 0}});
        }
        reqs.push_back(std::move(q));
    }

    // Engine. max_model_len leaves room for every prompt (prompt <= max_model_len - 1).
    EngineConfig& e = t.engine;
    e.block_size = bs;
    e.max_model_len = spec.engine.model_len_slack <= 0 ? std::max(kRoomyModelLen, longest_prompt + 1)
                                                        : longest_prompt + clamp(spec.engine.model_len_slack, 1, 64);
    e.chunked_prefill = !spec.engine.no_chunked_prefill;
    e.max_batched_tokens = pick(kBudgets, spec.engine.budget_index);
    if (!e.chunked_prefill) e.max_batched_tokens = std::max(e.max_batched_tokens, e.max_model_len);
    e.max_running = pick(kMaxRunning, spec.engine.max_running_index);
    e.long_prefill_threshold = pick(kLongPrefill, spec.engine.long_prefill_index);
    e.prefix_caching = !spec.engine.no_prefix_caching;
    e.reserve_full_isl = !spec.engine.no_reserve_full_isl;
    std::vector<int> need;
    for (const Req& q : reqs) need.push_back(cdiv(std::min(q.prompt_len + q.max_tokens, e.max_model_len), bs));
    e.num_blocks = num_blocks_for(spec.engine, need);

    // Store contents: prefixes of the requests' prompts (store hits overlap local hits and remote prefills).
    if (has_store && !reqs.empty()) {
        for (std::size_t k = 0; k < std::min(spec.store.size(), kMaxRecords); ++k) {
            const StoreRec& s = spec.store[k];
            const Req& q = reqs[wrap(s.request, reqs.size())];
            const std::size_t take = std::min(q.prompt.size(), 1 + static_cast<std::size_t>(clamp(s.take, 0, 16)));
            t.store.push_back(StoreEntry{std::vector<std::string>(q.prompt.begin(), q.prompt.begin() + static_cast<std::ptrdiff_t>(take))});
        }
    }

    // Faults, early (a liveness phase follows). Kinds a stack cannot take are dropped.
    int fault_steps = 0;
    for (std::size_t k = 0; k < std::min(spec.faults.size(), kMaxRecords); ++k) {
        const FaultRec& f = spec.faults[k];
        FaultEvent fe;
        fe.kind = f.kind;
        const bool needs_store = f.kind != FaultKind::load_fail;
        const bool needs_request = f.kind == FaultKind::load_fail || f.kind == FaultKind::lookup_pending;
        if (needs_store && !has_store) continue;
        if (needs_request && reqs.empty()) continue;
        int at = clamp(f.at, 0, kMaxGap);
        if (f.kind == FaultKind::store_delay || f.kind == FaultKind::store_fail) fe.rank = static_cast<int>(wrap(f.rank, static_cast<std::size_t>(w.ranks)));
        if (f.kind == FaultKind::store_delay || f.kind == FaultKind::lookup_pending) {
            fe.steps = 1 + clamp(f.steps, 0, kMaxFaultSteps - 1);
            fault_steps += fe.steps;
        }
        if (needs_request) {
            const Req& q = reqs[wrap(f.request, reqs.size())];
            fe.request_id = q.id;
            at += q.arrival;
        }
        events.push_back({at, 1, seq++, Event{at, fe, 0}});
    }

    std::stable_sort(events.begin(), events.end(), [](const PendingEvent& a, const PendingEvent& b) {
        return std::tie(a.step, a.order, a.seq) < std::tie(b.step, b.order, b.seq);
    });
    int last_step = 0;
    for (PendingEvent& p : events) {
        last_step = std::max(last_step, p.step);
        t.events.push_back(std::move(p.event));
    }

    // Generous: a correct model drains long before this (preemption recomputes prompts, and
    // every completion may wait for the slowest delay).
    long long work = 0;
    for (const Req& q : reqs) work += q.prompt_len + q.max_tokens;
    const long long delays = w.store_delay_max + w.load_delay_max + w.pull_delay + fault_steps;
    const long long max_steps = last_step + 1 + 200 + 4 * work + 4 * delays * (static_cast<long long>(reqs.size()) + 1);
    t.run.max_steps = static_cast<int>(std::min<long long>(max_steps, limits::kMaxSteps));
    t.run.seed = spec.seed;
    return t;
}

}  // namespace kvsim::propgen
