#include "properties/generators/trace_spec.h"

#include <algorithm>
#include <iterator>

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

// A request as built: its id, arrival step, prompt and length.
struct BuiltRequest {
    std::string id;
    int arrival = 0;
    int prompt_len = 0;
    int max_tokens = 1;
    std::vector<std::string> prompt;
};

// A small shared pool s0.., so prompts and store prefixes overlap.
void build_segments(const TraceSpec& spec, int bs, Trace& t) {
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
}

std::vector<ConnectorSpec> build_connectors(const StackRec& stack) {
    const StoreConnectorOptions options{.load_async = true,
                                        .lookup_async = stack.store.lookup_async,
                                        .enable_lookup = !stack.store.no_lookup,
                                        .save_decode_cache = stack.store.save_decode_cache};
    return stack_connectors(stack.kind, p2p_connector(stack.p2p_role), store_connector(stack.store_role, options));
}

WorkerConfig build_workers(const WorkersRec& rec) {
    WorkerConfig w;
    w.ranks = 1 + clamp(rec.extra_ranks, 0, 63);
    w.store_delay_min = rec.stores_in_step ? 0 : 1 + clamp(rec.store_min, 0, 100);
    w.store_delay_max = w.store_delay_min + clamp(rec.store_spread, 0, 100);
    w.load_delay_min = rec.loads_in_step ? 0 : 1 + clamp(rec.load_min, 0, 100);
    w.load_delay_max = w.load_delay_min + clamp(rec.load_spread, 0, 100);
    w.pull_delay = rec.pulls_in_step ? 0 : 1 + clamp(rec.pull_delay, 0, 100);
    return w;
}

BuiltRequest build_request(const RequestRec& r, std::size_t i, int arrival, const Trace& t) {
    BuiltRequest q;
    q.id = "r" + std::to_string(i);
    q.arrival = arrival;
    std::vector<int> idx = r.prompt;
    if (idx.empty()) idx.push_back(0);
    if (idx.size() > static_cast<std::size_t>(kMaxPromptSegments)) idx.resize(kMaxPromptSegments);
    for (int s : idx) q.prompt.push_back(t.segments[wrap(s, t.segments.size())].name);
    q.prompt_len = static_cast<int>(t.concat_segments(q.prompt).size());
    q.max_tokens = 1 + clamp(r.max_tokens, 0, kMaxOutputTokens);
    return q;
}

// The requests with their arrivals and aborts (remote flags the stack cannot serve dropped).
std::vector<BuiltRequest> build_requests(const TraceSpec& spec, const Trace& t, EventPlan& plan) {
    std::vector<BuiltRequest> reqs;
    int arrival = 0;
    for (std::size_t i = 0; i < std::min(spec.requests.size(), kMaxRecords); ++i) {
        const RequestRec& r = spec.requests[i];
        arrival += clamp(r.gap, 0, kMaxGap);
        BuiltRequest q = build_request(r, i, arrival, t);
        const RemoteFlags remote =
            passable_remote_flags(t.connectors, {.prefill = r.remote_prefill, .decode = r.remote_decode});
        plan.add(q.arrival,
                 ArriveEvent{.request_id = q.id, .prompt = q.prompt, .max_tokens = q.max_tokens,
                             .remote_prefill = remote.prefill, .remote_decode = remote.decode},
                 EventClass::arrive);
        if (r.abort) {
            const int at = q.arrival + clamp(r.abort_after, 0, kMaxGap);
            plan.add(at, AbortEvent{.request_id = q.id}, EventClass::abort);
            if (r.abort_twice) plan.add(at + 1, AbortEvent{.request_id = q.id}, EventClass::abort);
        }
        reqs.push_back(std::move(q));
    }
    return reqs;
}

EngineConfig build_engine(const EngineRec& rec, int bs, const std::vector<BuiltRequest>& reqs) {
    int longest_prompt = 1;
    for (const BuiltRequest& q : reqs) longest_prompt = std::max(longest_prompt, q.prompt_len);
    EngineConfig e;
    e.block_size = bs;
    e.max_model_len = rec.model_len_slack <= 0 ? std::max(kRoomyModelLen, min_model_len(longest_prompt, 0))
                                               : longest_prompt + clamp(rec.model_len_slack, 1, 64);
    e.chunked_prefill = !rec.no_chunked_prefill;
    e.max_batched_tokens = batch_budget(e.chunked_prefill, pick(kBudgets, rec.budget_index), e.max_model_len);
    e.max_running = pick(kMaxRunning, rec.max_running_index);
    e.long_prefill_threshold = pick(kLongPrefill, rec.long_prefill_index);
    e.prefix_caching = !rec.no_prefix_caching;
    e.reserve_full_isl = !rec.no_reserve_full_isl;
    if (rec.load_failure_policy == 1) e.kv_load_failure_policy = LoadFailurePolicy::recompute;
    if (rec.load_failure_policy == 2) e.kv_load_failure_policy = LoadFailurePolicy::fail;
    if (rec.async_scheduling == 1 || rec.async_scheduling == 2) e.async_scheduling = rec.async_scheduling == 2;
    std::vector<int> need;
    for (const BuiltRequest& q : reqs)
        need.push_back(request_blocks(q.prompt_len, q.max_tokens, e.max_model_len, bs));
    e.num_blocks = num_blocks_for(rec, need);
    fit_upstream_limits(e, min_model_len(longest_prompt, 0));  // a store prefix is a prompt's prefix
    return e;
}

// Prefixes of the requests' prompts (store hits overlap local hits and remote prefills).
void build_store(const TraceSpec& spec, const std::vector<BuiltRequest>& reqs, Trace& t) {
    for (std::size_t k = 0; k < std::min(spec.store.size(), kMaxRecords); ++k) {
        const StoreRec& s = spec.store[k];
        const BuiltRequest& q = reqs[wrap(s.request, reqs.size())];
        const std::size_t take = std::min(q.prompt.size(), 1 + static_cast<std::size_t>(clamp(s.take, 0, 16)));
        t.store.push_back(StoreEntry{
            .prefix = std::vector<std::string>(q.prompt.begin(), q.prompt.begin() + static_cast<std::ptrdiff_t>(take))});
    }
}

// Faults, early (a liveness phase follows); kinds the stack cannot take are dropped. Returns
// the fault steps, summed.
int build_faults(const TraceSpec& spec, const std::vector<BuiltRequest>& reqs, const Trace& t, EventPlan& plan) {
    int fault_steps = 0;
    for (std::size_t k = 0; k < std::min(spec.faults.size(), kMaxRecords); ++k) {
        const FaultRec& f = spec.faults[k];
        if (!connectors_take_fault(t.connectors, f.kind)) continue;
        if (fault_names_request(f.kind) && reqs.empty()) continue;
        FaultEvent fe;
        fe.kind = f.kind;
        int at = clamp(f.at, 0, kMaxGap);
        if (fault_names_rank(f.kind)) fe.rank = static_cast<int>(wrap(f.rank, static_cast<std::size_t>(t.workers.ranks)));
        if (fault_has_steps(f.kind)) {
            fe.steps = 1 + clamp(f.steps, 0, kMaxFaultSteps - 1);
            fault_steps += fe.steps;
        }
        if (fault_names_request(f.kind)) {
            const BuiltRequest& q = reqs[wrap(f.request, reqs.size())];
            fe.request_id = q.id;
            at += q.arrival;
        }
        plan.add(at, fe, EventClass::fault);
    }
    return fault_steps;
}

// Generous: every completion may wait for the slowest delays, once more than there are requests.
int build_max_steps(const Trace& t, const std::vector<BuiltRequest>& reqs, int fault_steps) {
    DrainEstimate estimate{.last_event_step = last_event_step(t.events), .slack = 1 + 200};
    for (const BuiltRequest& q : reqs) estimate.work += q.prompt_len + q.max_tokens;
    const WorkerConfig& w = t.workers;
    estimate.delays = w.store_delay_max + w.load_delay_max + w.pull_delay + fault_steps;
    estimate.delay_rounds = static_cast<std::int64_t>(reqs.size()) + 1;
    return drain_step_bound(estimate);
}

}  // namespace

int num_blocks_for(const EngineRec& engine, const std::vector<int>& blocks_per_request) {
    return num_blocks_for_largest(static_cast<PoolPressure>(clamp(engine.pressure, 0, 3)), blocks_per_request,
                                  engine.slack);
}

Trace build_trace(const TraceSpec& spec) {
    Trace t;
    const int bs = pick(kBlockSizes, spec.engine.block_size_index);
    build_segments(spec, bs, t);
    t.connectors = build_connectors(spec.stack);
    if (t.connectors.size() > 1) t.multi = MultiConnectorSpec{.role = spec.stack.multi_role};
    t.workers = build_workers(spec.workers);
    EventPlan plan;
    const std::vector<BuiltRequest> reqs = build_requests(spec, t, plan);
    t.engine = build_engine(spec.engine, bs, reqs);
    if (has_store(spec.stack.kind) && !reqs.empty()) build_store(spec, reqs, t);
    const int fault_steps = build_faults(spec, reqs, t, plan);
    t.events = plan.take_ordered();
    t.run.max_steps = build_max_steps(t, reqs, fault_steps);
    t.run.seed = spec.seed;
    return t;
}

}  // namespace kvsim::propgen
