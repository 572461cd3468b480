#include "fuzz/swarm/swarm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>

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

std::string_view on_off(bool b) { return b ? "on" : "off"; }

// The p2p connector can take a remote prefill (decode side) / a remote decode (prefill side).
bool takes_remote_prefill(const SwarmConfig& c) { return c.has_p2p() && c.p2p_role != KvRole::kv_producer; }
bool takes_remote_decode(const SwarmConfig& c) { return c.has_p2p() && c.p2p_role != KvRole::kv_consumer; }

// Event order inside one step: arrivals first, so that a fault or an abort at the arrival's
// step names a request that arrives on an earlier line.
enum class EventClass { arrive = 0, fault = 1, abort = 2 };

struct PendingEvent {
    Event event;
    EventClass cls;
};

struct PlannedRequest {
    std::string id;
    std::vector<std::string> prompt;
    int prompt_len = 0;
    int max_tokens = 1;
    bool remote_prefill = false;
    bool remote_decode = false;
    int arrival = 0;
};

}  // namespace

std::string_view to_string(RoleChoice choice) {
    switch (choice) {
        case RoleChoice::any: return "any";
        case RoleChoice::kv_consumer: return "kv_consumer";
        case RoleChoice::kv_both: return "kv_both";
        case RoleChoice::kv_producer: return "kv_producer";
    }
    return "?";
}

std::optional<RoleChoice> parse_role_choice(std::string_view text) {
    for (RoleChoice c : {RoleChoice::any, RoleChoice::kv_consumer, RoleChoice::kv_both, RoleChoice::kv_producer})
        if (to_string(c) == text) return c;
    return std::nullopt;
}

std::string_view to_string(SwarmStack stack) {
    switch (stack) {
        case SwarmStack::store: return "store";
        case SwarmStack::p2p: return "p2p";
        case SwarmStack::p2p_store: return "p2p+store";
        case SwarmStack::store_p2p: return "store+p2p";
    }
    return "?";
}

std::string_view to_string(PoolPressure pressure) {
    switch (pressure) {
        case PoolPressure::roomy: return "roomy";
        case PoolPressure::moderate: return "moderate";
        case PoolPressure::tight: return "tight";
        case PoolPressure::starved: return "starved";
    }
    return "?";
}

std::string_view to_string(ArrivalPattern pattern) {
    switch (pattern) {
        case ArrivalPattern::burst: return "burst";
        case ArrivalPattern::steady: return "steady";
        case ArrivalPattern::random: return "random";
    }
    return "?";
}

// The draw order is part of the reproduction contract: append new knobs at the end, or the
// seeds that users keep stop reproducing their traces.
SwarmConfig draw_swarm(Prng& prng, const SwarmOptions& options) {
    SwarmConfig c;
    c.run_seed = prng.next();
    c.variant = options.variant;

    c.stack =
        one_of(prng, std::array{SwarmStack::store, SwarmStack::p2p, SwarmStack::p2p_store, SwarmStack::store_p2p});
    // Both roles are always drawn, so that --role changes the roles and nothing else.
    c.p2p_role = role_of(options.role, one_of(prng, kRoles));
    c.store_role = role_of(options.role, one_of(prng, kRoles));
    c.save_decode_cache = prng.chance(1, 2);
    c.load_async = prng.chance(3, 4);
    c.lookup_async = prng.chance(2, 5);
    c.enable_lookup = prng.chance(9, 10);

    c.ranks = pick(prng, 1, 4);
    c.store_delay_min = pick(prng, 0, 3);
    c.store_delay_max = c.store_delay_min + one_of(prng, std::array{0, 1, 3, 8});
    c.load_delay_min = pick(prng, 0, 2);
    c.load_delay_max = c.load_delay_min + one_of(prng, std::array{0, 1, 4});
    c.pull_delay = pick(prng, 0, 5);

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
    return c;
}

Trace generate_trace(Prng& prng, const SwarmConfig& c) {
    Trace t;
    const int bs = c.block_size;

    // Connectors, MultiConnector children in stack order.
    ConnectorSpec p2p;
    p2p.kind = "p2p";
    p2p.role = c.p2p_role;
    ConnectorSpec store;
    store.kind = "store";
    store.role = c.store_role;
    store.load_async = c.load_async;
    store.lookup_async = c.lookup_async;
    store.enable_lookup = c.enable_lookup;
    store.save_decode_cache = c.save_decode_cache;
    switch (c.stack) {
        case SwarmStack::store: t.connectors = {store}; break;
        case SwarmStack::p2p: t.connectors = {p2p}; break;
        case SwarmStack::p2p_store: t.connectors = {p2p, store}; break;
        case SwarmStack::store_p2p: t.connectors = {store, p2p}; break;
    }

    t.workers.ranks = c.ranks;
    t.workers.store_delay_min = c.store_delay_min;
    t.workers.store_delay_max = c.store_delay_max;
    t.workers.load_delay_min = c.load_delay_min;
    t.workers.load_delay_max = c.load_delay_max;
    t.workers.pull_delay = c.pull_delay;

    // Shared prefixes: whole blocks, sometimes with a partial tail block.
    for (int k = 0; k < c.num_prefixes; ++k) {
        Segment s;
        s.name = fmt::format("p{}", k);
        const int len = bs * pick(prng, 1, c.max_prefix_blocks) + (prng.chance(1, 4) ? pick(prng, 1, bs - 1) : 0);
        s.tokens = generated_segment_tokens(s.name, len);
        t.segments.push_back(std::move(s));
    }
    auto segment_len = [&](const std::string& name) { return static_cast<int>(t.find_segment(name)->tokens.size()); };

    // Requests: a shared prefix (or not) and an own segment, sometimes the prefix alone.
    std::vector<PlannedRequest> requests;
    int arrival = 0;
    for (int i = 0; i < c.num_requests; ++i) {
        PlannedRequest r;
        r.id = fmt::format("r{}", i + 1);
        const std::string own = fmt::format("q{}", i + 1);
        const bool shared = percent(prng, c.share_pct);
        const std::string prefix = fmt::format("p{}", pick(prng, 0, c.num_prefixes - 1));
        const bool prefix_only = shared && prng.chance(1, 6);
        const int own_len = pick(prng, 1, c.max_suffix_tokens);
        if (shared) r.prompt.push_back(prefix);
        if (!prefix_only) {
            Segment s;
            s.name = own;
            s.tokens = generated_segment_tokens(own, own_len);
            t.segments.push_back(std::move(s));
            r.prompt.push_back(own);
        }
        for (const auto& name : r.prompt) r.prompt_len += segment_len(name);
        r.max_tokens = pick(prng, 1, c.max_output_tokens);
        const bool want_prefill = percent(prng, c.remote_prefill_pct);
        const bool want_decode = percent(prng, c.remote_decode_pct);
        r.remote_prefill = want_prefill && takes_remote_prefill(c);
        r.remote_decode = !r.remote_prefill && want_decode && takes_remote_decode(c);

        switch (c.arrival) {
            case ArrivalPattern::burst: arrival = 0; break;
            case ArrivalPattern::steady: arrival = i * c.arrival_gap; break;
            case ArrivalPattern::random: arrival += i == 0 ? 0 : pick(prng, 0, 2 * c.arrival_gap); break;
        }
        r.arrival = arrival;
        requests.push_back(std::move(r));
    }

    // Store contents: shared prefixes, and whole prompts a prefill engine already wrote.
    if (c.has_store()) {
        auto add_store = [&](const std::vector<std::string>& prefix) {
            for (const auto& e : t.store)
                if (e.prefix == prefix) return;
            t.store.push_back(StoreEntry{prefix});
        };
        for (int k = 0; k < c.num_prefixes; ++k)
            if (percent(prng, c.store_prefix_pct)) add_store({fmt::format("p{}", k)});
        for (const auto& r : requests)
            if (percent(prng, c.store_prompt_pct)) add_store(r.prompt);
    }

    // Drop the shared prefixes that no prompt and no store line names (readability only: no draw depends on it).
    std::erase_if(t.segments, [&](const Segment& seg) {
        for (const auto& r : requests)
            if (std::find(r.prompt.begin(), r.prompt.end(), seg.name) != r.prompt.end()) return false;
        for (const auto& e : t.store)
            if (std::find(e.prefix.begin(), e.prefix.end(), seg.name) != e.prefix.end()) return false;
        return true;
    });

    // Engine: prompts below max_model_len, store prefixes within it; one request alone always fits the pool.
    int longest_prompt = 1;
    for (const auto& r : requests) longest_prompt = std::max(longest_prompt, r.prompt_len);
    int longest_store = 1;
    for (const auto& e : t.store)
        longest_store = std::max(longest_store, static_cast<int>(t.concat_segments(e.prefix).size()));
    t.engine.block_size = bs;
    t.engine.max_model_len = std::max(longest_prompt + 1, longest_store) + c.model_len_slack;
    t.engine.chunked_prefill = c.chunked_prefill;
    t.engine.prefix_caching = c.prefix_caching;
    t.engine.reserve_full_isl = c.reserve_full_isl;
    t.engine.max_batched_tokens =
        c.chunked_prefill ? c.max_batched_tokens : std::max(c.max_batched_tokens, t.engine.max_model_len);
    t.engine.long_prefill_threshold = c.long_prefill_threshold;
    t.engine.max_running = c.max_running;
    int largest = 1;
    int total = 0;
    for (const auto& r : requests) {
        const int demand = cdiv(std::min(r.prompt_len + r.max_tokens, t.engine.max_model_len), bs);
        largest = std::max(largest, demand);
        total += demand;
    }
    int usable = largest;
    switch (c.pressure) {
        case PoolPressure::roomy: usable = total + largest; break;
        case PoolPressure::moderate: usable = largest + (total - largest) / 2; break;
        case PoolPressure::tight: usable = largest + 1; break;
        case PoolPressure::starved: usable = largest; break;
    }
    t.engine.num_blocks = 1 + std::max(usable, 1);  // + the null block

    // Events: arrivals, aborts in every lifecycle state, faults in the early window.
    std::vector<PendingEvent> events;
    for (const auto& r : requests) {
        ArriveEvent a;
        a.request_id = r.id;
        a.prompt = r.prompt;
        a.max_tokens = r.max_tokens;
        a.remote_prefill = r.remote_prefill;
        a.remote_decode = r.remote_decode;
        events.push_back({Event{r.arrival, a, 0}, EventClass::arrive});
    }
    const int step_tokens = std::max(1, c.long_prefill_threshold > 0
                                            ? std::min(c.long_prefill_threshold, t.engine.max_batched_tokens)
                                            : t.engine.max_batched_tokens);
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
        events.push_back({Event{r.arrival + offset, AbortEvent{r.id}, 0}, EventClass::abort});
    }
    int worst_store_delay = 0;
    int worst_lookup = 0;
    if (c.has_store()) {
        for (int rank = 0; rank < c.ranks; ++rank) {
            if (!percent(prng, c.store_delay_pct)) continue;
            FaultEvent f;
            f.kind = FaultKind::store_delay;
            f.rank = rank;
            f.steps = pick(prng, 1, 8);
            worst_store_delay = std::max(worst_store_delay, f.steps);
            events.push_back({Event{pick(prng, 0, c.fault_window - 1), f, 0}, EventClass::fault});
        }
        for (int rank = 0; rank < c.ranks; ++rank) {
            if (!percent(prng, c.store_fail_pct)) continue;
            FaultEvent f;
            f.kind = FaultKind::store_fail;
            f.rank = rank;
            events.push_back({Event{pick(prng, 0, c.fault_window - 1), f, 0}, EventClass::fault});
        }
    }
    for (const auto& r : requests) {
        // load_fail: any connector; lookup_pending: a store connector. At (or just after) the
        // arrival, so that it is armed before the load or the lookup starts.
        const bool in_window = r.arrival < c.fault_window;
        if (percent(prng, c.load_fail_pct) && in_window) {
            FaultEvent f;
            f.kind = FaultKind::load_fail;
            f.request_id = r.id;
            events.push_back({Event{pick(prng, r.arrival, std::min(r.arrival + 2, c.fault_window - 1)), f, 0},
                              EventClass::fault});
        }
        if (percent(prng, c.lookup_pending_pct) && in_window && c.has_store()) {
            FaultEvent f;
            f.kind = FaultKind::lookup_pending;
            f.request_id = r.id;
            f.steps = pick(prng, 1, 6);
            worst_lookup = std::max(worst_lookup, f.steps);
            events.push_back({Event{pick(prng, r.arrival, std::min(r.arrival + 1, c.fault_window - 1)), f, 0},
                              EventClass::fault});
        }
    }
    std::stable_sort(events.begin(), events.end(), [](const PendingEvent& a, const PendingEvent& b) {
        if (a.event.step != b.event.step) return a.event.step < b.event.step;
        return static_cast<int>(a.cls) < static_cast<int>(b.cls);
    });
    int last_step = 0;
    for (auto& e : events) {
        last_step = std::max(last_step, e.event.step);
        t.events.push_back(std::move(e.event));
    }

    // Room for everything to drain: every request alone, one chunk or token per step, with the
    // slowest delays, several times over (preemption recomputes), after the last event.
    const int delays = c.store_delay_max + worst_store_delay + c.load_delay_max + c.pull_delay + worst_lookup + 4;
    long drain = 0;
    for (const auto& r : requests) drain += r.prompt_len + r.max_tokens + delays;
    t.run.seed = c.run_seed;
    t.run.variant = c.variant;
    t.run.max_steps = static_cast<int>(std::min<long>(last_step + 200 + 4 * drain, limits::kMaxSteps));
    return t;
}

SwarmCase swarm_case_for_seed(std::uint64_t seed, const SwarmOptions& options) {
    Prng prng(seed);
    SwarmCase out;
    out.config = draw_swarm(prng, options);
    out.config.run_seed = seed;
    out.trace = generate_trace(prng, out.config);
    return out;
}

Trace trace_for_seed(std::uint64_t seed, const SwarmOptions& options) {
    return swarm_case_for_seed(seed, options).trace;
}

std::string describe(const SwarmConfig& c) {
    std::string roles;
    if (c.has_p2p()) roles += fmt::format(" p2p={}", to_string(c.p2p_role));
    if (c.has_store())
        roles += fmt::format(" store={} save_decode_cache={} load_async={} lookup_async={} enable_lookup={}",
                             to_string(c.store_role), on_off(c.save_decode_cache), on_off(c.load_async),
                             on_off(c.lookup_async), on_off(c.enable_lookup));
    return fmt::format(
        "stack={}{} ranks={} pool={} bs={} chunked={} caching={} budget={} requests={} prefixes={} share={}% "
        "store_prefix={}% store_prompt={}% remote_prefill={}% remote_decode={}% arrival={}/{} abort={}% "
        "faults(store_delay={}% store_fail={}% load_fail={}% lookup_pending={}% window={})",
        to_string(c.stack), roles, c.ranks, to_string(c.pressure), c.block_size, on_off(c.chunked_prefill),
        on_off(c.prefix_caching), c.max_batched_tokens, c.num_requests, c.num_prefixes, c.share_pct,
        c.store_prefix_pct, c.store_prompt_pct, c.remote_prefill_pct, c.remote_decode_pct, to_string(c.arrival),
        c.arrival_gap, c.abort_pct, c.store_delay_pct, c.store_fail_pct, c.load_fail_pct, c.lookup_pending_pct,
        c.fault_window);
}

}  // namespace kvsim
