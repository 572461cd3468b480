// The structural mutations, crossover, and the text API the fuzz target calls.
#include "fuzz/mutator/trace_mutator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fuzz/mutator/mutator_util.h"
#include "sim/trace/trace_builder.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

namespace kvsim::fuzz {
namespace {

using detail::between;
using detail::pick;

// ---- value choices: small values and block boundaries are where the bugs are -------------

int choose_from(Prng& rng, std::initializer_list<int> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng.below(values.size())));
}

// A token count near a multiple of the block size, or anything up to `max`.
int boundary_count(Prng& rng, int block_size, int max) {
    int v = 0;
    if (rng.chance(2, 3)) {
        const int blocks = between(rng, 1, 4);
        v = blocks * block_size + between(rng, -1, 1);
    } else {
        v = between(rng, 1, max);
    }
    return std::clamp(v, 1, max);
}

int choose_step(Prng& rng, const Trace& t) {
    const int last = t.events.empty() ? 0 : t.events.back().step;
    switch (rng.below(3)) {
        case 0: return last;
        case 1: return std::min(envelope::kMaxEventStep, last + choose_from(rng, {1, 2, 3, 5, 8, 13}));
        default: return between(rng, 0, envelope::kMaxEventStep);
    }
}

// 0 about one time in four: a transfer that lands within the step it starts in (an RDMA faster than a step).
int choose_delay(Prng& rng) { return choose_from(rng, {0, 0, 0, 1, 1, 2, 3, 4, 6, 8, 12}); }

KvRole choose_role(Prng& rng) {
    return choose_from(rng, {0, 1, 2}) == 0 ? KvRole::kv_consumer
                                            : (rng.chance(1, 2) ? KvRole::kv_producer : KvRole::kv_both);
}

// Inserts `e` after the events of its step and the ones before (events stay sorted by step,
// and file order is apply order), but not before index `not_before`.
void insert_event(Trace& t, Event e, std::size_t not_before = 0) {
    std::size_t pos = std::min(not_before, t.events.size());
    while (pos < t.events.size() && t.events[pos].step <= e.step) ++pos;
    t.events.insert(t.events.begin() + static_cast<std::ptrdiff_t>(pos), std::move(e));
}

std::vector<std::size_t> indices_of(const Trace& t, auto predicate) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < t.events.size(); ++i)
        if (predicate(t.events[i])) out.push_back(i);
    return out;
}

bool is_arrive(const Event& e) { return std::holds_alternative<ArriveEvent>(e.body); }
bool is_fault(const Event& e) { return std::holds_alternative<FaultEvent>(e.body); }

std::string add_segment(Trace& t, Prng& rng) {
    Segment s;
    s.name = detail::fresh_segment_name(t);
    s.tokens = generated_segment_tokens(s.name, boundary_count(rng, t.engine.block_size, 96));
    t.segments.push_back(s);
    return s.name;
}

std::string random_segment(Trace& t, Prng& rng) {
    if (t.segments.empty() || rng.chance(1, 3)) return add_segment(t, rng);
    return pick(rng, t.segments).name;
}

std::vector<std::string> random_prompt(Trace& t, Prng& rng) {
    std::vector<std::string> prompt;
    const auto arrives = indices_of(t, is_arrive);
    if (!arrives.empty() && rng.chance(1, 3)) {
        // share a prefix with an earlier request
        const auto other = std::get<ArriveEvent>(t.events[pick(rng, arrives)].body).prompt;
        if (other.empty()) return {random_segment(t, rng)};
        prompt.assign(other.begin(), other.begin() + between(rng, 1, static_cast<int>(other.size())));
        if (rng.chance(2, 3)) prompt.push_back(random_segment(t, rng));
        return prompt;
    }
    const int n = between(rng, 1, 3);
    for (int i = 0; i < n; ++i) prompt.push_back(random_segment(t, rng));
    return prompt;
}

ConnectorSpec random_connector(Prng& rng, std::string_view kind) {
    ConnectorSpec c;
    c.kind = std::string(kind);
    c.role = choose_role(rng);
    if (kind == kConnectorStandIn) c.load_delay = choose_delay(rng);
    if (kind == kConnectorStore) {  // load_async stays on: upstream's store worker asserts it
        c.lookup_async = rng.chance(1, 3);
        c.enable_lookup = rng.chance(5, 6);
        c.save_decode_cache = rng.chance(1, 2);
    }
    return c;
}

// ---- the mutations ------------------------------------------------------------------------

bool add_request(Trace& t, Prng& rng) {
    ArriveEvent a;
    a.request_id = detail::fresh_request_id(t);
    a.prompt = random_prompt(t, rng);
    a.max_tokens = boundary_count(rng, t.engine.block_size, envelope::kMaxMaxTokens);
    if (passes_remote_prefill(t.connectors) && rng.chance(1, 2)) a.remote_prefill = true;
    else if (accepts_remote_decode(t.connectors) && rng.chance(1, 2)) a.remote_decode = true;
    insert_event(t, Event{.step = choose_step(rng, t), .body = std::move(a)});
    return true;
}

bool remove_event(Trace& t, Prng& rng) {
    if (t.events.empty()) return false;
    t.events.erase(t.events.begin() + static_cast<std::ptrdiff_t>(rng.below(t.events.size())));
    return true;
}

bool move_event(Trace& t, Prng& rng) {
    if (t.events.empty()) return false;
    const std::vector<Event> before = t.events;
    const std::size_t i = static_cast<std::size_t>(rng.below(t.events.size()));
    Event e = t.events[i];
    t.events.erase(t.events.begin() + static_cast<std::ptrdiff_t>(i));
    std::size_t lo = 0;
    while (lo < t.events.size() && t.events[lo].step < e.step) ++lo;
    std::size_t hi = lo;
    while (hi < t.events.size() && t.events[hi].step <= e.step) ++hi;
    if (hi > lo && rng.chance(1, 2)) {
        // same step, another place in file order (apply order within the step)
        std::size_t pos = lo + static_cast<std::size_t>(rng.below(hi - lo));
        if (pos >= i) ++pos;  // not back where it was
        t.events.insert(t.events.begin() + static_cast<std::ptrdiff_t>(pos), std::move(e));
    } else {
        const int step = e.step;
        e.step = choose_step(rng, t);
        if (e.step == step) e.step = step == 0 ? between(rng, 1, 8) : between(rng, 0, step - 1);
        insert_event(t, std::move(e));
    }
    return !(t.events == before);
}

bool add_abort(Trace& t, Prng& rng) {
    const auto arrives = indices_of(t, is_arrive);
    if (arrives.empty()) return false;
    const std::size_t i = pick(rng, arrives);
    const int step = std::min(envelope::kMaxEventStep, t.events[i].step + choose_from(rng, {0, 1, 2, 3, 4, 6, 9, 14}));
    insert_event(t, Event{.step = step, .body = AbortEvent{.request_id = std::get<ArriveEvent>(t.events[i].body).request_id}},
                 i + 1);
    return true;
}

std::vector<FaultKind> allowed_faults(const Trace& t) {
    std::vector<FaultKind> kinds;
    if (detail::has_connector(t, kConnectorStore))
        kinds = {FaultKind::store_delay, FaultKind::store_fail, FaultKind::lookup_pending};
    if (!t.connectors.empty()) kinds.push_back(FaultKind::load_fail);
    return kinds;
}

// A fault of `kind` with random parameters; request faults go right after their request's arrival.
bool add_fault_of(Trace& t, Prng& rng, FaultKind kind) {
    FaultEvent f{.kind = kind};
    std::size_t not_before = 0;
    int step = choose_step(rng, t);
    if (kind == FaultKind::load_fail || kind == FaultKind::lookup_pending) {
        const auto arrives = indices_of(t, is_arrive);
        if (arrives.empty()) return false;
        const std::size_t i = pick(rng, arrives);
        f.request_id = std::get<ArriveEvent>(t.events[i].body).request_id;
        not_before = i + 1;
        step = std::min(envelope::kMaxEventStep, t.events[i].step + (rng.chance(2, 3) ? 0 : between(rng, 1, 3)));
    }
    if (kind == FaultKind::store_delay || kind == FaultKind::store_fail)
        f.rank = between(rng, 0, t.workers.ranks - 1);
    if (kind == FaultKind::store_delay || kind == FaultKind::lookup_pending)
        f.steps = choose_from(rng, {1, 2, 3, 4, 6, 8, 12});
    insert_event(t, Event{.step = step, .body = f}, not_before);
    return true;
}

bool add_fault(Trace& t, Prng& rng) {
    const auto kinds = allowed_faults(t);
    if (kinds.empty()) return false;
    return add_fault_of(t, rng, kinds[static_cast<std::size_t>(rng.below(kinds.size()))]);
}

// A value of `values` other than `current`, drawn evenly.
int choose_other(Prng& rng, std::initializer_list<int> values, int current) {
    std::vector<int> others;
    for (const int v : values)
        if (v != current) others.push_back(v);
    return others[static_cast<std::size_t>(rng.below(others.size()))];
}

// Another rank than the fault's own; false with one rank.
bool move_fault_rank(FaultEvent& f, const Trace& t, Prng& rng) {
    if (t.workers.ranks < 2) return false;
    f.rank = (f.rank + between(rng, 1, t.workers.ranks - 1)) % t.workers.ranks;
    return true;
}

// Changes one parameter of the fault (its rank, delay or request) to a different value; false when it has
// no other value to take.
bool change_fault_parameter(FaultEvent& f, const Trace& t, Prng& rng, bool prefer_rank) {
    const bool has_rank = f.kind == FaultKind::store_delay || f.kind == FaultKind::store_fail;
    if (prefer_rank && has_rank && move_fault_rank(f, t, rng)) return true;
    if (f.kind == FaultKind::store_delay || f.kind == FaultKind::lookup_pending) {
        f.steps = choose_other(rng, {1, 2, 3, 5, 8, 12}, f.steps);
        return true;
    }
    if (f.kind == FaultKind::load_fail) {  // another request
        std::vector<std::string> others;
        for (const std::size_t i : indices_of(t, is_arrive))
            if (const auto& id = std::get<ArriveEvent>(t.events[i].body).request_id; id != f.request_id)
                others.push_back(id);
        if (others.empty()) return false;
        f.request_id = others[static_cast<std::size_t>(rng.below(others.size()))];
        return true;
    }
    return move_fault_rank(f, t, rng);
}

bool change_fault(Trace& t, Prng& rng) {
    const auto faults = indices_of(t, is_fault);
    if (faults.empty()) return false;
    const std::size_t i = pick(rng, faults);
    FaultEvent& f = std::get<FaultEvent>(t.events[i].body);
    const auto choice = rng.below(3);
    if (choice != 0) return change_fault_parameter(f, t, rng, choice == 1);
    // another kind: replace the event
    const auto kinds = allowed_faults(t);
    if (kinds.empty()) return false;
    const FaultKind kind = kinds[static_cast<std::size_t>(rng.below(kinds.size()))];
    t.events.erase(t.events.begin() + static_cast<std::ptrdiff_t>(i));
    return add_fault_of(t, rng, kind);
}

ArriveEvent* random_arrive(Trace& t, Prng& rng) {
    const auto arrives = indices_of(t, is_arrive);
    if (arrives.empty()) return nullptr;
    return &std::get<ArriveEvent>(t.events[pick(rng, arrives)].body);
}

bool change_max_tokens(Trace& t, Prng& rng) {
    ArriveEvent* a = random_arrive(t, rng);
    if (a == nullptr) return false;
    a->max_tokens = boundary_count(rng, t.engine.block_size, envelope::kMaxMaxTokens);
    return true;
}

bool change_prompt(Trace& t, Prng& rng) {
    const auto arrives = indices_of(t, is_arrive);
    if (arrives.empty()) return false;
    const std::size_t i = pick(rng, arrives);
    // random_segment may add a segment (a reference into t.segments, not into the events)
    auto prompt = std::get<ArriveEvent>(t.events[i].body).prompt;
    switch (rng.below(3)) {
        case 0: prompt.push_back(random_segment(t, rng)); break;
        case 1:
            if (prompt.size() < 2) return false;
            prompt.erase(prompt.begin() + static_cast<std::ptrdiff_t>(rng.below(prompt.size())));
            break;
        default:
            if (prompt.empty()) return false;
            pick(rng, prompt) = random_segment(t, rng);
            break;
    }
    std::get<ArriveEvent>(t.events[i].body).prompt = std::move(prompt);
    return true;
}

bool share_prefix(Trace& t, Prng& rng) {
    const auto arrives = indices_of(t, is_arrive);
    if (arrives.size() < 2 || t.segments.empty()) return false;
    const auto n = arrives.size();
    const auto f = static_cast<std::size_t>(rng.below(n));
    const auto to = arrives[(f + 1 + static_cast<std::size_t>(rng.below(n - 1))) % n];
    const auto source = std::get<ArriveEvent>(t.events[arrives[f]].body).prompt;
    auto& target = std::get<ArriveEvent>(t.events[to].body).prompt;
    if (source.empty()) return false;
    std::vector<std::string> prompt(source.begin(), source.begin() + between(rng, 1, static_cast<int>(source.size())));
    if (rng.chance(1, 2) && target.size() > 1) prompt.insert(prompt.end(), target.begin() + 1, target.end());
    else if (rng.chance(1, 2)) prompt.push_back(pick(rng, t.segments).name);
    if (prompt == target) return false;
    target = std::move(prompt);
    return true;
}

bool toggle_remote(Trace& t, Prng& rng) {
    ArriveEvent* a = random_arrive(t, rng);
    if (a == nullptr) return false;
    if (a->remote_prefill || a->remote_decode) {
        a->remote_prefill = a->remote_decode = false;
        return true;
    }
    if (rng.chance(1, 2)) {
        a->remote_prefill = true;
        if (!passes_remote_prefill(t.connectors)) {  // bring the connector the flag needs
            auto p2p = std::find_if(t.connectors.begin(), t.connectors.end(),
                                    [](const ConnectorSpec& c) { return c.kind == kConnectorP2p; });
            if (p2p != t.connectors.end()) {
                p2p->role = rng.chance(1, 2) ? KvRole::kv_consumer : KvRole::kv_both;
            } else {
                ConnectorSpec c = random_connector(rng, kConnectorP2p);
                if (c.role == KvRole::kv_producer) c.role = KvRole::kv_consumer;
                t.connectors.insert(t.connectors.begin(), c);
            }
        }
    } else {
        a->remote_decode = true;
        if (!accepts_remote_decode(t.connectors)) {
            std::erase_if(t.connectors, [](const ConnectorSpec& c) {
                return c.kind == kConnectorP2p || c.kind == kConnectorStandIn;
            });
            ConnectorSpec p2p = random_connector(rng, kConnectorP2p);
            p2p.role = rng.chance(1, 2) ? KvRole::kv_producer : KvRole::kv_both;
            t.connectors.insert(t.connectors.begin(), p2p);
        }
    }
    return true;
}

std::int64_t longest_prompt(const Trace& t) {
    const auto lengths = detail::segment_lengths(t);
    std::int64_t n = 1;
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) n = std::max(n, detail::sequence_length(lengths, a->prompt));
    return n;
}

// Blocks the running requests need at their peak, all together (pressure below it preempts).
int total_blocks(const Trace& t) {
    const auto lengths = detail::segment_lengths(t);
    std::int64_t n = 0;
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body))
            n += detail::cdiv(detail::sequence_length(lengths, a->prompt) + a->max_tokens, t.engine.block_size);
    return static_cast<int>(std::min<std::int64_t>(n, envelope::kMaxNumBlocks));
}

bool engine_size(Trace& t, Prng& rng) {
    EngineConfig& e = t.engine;
    const EngineConfig before = e;
    const int bs = e.block_size;
    switch (rng.below(6)) {
        case 0: {  // tight pools preempt; normalize raises a pool that cannot hold one request
            const int total = total_blocks(t);
            e.num_blocks = rng.chance(2, 3) ? std::max(2, between(rng, total / 2, total + 2))
                                            : choose_from(rng, {8, 16, 32, 64, 128, 256});
            break;
        }
        case 1: e.block_size = choose_from(rng, {1, 2, 4, 4, 8, 8, 16, 16, 16, 32}); break;  // 1 is slow: rarer
        case 2:
            e.max_batched_tokens = rng.chance(1, 2) ? choose_from(rng, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024})
                                                    : std::max(1, bs + between(rng, -1, 1));
            break;
        case 3: e.max_running = choose_from(rng, {1, 2, 3, 4, 8, 16}); break;
        case 4: {
            const auto longest = static_cast<int>(longest_prompt(t));
            e.max_model_len = rng.chance(1, 2) ? longest + between(rng, 1, 2 * bs + 1)
                                               : choose_from(rng, {32, 64, 128, 256, 384});
            break;
        }
        default:
            e.long_prefill_threshold = choose_from(rng, {0, 0, 1, 2, bs, 2 * bs, 16, 64, 128});
            break;
    }
    return !(e == before);
}

bool engine_flags(Trace& t, Prng& rng) {
    EngineConfig& e = t.engine;
    switch (rng.below(3)) {
        case 0: e.chunked_prefill = !e.chunked_prefill; break;
        case 1: e.prefix_caching = !e.prefix_caching; break;
        default: e.reserve_full_isl = !e.reserve_full_isl; break;
    }
    return true;
}

// Steps the policy through unset, recompute, fail: both policies and the release default.
bool load_failure_policy(Trace& t, Prng&) {
    auto& policy = t.engine.kv_load_failure_policy;
    if (!policy) policy = LoadFailurePolicy::recompute;
    else if (*policy == LoadFailurePolicy::recompute) policy = LoadFailurePolicy::fail;
    else policy.reset();
    return true;
}

// Steps the scheduling mode through unset, on, off: both modes and the release default.
bool async_scheduling(Trace& t, Prng&) {
    auto& mode = t.engine.async_scheduling;
    if (!mode) mode = true;
    else if (*mode) mode = false;
    else mode.reset();
    return true;
}

bool run_seed(Trace& t, Prng& rng) {
    const std::uint64_t before = t.run.seed;
    t.run.seed = rng.below(1u << 16);
    return t.run.seed != before;
}

bool add_connector(Trace& t, Prng& rng) {
    const bool p2p = detail::has_connector(t, kConnectorP2p);
    const bool store = detail::has_connector(t, kConnectorStore);
    if (t.connectors.empty() || (rng.chance(1, 8) && !detail::has_connector(t, kConnectorStandIn))) {
        // a single connector of any kind (stand_in replaces whatever was there)
        const std::string_view kind = choose_from(rng, {0, 1, 2}) == 0 ? kConnectorStandIn
                                      : rng.chance(1, 2)                ? kConnectorP2p
                                                                        : kConnectorStore;
        if (kind == kConnectorStandIn) t.connectors.clear();
        if (detail::has_connector(t, kind)) return false;
        t.connectors.push_back(random_connector(rng, kind));
        return true;
    }
    if (p2p && store) return false;
    if (detail::has_connector(t, kConnectorStandIn)) t.connectors.clear();  // stand_in -> a real connector
    const std::string_view kind = p2p ? kConnectorStore : (store ? kConnectorP2p : (rng.chance(1, 2) ? kConnectorP2p : kConnectorStore));
    const auto pos = static_cast<std::ptrdiff_t>(rng.below(t.connectors.size() + 1));  // MultiConnector order
    t.connectors.insert(t.connectors.begin() + pos, random_connector(rng, kind));
    return true;
}

bool remove_connector(Trace& t, Prng& rng) {
    if (t.connectors.empty()) return false;
    t.connectors.erase(t.connectors.begin() + static_cast<std::ptrdiff_t>(rng.below(t.connectors.size())));
    return true;
}

bool swap_connectors(Trace& t, Prng&) {
    if (t.connectors.size() < 2) return false;
    std::reverse(t.connectors.begin(), t.connectors.end());
    return true;
}

// A connector's kv_role, or the MultiConnector's own (its top-level kv_transfer_config).
bool change_role(Trace& t, Prng& rng) {
    if (t.connectors.empty()) return false;
    const bool top = t.multi.has_value() && rng.chance(1, t.connectors.size() + 1);
    KvRole& role = top ? t.multi->role : pick(rng, t.connectors).role;
    const KvRole before = role;
    while (role == before) role = choose_role(rng);
    return true;
}

bool connector_option(Trace& t, Prng& rng) {
    std::vector<ConnectorSpec*> options;
    for (ConnectorSpec& c : t.connectors)
        if (c.kind != kConnectorP2p) options.push_back(&c);
    if (options.empty()) return false;
    ConnectorSpec& c = *pick(rng, options);
    if (c.kind == kConnectorStandIn) {
        const int before = c.load_delay;
        c.load_delay = choose_delay(rng);
        return c.load_delay != before;
    }
    switch (rng.below(3)) {  // load_async stays on: upstream's store worker asserts it
        case 0: c.lookup_async = !c.lookup_async; break;
        case 1: c.enable_lookup = !c.enable_lookup; break;
        default: c.save_decode_cache = !c.save_decode_cache; break;
    }
    return true;
}

bool workers(Trace& t, Prng& rng) {
    WorkerConfig& w = t.workers;
    const WorkerConfig before = w;
    switch (rng.below(4)) {
        case 0: w.ranks = between(rng, 1, envelope::kMaxRanks); break;
        case 1:
            w.store_delay_min = choose_delay(rng);
            w.store_delay_max = w.store_delay_min + (rng.chance(1, 2) ? 0 : choose_delay(rng));
            break;
        case 2:
            w.load_delay_min = choose_delay(rng);
            w.load_delay_max = w.load_delay_min + (rng.chance(1, 2) ? 0 : choose_delay(rng));
            break;
        default: w.pull_delay = choose_delay(rng); break;
    }
    return !(w == before);
}

bool segment_size(Trace& t, Prng& rng) {
    if (t.segments.empty()) return false;
    Segment& s = pick(rng, t.segments);
    const auto before = s.tokens.size();
    const auto length = static_cast<std::size_t>(boundary_count(rng, t.engine.block_size, envelope::kMaxSegmentLen));
    if (s.generated) {
        s.tokens = generated_segment_tokens(s.name, static_cast<int>(length));
    } else {
        while (s.tokens.size() < length) s.tokens.push_back(static_cast<std::int32_t>(rng.below(64)));
        s.tokens.resize(length);
    }
    return s.tokens.size() != before;
}

bool segment_tokens(Trace& t, Prng& rng) {
    if (t.segments.empty()) return false;
    const std::size_t i = static_cast<std::size_t>(rng.below(t.segments.size()));
    const Segment& other = pick(rng, t.segments);
    const auto other_tokens = other.tokens;
    Segment& s = t.segments[i];
    const auto before = s;
    switch (rng.below(3)) {
        case 0:  // copy a prefix of another segment (equal leading blocks under another name), then diverge
            if (other_tokens.empty()) return false;
            s.tokens.assign(other_tokens.begin(),
                            other_tokens.begin() + between(rng, 1, static_cast<int>(other_tokens.size())));
            if (rng.chance(1, 2)) s.tokens.push_back(static_cast<std::int32_t>(rng.below(50001)));
            s.generated = false;
            break;
        case 1:  // edit one token (small ids collide more)
            if (s.tokens.empty()) return false;
            s.generated = false;
            pick(rng, s.tokens) = static_cast<std::int32_t>(rng.chance(1, 2) ? rng.below(8) : rng.below(50001));
            break;
        default:  // back to tokens derived from the name (or explicit, same tokens)
            if (s.generated) {
                s.generated = false;
            } else {
                s.generated = true;
                s.tokens = generated_segment_tokens(s.name, static_cast<int>(s.tokens.size()));
            }
            break;
    }
    return !(s == before);
}

void ensure_store(Trace& t, Prng& rng) {
    if (detail::has_connector(t, kConnectorStore)) return;
    if (detail::has_connector(t, kConnectorStandIn)) t.connectors.clear();
    const auto pos = static_cast<std::ptrdiff_t>(rng.below(t.connectors.size() + 1));
    t.connectors.insert(t.connectors.begin() + pos, random_connector(rng, kConnectorStore));
}

std::vector<std::string> store_prefix(Trace& t, Prng& rng) {
    const auto arrives = indices_of(t, is_arrive);
    if (!arrives.empty() && rng.chance(3, 4)) {  // what a prefill engine wrote for this prompt
        const auto& prompt = std::get<ArriveEvent>(t.events[pick(rng, arrives)].body).prompt;
        if (!prompt.empty()) return {prompt.begin(), prompt.begin() + between(rng, 1, static_cast<int>(prompt.size()))};
    }
    return {random_segment(t, rng)};
}

bool add_store_entry(Trace& t, Prng& rng) {
    ensure_store(t, rng);
    t.store.push_back(StoreEntry{.prefix = store_prefix(t, rng)});
    return true;
}

bool remove_store_entry(Trace& t, Prng& rng) {
    if (t.store.empty()) return false;
    t.store.erase(t.store.begin() + static_cast<std::ptrdiff_t>(rng.below(t.store.size())));
    return true;
}

bool change_store_entry(Trace& t, Prng& rng) {
    if (t.store.empty()) return false;
    const std::size_t i = static_cast<std::size_t>(rng.below(t.store.size()));
    auto prefix = t.store[i].prefix;
    switch (rng.below(3)) {
        case 0: prefix.push_back(random_segment(t, rng)); break;
        case 1:
            if (prefix.size() < 2) return false;
            prefix.pop_back();
            break;
        default: prefix = store_prefix(t, rng); break;
    }
    if (prefix == t.store[i].prefix) return false;
    t.store[i].prefix = std::move(prefix);
    return true;
}

// ---- the table of mutations ---------------------------------------------------------------

// One row per mutation, in enum order: its name, its weight in mutate()'s draw, and what it does.
struct MutationRow {
    Mutation mutation;
    std::string_view name;
    int weight;
    bool (*apply)(Trace&, Prng&);
};

constexpr std::array<MutationRow, kMutationCount> kMutationTable = {{
    {.mutation = Mutation::add_request, .name = "add_request", .weight = 1, .apply = add_request},
    {.mutation = Mutation::remove_event, .name = "remove_event", .weight = 1, .apply = remove_event},
    {.mutation = Mutation::move_event, .name = "move_event", .weight = 1, .apply = move_event},
    {.mutation = Mutation::add_abort, .name = "add_abort", .weight = 1, .apply = add_abort},
    {.mutation = Mutation::add_fault, .name = "add_fault", .weight = 1, .apply = add_fault},
    {.mutation = Mutation::change_fault, .name = "change_fault", .weight = 1, .apply = change_fault},
    {.mutation = Mutation::change_max_tokens, .name = "change_max_tokens", .weight = 1, .apply = change_max_tokens},
    {.mutation = Mutation::change_prompt, .name = "change_prompt", .weight = 1, .apply = change_prompt},
    {.mutation = Mutation::share_prefix, .name = "share_prefix", .weight = 1, .apply = share_prefix},
    {.mutation = Mutation::toggle_remote, .name = "toggle_remote", .weight = 1, .apply = toggle_remote},
    {.mutation = Mutation::engine_size, .name = "engine_size", .weight = 1, .apply = engine_size},
    {.mutation = Mutation::engine_flags, .name = "engine_flags", .weight = 1, .apply = engine_flags},
    {.mutation = Mutation::run_seed, .name = "run_seed", .weight = 1, .apply = run_seed},
    {.mutation = Mutation::add_connector, .name = "add_connector", .weight = 1, .apply = add_connector},
    {.mutation = Mutation::remove_connector, .name = "remove_connector", .weight = 1, .apply = remove_connector},
    {.mutation = Mutation::swap_connectors, .name = "swap_connectors", .weight = 1, .apply = swap_connectors},
    {.mutation = Mutation::change_role, .name = "change_role", .weight = 1, .apply = change_role},
    {.mutation = Mutation::connector_option, .name = "connector_option", .weight = 1, .apply = connector_option},
    {.mutation = Mutation::workers, .name = "workers", .weight = 1, .apply = workers},
    {.mutation = Mutation::segment_size, .name = "segment_size", .weight = 1, .apply = segment_size},
    {.mutation = Mutation::segment_tokens, .name = "segment_tokens", .weight = 1, .apply = segment_tokens},
    {.mutation = Mutation::add_store_entry, .name = "add_store_entry", .weight = 1, .apply = add_store_entry},
    {.mutation = Mutation::remove_store_entry, .name = "remove_store_entry", .weight = 1, .apply = remove_store_entry},
    {.mutation = Mutation::change_store_entry, .name = "change_store_entry", .weight = 1, .apply = change_store_entry},
    {.mutation = Mutation::load_failure_policy, .name = "load_failure_policy", .weight = 1, .apply = load_failure_policy},
    {.mutation = Mutation::async_scheduling, .name = "async_scheduling", .weight = 1, .apply = async_scheduling},
}};

constexpr bool rows_in_enum_order() {
    for (std::size_t i = 0; i < kMutationTable.size(); ++i)
        if (static_cast<std::size_t>(kMutationTable[i].mutation) != i || kMutationTable[i].weight < 1) return false;
    return true;
}
static_assert(rows_in_enum_order(), "kMutationTable: one row per Mutation, in enum order, positive weights");

constexpr std::array<Mutation, kMutationCount> kMutations = [] {
    std::array<Mutation, kMutationCount> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = kMutationTable[i].mutation;
    return out;
}();

constexpr std::uint64_t kTotalWeight = [] {
    std::uint64_t total = 0;
    for (const MutationRow& row : kMutationTable) total += static_cast<std::uint64_t>(row.weight);
    return total;
}();

// A mutation drawn by weight.
Mutation draw_mutation(Prng& rng) {
    std::uint64_t x = rng.below(kTotalWeight);
    for (const MutationRow& row : kMutationTable) {
        if (x < static_cast<std::uint64_t>(row.weight)) return row.mutation;
        x -= static_cast<std::uint64_t>(row.weight);
    }
    return kMutationTable.back().mutation;
}

const MutationRow* row_of(Mutation mutation) {
    const auto i = static_cast<std::size_t>(mutation);
    return i < kMutationTable.size() ? &kMutationTable[i] : nullptr;
}

// ---- crossover helpers --------------------------------------------------------------------

// Adds b's segments to `child`; returns b's name -> child's name (renamed on a clash).
std::unordered_map<std::string, std::string> merge_segments(Trace& child, const Trace& b) {
    std::unordered_map<std::string, std::string> rename;
    for (const Segment& s : b.segments) {
        const Segment* same = child.find_segment(s.name);
        if (same != nullptr && same->tokens == s.tokens && same->generated == s.generated) continue;
        Segment copy = s;
        if (same != nullptr) {
            copy.name = detail::fresh_segment_name(child);
            if (copy.generated) {  // keep the tokens: explicit under the new name
                copy.generated = false;
            }
            rename.emplace(s.name, copy.name);
        }
        child.segments.push_back(std::move(copy));
    }
    return rename;
}

void apply_rename(std::vector<std::string>& names, const std::unordered_map<std::string, std::string>& rename) {
    for (std::string& n : names)
        if (const auto it = rename.find(n); it != rename.end()) n = it->second;
}

// b's events with segments and request ids renamed into the child's name space.
std::vector<Event> imported_events(const Trace& child, const Trace& b,
                                   const std::unordered_map<std::string, std::string>& segment_rename) {
    std::unordered_map<std::string, std::string> ids;
    std::set<std::string, std::less<>> taken;  // the child's request ids, and the ones given out
    for (const Event& e : child.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) taken.insert(a->request_id);
    std::vector<Event> out;
    for (Event e : b.events) {
        if (auto* a = std::get_if<ArriveEvent>(&e.body)) {
            apply_rename(a->prompt, segment_rename);
            if (taken.contains(a->request_id)) {  // detail::fresh_request_id of the child and the given-out ids
                const std::string fresh = detail::fresh_name("r", [&](const std::string& n) { return taken.contains(n); });
                ids[a->request_id] = fresh;
                a->request_id = fresh;
            }
            taken.insert(a->request_id);
        } else if (std::string* id = event_request_id(e.body)) {
            if (const auto it = ids.find(*id); it != ids.end()) *id = it->second;
        }
        out.push_back(std::move(e));
    }
    return out;
}

// repair(text, seed), read only: the cache's own trace when it can be, else repaired into `storage`.
const Trace& parent_view(std::string_view text, std::uint64_t seed, const TextOptions& options,
                         std::optional<Trace>& storage) {
    return options.cache != nullptr ? options.cache->repaired_view(text, seed, storage)
                                    : storage.emplace(repair(text, seed));
}

Trace parent(std::string_view text, std::uint64_t seed, const TextOptions& options) {
    std::optional<Trace> storage;
    return owned(parent_view(text, seed, options, storage), storage);
}

std::string fit_and_print(Trace t, const TextOptions& options) {
    if (!options.variant.empty()) t.run.variant = options.variant;
    std::string text = print_trace(t);
    while (text.size() > options.max_size) {
        // shrink from the end: events, then store lines, then connectors
        if (!t.events.empty()) t.events.pop_back();
        else if (!t.store.empty()) t.store.pop_back();
        else if (!t.connectors.empty()) t.connectors.pop_back();
        else break;
        normalize(t);
        if (!options.variant.empty()) t.run.variant = options.variant;
        text = print_trace(t);
    }
    if (text.size() > options.max_size) return {};
    if (options.cache != nullptr) options.cache->printed(text, std::move(t));
    return text;
}

}  // namespace

std::string_view to_string(Mutation mutation) {
    const MutationRow* row = row_of(mutation);
    return row != nullptr ? row->name : "?";
}

std::span<const Mutation> all_mutations() { return kMutations; }

bool apply_mutation(Trace& t, Mutation mutation, Prng& rng) {
    const MutationRow* row = row_of(mutation);
    return row != nullptr && row->apply(t, rng);
}

namespace {

// mutate() of a trace normalize() leaves as it is: repair()'s, whether cached or not.
std::vector<Mutation> mutate_normalized(Trace& t, Prng& rng) {
    const Trace original = t;
    std::vector<Mutation> applied;
    for (int attempt = 0; attempt < 8; ++attempt) {
        const int wanted = rng.chance(1, 2) ? 1 : between(rng, 2, 4);
        for (int tries = 0; tries < 4 * wanted && static_cast<int>(applied.size()) < wanted; ++tries) {
            const Mutation m = draw_mutation(rng);
            if (apply_mutation(t, m, rng)) applied.push_back(m);
        }
        normalize(t);
        if (!(t == original)) break;  // a mutation normalize() undid does not count
    }
    return applied;
}

}  // namespace

std::vector<Mutation> mutate(Trace& t, Prng& rng) {
    normalize(t);
    return mutate_normalized(t, rng);
}

Trace cross_over(Trace a, const Trace& b, Prng& rng) {
    Trace child = std::move(a);
    if (rng.chance(1, 2)) child.engine = b.engine;
    if (rng.chance(1, 2)) child.run = b.run;
    if (rng.chance(1, 2)) child.workers = b.workers;
    switch (rng.below(3)) {
        case 0: break;
        case 1: child.connectors = b.connectors; break;
        default:  // both stacks: a's children, then b's kinds a lacks (normalize drops what cannot combine)
            for (const ConnectorSpec& c : b.connectors)
                if (!detail::has_connector(child, c.kind)) child.connectors.push_back(c);
            break;
    }
    const auto segment_rename = merge_segments(child, b);
    for (StoreEntry entry : b.store) {
        apply_rename(entry.prefix, segment_rename);
        child.store.push_back(std::move(entry));
    }
    std::vector<Event> theirs = imported_events(child, b, segment_rename);
    if (rng.chance(1, 2)) {
        // splice: a's first events, then b's last ones, shifted to start where a's part ends
        const auto cut_a = static_cast<std::size_t>(rng.below(child.events.size() + 1));
        const auto cut_b = static_cast<std::size_t>(rng.below(theirs.size() + 1));
        child.events.resize(cut_a);
        const int base = child.events.empty() ? 0 : child.events.back().step;
        const int shift = cut_b < theirs.size() ? std::max(0, base - theirs[cut_b].step) : 0;
        for (std::size_t i = cut_b; i < theirs.size(); ++i) {
            theirs[i].step += shift;
            child.events.push_back(std::move(theirs[i]));
        }
    } else {
        // merge by step (stable: a's events first within a step)
        std::vector<Event> merged;
        std::merge(child.events.begin(), child.events.end(), theirs.begin(), theirs.end(), std::back_inserter(merged),
                   [](const Event& x, const Event& y) { return x.step < y.step; });
        child.events = std::move(merged);
    }
    normalize(child);
    return child;
}

std::string mutate_text(std::string_view input, std::uint64_t seed, const TextOptions& options) {
    Prng rng(seed);
    Trace t = parent(input, rng.next(), options);
    if (options.byte_mutate && rng.below(kByteMutationOdds) == 0) {
        // Byte-level mutation of the printed text (libFuzzer's own mutators, with the .dict), then repair.
        const std::string text = print_trace(t);
        std::vector<std::uint8_t> buffer(std::max(options.max_size, text.size()) + 1);
        std::memcpy(buffer.data(), text.data(), text.size());
        const std::size_t size = options.byte_mutate(buffer.data(), text.size(), buffer.size() - 1);
        Trace repaired = repair(
            std::string_view(reinterpret_cast<const char*>(buffer.data()), std::min(size, buffer.size())), rng.next());
        if (repaired == t) mutate_normalized(t, rng);
        else t = std::move(repaired);
    } else {
        mutate_normalized(t, rng);
    }
    return fit_and_print(std::move(t), options);
}

std::string cross_over_text(std::string_view a, std::string_view b, std::uint64_t seed, const TextOptions& options) {
    Prng rng(seed);
    Trace ta = parent(a, rng.next(), options);
    std::optional<Trace> b_storage;
    const Trace& tb = parent_view(b, rng.next(), options, b_storage);
    Trace child = cross_over(std::move(ta), tb, rng);  // tb is not read after this: fit_and_print fills the cache
    return fit_and_print(std::move(child), options);
}

}  // namespace kvsim::fuzz
