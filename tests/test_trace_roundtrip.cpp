// print/parse round trip: parse(print(t)) == t, and printing is a fixed point, for every
// trace under corpus/ and for randomly built in-memory traces.
#include <catch2/catch.hpp>

#include "corpus_traces.h"

#include "sim/common/prng.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

#include <algorithm>
#include <string>
#include <vector>

namespace kvsim {
namespace {

using testing::corpus_trace_paths;

// printed_size_bound is an upper bound of every line the validator skips formatting for.
void check_size_bounds(const Trace& t) {
    for (const Segment& x : t.segments) CHECK(printed_size_bound(x) >= format_line(x).size());
    for (const StoreEntry& x : t.store) CHECK(printed_size_bound(x) >= format_line(x).size());
    for (const Event& x : t.events) CHECK(printed_size_bound(x) >= format_line(x).size());
}

void check_round_trip(const Trace& t) {
    check_size_bounds(t);
    const std::string printed = print_trace(t);
    const Trace again = parse_trace(printed, "printed.trace");
    CHECK(again == t);
    CHECK(print_trace(again) == printed);
    CHECK(printed.back() == '\n');
}

TEST_CASE("round trip: every corpus trace", "[trace][roundtrip][corpus]") {
    const auto files = corpus_trace_paths();
    REQUIRE(files.size() >= 3);  // at least corpus/examples/0[123]_*.trace
    for (const std::string& file : files) {
        INFO(file);
        const Trace t = parse_trace_file(file);
        check_round_trip(t);
    }
}

TEST_CASE("round trip: the example traces hold what they say", "[trace][roundtrip][corpus]") {
    const std::string dir = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/";
    const Trace one = parse_trace_file(dir + "01_single_request.trace");
    CHECK(one.events.size() == 1);
    CHECK(one.prompt_tokens(std::get<ArriveEvent>(one.events[0].body)).size() == 40);
    const Trace two = parse_trace_file(dir + "02_shared_prefix.trace");
    CHECK(two.engine.prefix_caching);
    CHECK(two.segments.size() == 4);
    CHECK(std::holds_alternative<AbortEvent>(two.events.back().body));
    const Trace three = parse_trace_file(dir + "03_preemption_pressure.trace");
    CHECK(three.engine.num_blocks == 13);
    CHECK_FALSE(three.engine.prefix_caching);
    for (const Trace* t : {&one, &two, &three}) {
        REQUIRE(t->expectations.size() == 1);
        CHECK(t->expectations[0].variant == "v0.30.0");
        CHECK(t->expectations[0].verdict == Verdict::pass);
    }
}

TEST_CASE("round trip: a hand-written trace prints in canonical form", "[trace][roundtrip]") {
    const Trace t = parse_trace(
        "kvsim-trace 1   # header\n"
        "@0   arrive  r1 max_tokens=4 prompt=b+a remote_prefill=off\n"
        "segment a tokens=3,2,1\n"
        "segment b len=2\n"
        "expect v0.29.0+pr55066 pass\n"
        "connector stand_in load_delay=0 role=kv_producer\n"
        "engine num_blocks=10 block_size=8 max_model_len=72 prefix_caching=off\n",
        "t.trace");
    CHECK(print_trace(t) ==
          "kvsim-trace 1\n"
          "engine block_size=8 num_blocks=10 max_batched_tokens=2048 max_running=16 max_model_len=72 "
          "chunked_prefill=on prefix_caching=off long_prefill_threshold=0 reserve_full_isl=on\n"
          "run seed=1 max_steps=1000\n"
          "connector stand_in role=kv_producer load_delay=0\n"
          "segment a tokens=3,2,1\n"
          "segment b len=2\n"
          "expect v0.29.0+pr55066 pass\n"
          "@0 arrive r1 prompt=b+a max_tokens=4\n");
    check_round_trip(t);
}

// Random valid traces built in memory, as a generator or a structure-aware mutator would.
Trace random_trace(Prng& rng) {
    Trace t;
    t.engine.block_size = static_cast<int>(rng.between(1, 64));
    t.engine.num_blocks = static_cast<int>(rng.between(2, 4096));
    t.engine.max_model_len = static_cast<int>(rng.between(128, 8192));
    t.engine.chunked_prefill = rng.chance(1, 2);
    t.engine.max_batched_tokens =
        static_cast<int>(t.engine.chunked_prefill ? rng.between(1, 8192) : rng.between(t.engine.max_model_len, 16384));
    t.engine.max_running = static_cast<int>(rng.between(1, 256));
    t.engine.prefix_caching = rng.chance(1, 2);
    t.engine.long_prefill_threshold = static_cast<int>(rng.between(0, 512));
    t.run.seed = rng.next();
    t.run.max_steps = static_cast<int>(rng.between(100, 100000));
    const char* variants[] = {"", "v0.27.1", "v0.29.0", "v0.30.0", "v0.29.0+pr55066+003"};
    t.run.variant = variants[rng.below(5)];
    // None, stand_in alone, or a MultiConnector of p2p and/or store in either order.
    const auto role = [&rng] { return static_cast<KvRole>(rng.below(3)); };
    const auto connector = [&](std::string_view kind) {
        ConnectorSpec c{.kind = std::string(kind), .role = role()};
        if (kind == kConnectorStandIn) c.load_delay = static_cast<int>(rng.between(0, 50));
        if (kind == kConnectorStore) {
            c.load_async = rng.chance(1, 2);
            c.lookup_async = rng.chance(1, 2);
            c.enable_lookup = rng.chance(1, 2);
            c.save_decode_cache = rng.chance(1, 2);
        }
        t.connectors.push_back(std::move(c));
    };
    switch (rng.below(6)) {
        case 0: break;
        case 1: connector(kConnectorStandIn); break;
        case 2: connector(kConnectorP2p); break;
        case 3: connector(kConnectorStore); break;
        case 4:
            connector(kConnectorP2p);
            connector(kConnectorStore);
            break;
        default:
            connector(kConnectorStore);
            connector(kConnectorP2p);
            break;
    }
    // a MultiConnector's own role: mostly with two connectors, sometimes over one (a one-child MultiConnector)
    if (!t.connectors.empty() && t.connectors.front().kind != kConnectorStandIn &&
        (t.connectors.size() > 1 ? rng.chance(3, 4) : rng.chance(1, 4)))
        t.multi = MultiConnectorSpec{.role = role()};
    const auto has = [&t](std::string_view kind) {
        return std::any_of(t.connectors.begin(), t.connectors.end(), [kind](const auto& c) { return c.kind == kind; });
    };
    if (rng.chance(1, 2)) {  // otherwise the defaults (printed or not, depending on the connectors)
        t.workers.ranks = static_cast<int>(rng.between(1, 8));
        t.workers.store_delay_min = static_cast<int>(rng.between(0, 5));
        t.workers.store_delay_max = t.workers.store_delay_min + static_cast<int>(rng.below(5));
        t.workers.load_delay_min = static_cast<int>(rng.between(0, 5));
        t.workers.load_delay_max = t.workers.load_delay_min + static_cast<int>(rng.below(5));
        t.workers.pull_delay = static_cast<int>(rng.between(0, 20));
    }
    const auto segments = 1 + rng.below(6);
    for (std::uint64_t i = 0; i < segments; ++i) {
        Segment s;
        s.name = "seg" + std::to_string(i);
        if (rng.chance(1, 2)) {
            s.tokens = generated_segment_tokens(s.name, static_cast<int>(rng.between(1, 40)));
        } else {
            s.generated = false;
            for (auto n = rng.between(1, 10); n > 0; --n)
                s.tokens.push_back(static_cast<std::int32_t>(rng.below(1u << 31)));
        }
        t.segments.push_back(std::move(s));
    }
    if (has(kConnectorStore))  // segments are at most 40 tokens, max_model_len at least 128
        for (auto n = rng.below(4); n > 0; --n) {
            StoreEntry e;
            for (auto k = rng.between(1, 3); k > 0; --k) e.prefix.push_back(t.segments[rng.below(segments)].name);
            t.store.push_back(std::move(e));
        }
    for (std::size_t i = 0; i < 3; ++i)
        if (rng.chance(1, 2)) {
            const auto verdict = static_cast<Verdict>(rng.below(5));
            const bool signed_line = rng.chance(1, 2) && verdict != Verdict::pass;  // a signature is VERDICT:ID
            t.expectations.push_back({variants[i + 1], verdict,
                                      signed_line ? std::string(to_string(verdict)) + ":x#" + std::to_string(i) : "",
                                      rng.chance(1, 2) ? std::vector<std::string>{"a", "b.c"} : std::vector<std::string>{}});
        }
    int step = 0;
    int arrivals = 0;
    const bool can_prefill = has(kConnectorP2p) || has(kConnectorStandIn);
    const bool can_decode = std::any_of(t.connectors.begin(), t.connectors.end(), [](const ConnectorSpec& c) {
        return c.kind == kConnectorP2p && c.role != KvRole::kv_consumer;
    });
    const auto random_request = [&] { return "r" + std::to_string(rng.below(static_cast<std::uint64_t>(arrivals))); };
    for (auto n = rng.below(20); n > 0; --n) {
        step += static_cast<int>(rng.below(5));
        if (arrivals > 0 && rng.chance(1, 4)) {
            t.events.push_back({step, AbortEvent{random_request()}, 0});
            continue;
        }
        if (!t.connectors.empty() && rng.chance(1, 4)) {
            FaultEvent f;
            const auto kind = static_cast<FaultKind>(rng.below(4));
            const bool store_fault = kind != FaultKind::load_fail;
            const bool needs_request = kind == FaultKind::load_fail || kind == FaultKind::lookup_pending;
            if ((!store_fault || has(kConnectorStore)) && (!needs_request || arrivals > 0)) {
                f.kind = kind;
                if (kind == FaultKind::store_delay || kind == FaultKind::store_fail)
                    f.rank = static_cast<int>(rng.below(static_cast<std::uint64_t>(t.workers.ranks)));
                if (kind == FaultKind::store_delay || kind == FaultKind::lookup_pending)
                    f.steps = static_cast<int>(rng.between(1, 30));
                if (needs_request) f.request_id = random_request();
                t.events.push_back({step, std::move(f), 0});
                continue;
            }
        }
        ArriveEvent a;
        a.request_id = "r" + std::to_string(arrivals++);
        for (auto k = rng.between(1, 3); k > 0; --k) a.prompt.push_back(t.segments[rng.below(segments)].name);
        a.max_tokens = static_cast<int>(rng.between(1, 100));
        a.remote_prefill = can_prefill && rng.chance(1, 3);
        a.remote_decode = !a.remote_prefill && can_decode && rng.chance(1, 2);
        t.events.push_back({step, std::move(a), 0});
    }
    return t;
}

TEST_CASE("round trip: random in-memory traces", "[trace][roundtrip]") {
    Prng rng(2024);
    int connectors[4] = {};  // none, stand_in, p2p, store
    int store_lines = 0;
    int faults[4] = {};
    int remote_decode = 0;
    int workers_lines = 0;
    for (int i = 0; i < 500; ++i) {
        const Trace t = random_trace(rng);
        INFO("trace " << i << ":\n" << print_trace(t));
        REQUIRE_NOTHROW(validate_trace(t));
        check_round_trip(t);
        ++connectors[0];
        for (const ConnectorSpec& c : t.connectors)
            ++connectors[c.kind == kConnectorStandIn ? 1 : c.kind == kConnectorP2p ? 2 : 3];
        store_lines += static_cast<int>(t.store.size());
        workers_lines += print_trace(t).find("\nworkers ") != std::string::npos ? 1 : 0;
        for (const Event& e : t.events) {
            if (const auto* f = std::get_if<FaultEvent>(&e.body)) ++faults[static_cast<int>(f->kind)];
            if (const auto* a = std::get_if<ArriveEvent>(&e.body)) remote_decode += a->remote_decode ? 1 : 0;
        }
    }
    // The generator reaches every line kind it is meant to cover.
    for (int n : connectors) CHECK(n > 20);
    for (int n : faults) CHECK(n > 20);
    CHECK(store_lines > 50);
    CHECK(remote_decode > 20);
    CHECK(workers_lines > 50);
}

TEST_CASE("round trip: a hand-written store / p2p trace prints in canonical form", "[trace][roundtrip]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\n"
        "@0 arrive r1 max_tokens=4 prompt=a remote_decode=on remote_prefill=off\n"
        "store prefix=a+a\n"
        "@2 fault lookup_pending request=r1 steps=3\n"
        "@2 fault store_delay steps=2 rank=1\n"
        "workers pull_delay=4 ranks=2\n"
        "multi role=kv_producer\n"
        "connector store save_decode_cache=on role=kv_producer\n"
        "connector p2p role=kv_both\n"
        "segment a tokens=3,2,1\n"
        "engine num_blocks=10 block_size=8 max_model_len=72\n",
        "t.trace");
    CHECK(print_trace(t) ==
          "kvsim-trace 1\n"
          "engine block_size=8 num_blocks=10 max_batched_tokens=2048 max_running=16 max_model_len=72 "
          "chunked_prefill=on prefix_caching=on long_prefill_threshold=0 reserve_full_isl=on\n"
          "run seed=1 max_steps=1000\n"
          "multi role=kv_producer\n"
          "connector store role=kv_producer load_async=on lookup_async=off enable_lookup=on save_decode_cache=on\n"
          "connector p2p role=kv_both\n"
          "workers ranks=2 store_delay_min=1 store_delay_max=1 load_delay_min=1 load_delay_max=1 pull_delay=4\n"
          "segment a tokens=3,2,1\n"
          "store prefix=a+a\n"
          "@0 arrive r1 prompt=a max_tokens=4 remote_decode=on\n"
          "@2 fault lookup_pending steps=3 request=r1\n"
          "@2 fault store_delay rank=1 steps=2\n");
    check_round_trip(t);
}

TEST_CASE("round trip: the printed size bound holds for the longest values of every key", "[trace][roundtrip]") {
    constexpr int kBig = 2147483647;
    const std::string name(40, 'n');
    std::vector<Event> events = {
        Event{.step = kBig - 1,
              .body = ArriveEvent{.request_id = name, .prompt = {name, name}, .max_tokens = kBig,
                                  .remote_prefill = true, .remote_decode = true, .external = kBig}},
        Event{.step = kBig - 1, .body = AbortEvent{.request_id = name}},
        Event{.step = kBig - 1,
              .body = FaultEvent{.kind = FaultKind::lookup_pending, .rank = kBig, .steps = kBig, .request_id = name}},
        Event{.step = kBig - 1,
              .body = ReportEvent{.kind = ReportKind::invalid_blocks, .request_id = name,
                                  .index = {-kBig - 1, kBig, -kBig - 1}, .rank = kBig}},
        Event{.step = kBig - 1, .body = StopEvent{.request_id = name}},
        Event{.step = kBig - 1, .body = ResetPrefixCacheEvent{}},
    };
    for (const Event& e : events) {
        INFO(format_line(e));
        CHECK(printed_size_bound(e) >= format_line(e).size());
    }
    const Segment explicit_tokens{.name = name, .tokens = std::vector<std::int32_t>(50, -kBig - 1), .generated = false};
    CHECK(printed_size_bound(explicit_tokens) >= format_line(explicit_tokens).size());
    const StoreEntry store{.prefix = {name, name, name}};
    CHECK(printed_size_bound(store) >= format_line(store).size());
}

}  // namespace
}  // namespace kvsim
