#include "fuzz/swarm/swarm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>

#include "sim/common/on_off.h"

namespace kvsim {
namespace {

int pick(Prng& prng, int lo, int hi) { return static_cast<int>(prng.between(lo, hi)); }

bool percent(Prng& prng, int pct) { return prng.chance(static_cast<std::uint64_t>(pct), 100); }

template <class T, std::size_t N>
T one_of(Prng& prng, const std::array<T, N>& items) {
    return items[static_cast<std::size_t>(prng.below(N))];
}

int cdiv(int a, int b) { return (a + b - 1) / b; }

KvRole role_of(RoleChoice choice, KvRole drawn) {
    switch (choice) {
        case RoleChoice::any: return drawn;
        case RoleChoice::kv_consumer: return KvRole::kv_consumer;
        case RoleChoice::kv_both: return KvRole::kv_both;
        case RoleChoice::kv_producer: return KvRole::kv_producer;
    }
    return drawn;
}

constexpr std::array<KvRole, 3> kRoles = {KvRole::kv_consumer, KvRole::kv_both, KvRole::kv_producer};

struct PlannedRequest {
    std::string id;
    std::vector<std::string> prompt;
    int prompt_len = 0;
    int max_tokens = 1;
    RemoteFlags remote;
    int arrival = 0;
};

std::vector<ConnectorSpec> swarm_connectors(const SwarmConfig& c) {
    const StoreConnectorOptions options{.load_async = true,  // upstream's store worker asserts load_async
                                        .lookup_async = c.lookup_async,
                                        .enable_lookup = c.enable_lookup,
                                        .save_decode_cache = c.save_decode_cache};
    return stack_connectors(c.stack, p2p_connector(c.p2p_role), store_connector(c.store_role, options));
}

WorkerConfig swarm_workers(const SwarmConfig& c) {
    return WorkerConfig{.ranks = c.ranks,
                        .store_delay_min = c.store_delay_min,
                        .store_delay_max = c.store_delay_max,
                        .load_delay_min = c.load_delay_min,
                        .load_delay_max = c.load_delay_max,
                        .pull_delay = c.pull_delay};
}

std::string prefix_name(int k) { return fmt::format("p{}", k); }

// Shared prefixes p0..: whole blocks, sometimes with a partial tail block.
void draw_prefixes(Prng& prng, const SwarmConfig& c, Trace& t) {
    const int bs = c.block_size;
    for (int k = 0; k < c.num_prefixes; ++k) {
        Segment s;
        s.name = prefix_name(k);
        const int len = bs * pick(prng, 1, c.max_prefix_blocks) + (prng.chance(1, 4) ? pick(prng, 1, bs - 1) : 0);
        s.tokens = generated_segment_tokens(s.name, len);
        t.segments.push_back(std::move(s));
    }
}

int arrival_step(Prng& prng, const SwarmConfig& c, int i, int previous) {
    switch (c.arrival) {
        case ArrivalPattern::burst: return 0;
        case ArrivalPattern::steady: return i * c.arrival_gap;
        case ArrivalPattern::random: return previous + (i == 0 ? 0 : pick(prng, 0, 2 * c.arrival_gap));
    }
    return previous;
}

// Requests: a shared prefix (or not) and an own segment q<i>, sometimes the prefix alone.
std::vector<PlannedRequest> draw_requests(Prng& prng, const SwarmConfig& c, Trace& t) {
    std::vector<PlannedRequest> requests;
    int arrival = 0;
    for (int i = 0; i < c.num_requests; ++i) {
        PlannedRequest r;
        r.id = fmt::format("r{}", i + 1);
        const std::string own = fmt::format("q{}", i + 1);
        const bool shared = percent(prng, c.share_pct);
        const std::string prefix = prefix_name(pick(prng, 0, c.num_prefixes - 1));
        const bool prefix_only = shared && prng.chance(1, 6);
        const int own_len = pick(prng, 1, c.max_suffix_tokens);
        if (shared) r.prompt.push_back(prefix);
        if (!prefix_only) {
            t.segments.push_back(Segment{.name = own, .tokens = generated_segment_tokens(own, own_len)});
            r.prompt.push_back(own);
        }
        r.prompt_len = static_cast<int>(t.concat_segments(r.prompt).size());
        r.max_tokens = pick(prng, 1, c.max_output_tokens);
        const bool want_prefill = percent(prng, c.remote_prefill_pct);
        const bool want_decode = percent(prng, c.remote_decode_pct);
        r.remote = passable_remote_flags(t.connectors, {.prefill = want_prefill, .decode = want_decode});
        arrival = arrival_step(prng, c, i, arrival);
        r.arrival = arrival;
        requests.push_back(std::move(r));
    }
    return requests;
}

// Store contents: shared prefixes, and whole prompts a prefill engine already wrote.
void draw_store(Prng& prng, const SwarmConfig& c, const std::vector<PlannedRequest>& requests, Trace& t) {
    auto add_store = [&](const std::vector<std::string>& prefix) {
        for (const auto& e : t.store)
            if (e.prefix == prefix) return;
        t.store.push_back(StoreEntry{.prefix = prefix});
    };
    for (int k = 0; k < c.num_prefixes; ++k)
        if (percent(prng, c.store_prefix_pct)) add_store({prefix_name(k)});
    for (const auto& r : requests)
        if (percent(prng, c.store_prompt_pct)) add_store(r.prompt);
}

// The shared prefixes that no prompt and no store line names go (readability only: no draw
// depends on it).
void drop_unused_prefixes(const std::vector<PlannedRequest>& requests, Trace& t) {
    std::erase_if(t.segments, [&](const Segment& seg) {
        for (const auto& r : requests)
            if (std::find(r.prompt.begin(), r.prompt.end(), seg.name) != r.prompt.end()) return false;
        for (const auto& e : t.store)
            if (std::find(e.prefix.begin(), e.prefix.end(), seg.name) != e.prefix.end()) return false;
        return true;
    });
}

void fit_engine(const SwarmConfig& c, const std::vector<PlannedRequest>& requests, Trace& t) {
    int longest_prompt = 1;
    for (const auto& r : requests) longest_prompt = std::max(longest_prompt, r.prompt_len);
    int longest_store = 1;
    for (const auto& e : t.store)
        longest_store = std::max(longest_store, static_cast<int>(t.concat_segments(e.prefix).size()));
    EngineConfig& e = t.engine;
    e.block_size = c.block_size;
    e.max_model_len = min_model_len(longest_prompt, longest_store) + c.model_len_slack;
    e.chunked_prefill = c.chunked_prefill;
    e.prefix_caching = c.prefix_caching;
    e.reserve_full_isl = c.reserve_full_isl;
    e.kv_load_failure_policy = c.kv_load_failure_policy;
    e.async_scheduling = c.async_scheduling;
    e.max_batched_tokens = batch_budget(c.chunked_prefill, c.max_batched_tokens, e.max_model_len);
    e.long_prefill_threshold = c.long_prefill_threshold;
    e.max_running = c.max_running;
    std::vector<int> demands;
    for (const auto& r : requests)
        demands.push_back(request_blocks(r.prompt_len, r.max_tokens, e.max_model_len, e.block_size));
    e.num_blocks = num_blocks_for_demands(c.pressure, demands);
    fit_upstream_limits(e, min_model_len(longest_prompt, longest_store));
}

ArriveEvent arrive_event(const PlannedRequest& r) {
    return ArriveEvent{.request_id = r.id,
                       .prompt = r.prompt,
                       .max_tokens = r.max_tokens,
                       .remote_prefill = r.remote.prefill,
                       .remote_decode = r.remote.decode};
}

// Aborts in every lifecycle state.
void draw_aborts(Prng& prng, const SwarmConfig& c, const std::vector<PlannedRequest>& requests,
                 const EngineConfig& engine, EventPlan& plan) {
    const int step_tokens = std::max(1, c.long_prefill_threshold > 0
                                            ? std::min(c.long_prefill_threshold, engine.max_batched_tokens)
                                            : engine.max_batched_tokens);
    for (const auto& r : requests) {
        if (!percent(prng, c.abort_pct)) continue;
        int offset = 0;
        switch (prng.below(4)) {
            case 0: offset = 0; break;                    // waiting: before its first schedule()
            case 1: offset = pick(prng, 1, 3); break;     // loading, or its first steps
            case 2: offset = pick(prng, 4, 12); break;    // running or preempted
            default:                                      // most likely after it finished
                offset = cdiv(r.prompt_len, step_tokens) + r.max_tokens + c.load_delay_max + pick(prng, 2, 10);
                break;
        }
        plan.add(r.arrival + offset, AbortEvent{.request_id = r.id}, EventClass::abort);
    }
}

// The longest fault delays drawn: the drain bound waits for them.
struct WorstFaultDelays {
    int store_delay = 0;
    int lookup = 0;
};

// store_delay and store_fail per rank, in the fault window.
WorstFaultDelays draw_rank_faults(Prng& prng, const SwarmConfig& c, EventPlan& plan) {
    WorstFaultDelays worst;
    for (int rank = 0; rank < c.ranks; ++rank) {
        if (!percent(prng, c.store_delay_pct)) continue;
        const FaultEvent f{.kind = FaultKind::store_delay, .rank = rank, .steps = pick(prng, 1, 8)};
        worst.store_delay = std::max(worst.store_delay, f.steps);
        plan.add(pick(prng, 0, c.fault_window - 1), f, EventClass::fault);
    }
    for (int rank = 0; rank < c.ranks; ++rank) {
        if (!percent(prng, c.store_fail_pct)) continue;
        plan.add(pick(prng, 0, c.fault_window - 1), FaultEvent{.kind = FaultKind::store_fail, .rank = rank},
                 EventClass::fault);
    }
    return worst;
}

// load_fail (any connector) and lookup_pending (a store connector) per request, at (or just
// after) its arrival, so that they are armed before the load or the lookup starts. Returns
// the longest lookup_pending.
int draw_request_faults(Prng& prng, const SwarmConfig& c, const std::vector<PlannedRequest>& requests,
                        EventPlan& plan) {
    int worst_lookup = 0;
    for (const auto& r : requests) {
        const bool in_window = r.arrival < c.fault_window;
        if (percent(prng, c.load_fail_pct) && in_window) {
            const FaultEvent f{.kind = FaultKind::load_fail, .request_id = r.id};
            plan.add(pick(prng, r.arrival, std::min(r.arrival + 2, c.fault_window - 1)), f, EventClass::fault);
        }
        if (percent(prng, c.lookup_pending_pct) && in_window && c.has_store()) {
            const FaultEvent f{.kind = FaultKind::lookup_pending, .steps = pick(prng, 1, 6), .request_id = r.id};
            worst_lookup = std::max(worst_lookup, f.steps);
            plan.add(pick(prng, r.arrival, std::min(r.arrival + 1, c.fault_window - 1)), f, EventClass::fault);
        }
    }
    return worst_lookup;
}

// Every request alone, one token per step, each waiting for the slowest delays.
int drain_bound(const SwarmConfig& c, const std::vector<PlannedRequest>& requests, const WorstFaultDelays& worst,
                int last_step) {
    DrainEstimate estimate{.last_event_step = last_step, .slack = 200};
    for (const auto& r : requests) estimate.work += r.prompt_len + r.max_tokens;
    estimate.delays = c.store_delay_max + worst.store_delay + c.load_delay_max + c.pull_delay + worst.lookup + 4;
    estimate.delay_rounds = static_cast<std::int64_t>(requests.size());
    return drain_step_bound(estimate);
}

}  // namespace

std::string_view to_string(RoleChoice choice) { return enum_name(kRoleChoiceNames, choice); }

std::optional<RoleChoice> parse_role_choice(std::string_view text) { return parse_enum(kRoleChoiceNames, text); }

std::string_view to_string(ArrivalPattern pattern) { return enum_name(kArrivalPatternNames, pattern); }

// The draw order is part of the reproduction contract: append new knobs at the end, or the
// seeds that users keep stop reproducing their traces.
SwarmConfig draw_swarm(Prng& prng, const SwarmOptions& options) {
    SwarmConfig c;
    c.run_seed = prng.next();
    c.variant = options.variant;

    c.stack =
        one_of(prng, std::array{ConnectorStack::store, ConnectorStack::p2p, ConnectorStack::p2p_store,
                                ConnectorStack::store_p2p});
    // Both roles are always drawn, so that --role changes the roles and nothing else.
    c.p2p_role = role_of(options.role, one_of(prng, kRoles));
    c.store_role = role_of(options.role, one_of(prng, kRoles));
    c.save_decode_cache = prng.chance(1, 2);
    c.lookup_async = prng.chance(2, 5);
    c.enable_lookup = prng.chance(9, 10);

    c.ranks = pick(prng, 1, 4);
    // a delay of 0: the transfer lands within the step it starts in (an RDMA faster than a step)
    c.store_delay_min = one_of(prng, std::array{0, 0, 1, 3});
    c.store_delay_max = c.store_delay_min + one_of(prng, std::array{0, 1, 3, 8});
    c.load_delay_min = one_of(prng, std::array{0, 0, 1, 2});
    c.load_delay_max = c.load_delay_min + one_of(prng, std::array{0, 0, 1, 4});
    c.pull_delay = one_of(prng, std::array{0, 0, 1, 2, 3, 5});

    c.block_size = one_of(prng, std::array{4, 8, 16});
    c.pressure = one_of(prng, std::array{PoolPressure::roomy, PoolPressure::moderate, PoolPressure::tight,
                                         PoolPressure::starved});
    c.chunked_prefill = prng.chance(3, 4);
    c.prefix_caching = prng.chance(3, 4);
    c.reserve_full_isl = prng.chance(3, 4);
    switch (prng.below(3)) {
        case 0: c.max_batched_tokens = c.block_size * pick(prng, 1, 3); break;  // tiny: prefills chunk
        case 1: c.max_batched_tokens = pick(prng, 16, 128); break;
        default: c.max_batched_tokens = 2048; break;
    }
    c.long_prefill_threshold = prng.chance(1, 4) ? c.block_size * pick(prng, 1, 3) : 0;
    c.max_running = one_of(prng, std::array{1, 2, 4, 16});
    c.model_len_slack = one_of(prng, std::array{0, 8, 64, 256});

    c.num_requests = pick(prng, 1, 6);
    c.num_prefixes = pick(prng, 1, 3);
    c.max_prefix_blocks = pick(prng, 1, 3);
    c.max_suffix_tokens = one_of(prng, std::array{1, 4, 12, 24});
    c.max_output_tokens = one_of(prng, std::array{1, 4, 12, 24});
    c.share_pct = one_of(prng, std::array{0, 50, 80, 100});
    c.store_prefix_pct = one_of(prng, std::array{0, 50, 100});
    c.store_prompt_pct = one_of(prng, std::array{0, 0, 30, 70});
    c.remote_prefill_pct = one_of(prng, std::array{0, 30, 70, 100});
    c.remote_decode_pct = one_of(prng, std::array{0, 30, 70, 100});
    c.arrival = one_of(prng, std::array{ArrivalPattern::burst, ArrivalPattern::steady, ArrivalPattern::random});
    c.arrival_gap = pick(prng, 1, 4);
    c.abort_pct = one_of(prng, std::array{0, 0, 20, 50});

    c.store_delay_pct = one_of(prng, std::array{0, 0, 30, 80});
    c.store_fail_pct = one_of(prng, std::array{0, 0, 30, 80});
    c.load_fail_pct = one_of(prng, std::array{0, 0, 30, 80});
    c.lookup_pending_pct = one_of(prng, std::array{0, 0, 30, 80});
    c.fault_window = pick(prng, 1, 24);
    c.multi_role = role_of(options.role, one_of(prng, kRoles));
    return c;
}

Trace generate_trace(Prng& prng, const SwarmConfig& c) {
    Trace t;
    t.connectors = swarm_connectors(c);
    if (t.connectors.size() > 1) t.multi = MultiConnectorSpec{.role = c.multi_role};
    t.workers = swarm_workers(c);
    draw_prefixes(prng, c, t);
    const std::vector<PlannedRequest> requests = draw_requests(prng, c, t);
    if (c.has_store()) draw_store(prng, c, requests, t);
    drop_unused_prefixes(requests, t);
    fit_engine(c, requests, t);

    EventPlan plan;
    for (const auto& r : requests) plan.add(r.arrival, arrive_event(r), EventClass::arrive);
    draw_aborts(prng, c, requests, t.engine, plan);
    WorstFaultDelays worst;
    if (c.has_store()) worst = draw_rank_faults(prng, c, plan);
    worst.lookup = draw_request_faults(prng, c, requests, plan);
    t.events = plan.take_ordered();

    t.run.seed = c.run_seed;
    t.run.variant = c.variant;
    t.run.max_steps = drain_bound(c, requests, worst, last_event_step(t.events));
    return t;
}

std::optional<LoadFailurePolicy> draw_load_failure_policy(Prng& prng) {
    switch (prng.below(4)) {
        case 2: return LoadFailurePolicy::recompute;
        case 3: return LoadFailurePolicy::fail;
        default: return std::nullopt;
    }
}

bool draw_async_scheduling(Prng& prng) { return prng.chance(1, 2); }

SwarmCase swarm_case_for_seed(std::uint64_t seed, const SwarmOptions& options) {
    Prng prng(seed);
    SwarmCase out;
    out.config = draw_swarm(prng, options);
    out.config.run_seed = seed;
    out.trace = generate_trace(prng, out.config);
    out.config.kv_load_failure_policy = draw_load_failure_policy(prng);
    out.trace.engine.kv_load_failure_policy = out.config.kv_load_failure_policy;
    out.config.async_scheduling = draw_async_scheduling(prng);
    out.trace.engine.async_scheduling = out.config.async_scheduling;
    return out;
}

Trace trace_for_seed(std::uint64_t seed, const SwarmOptions& options) {
    return swarm_case_for_seed(seed, options).trace;
}

std::string describe(const SwarmConfig& c) {
    std::string roles;
    if (c.has_p2p()) roles += fmt::format(" p2p={}", to_string(c.p2p_role));
    if (c.has_store())
        roles += fmt::format(" store={} save_decode_cache={} lookup_async={} enable_lookup={}",
                             to_string(c.store_role), on_off(c.save_decode_cache), on_off(c.lookup_async),
                             on_off(c.enable_lookup));
    if (c.has_p2p() && c.has_store()) roles += fmt::format(" multi={}", to_string(c.multi_role));
    return fmt::format(
        "stack={}{} ranks={} pool={} bs={} chunked={} caching={} budget={} requests={} prefixes={} share={}% "
        "store_prefix={}% store_prompt={}% remote_prefill={}% remote_decode={}% arrival={}/{} abort={}% "
        "faults(store_delay={}% store_fail={}% load_fail={}% lookup_pending={}% window={}) load_failure_policy={} async_scheduling={}",
        to_string(c.stack), roles, c.ranks, to_string(c.pressure), c.block_size, on_off(c.chunked_prefill),
        on_off(c.prefix_caching), c.max_batched_tokens, c.num_requests, c.num_prefixes, c.share_pct,
        c.store_prefix_pct, c.store_prompt_pct, c.remote_prefill_pct, c.remote_decode_pct, to_string(c.arrival),
        c.arrival_gap, c.abort_pct, c.store_delay_pct, c.store_fail_pct, c.load_fail_pct, c.lookup_pending_pct,
        c.fault_window, c.kv_load_failure_policy ? to_string(*c.kv_load_failure_policy) : "default",
        c.async_scheduling ? on_off(*c.async_scheduling) : "default");
}

}  // namespace kvsim
