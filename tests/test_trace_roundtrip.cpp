// print/parse round trip: parse(print(t)) == t, and printing is a fixed point, for every
// trace under corpus/ and for randomly built in-memory traces.
#include <catch2/catch.hpp>

#include "sim/common/prng.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kvsim {
namespace {

std::vector<std::string> corpus_traces() {
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    const fs::path root = fs::path(KVSIM_SOURCE_DIR) / "corpus";
    if (!fs::exists(root)) return out;
    for (const auto& entry : fs::recursive_directory_iterator(root))
        if (entry.is_regular_file() && entry.path().extension() == ".trace") out.push_back(entry.path().string());
    std::sort(out.begin(), out.end());  // directory order is not deterministic
    return out;
}

void check_round_trip(const Trace& t) {
    const std::string printed = print_trace(t);
    const Trace again = parse_trace(printed, "printed.trace");
    CHECK(again == t);
    CHECK(print_trace(again) == printed);
    CHECK(printed.back() == '\n');
}

TEST_CASE("round trip: every corpus trace", "[trace][roundtrip][corpus]") {
    const auto files = corpus_traces();
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
        "engine num_blocks=10 block_size=8 prefix_caching=off\n",
        "t.trace");
    CHECK(print_trace(t) ==
          "kvsim-trace 1\n"
          "engine block_size=8 num_blocks=10 max_batched_tokens=2048 max_running=16 max_model_len=4096 "
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
    for (auto n = rng.below(4); n > 0; --n)
        t.connectors.push_back({"stand_in", static_cast<KvRole>(rng.below(3)), static_cast<int>(rng.between(0, 50))});
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
    for (std::size_t i = 0; i < 3; ++i)
        if (rng.chance(1, 2))
            t.expectations.push_back({variants[i + 1], static_cast<Verdict>(rng.below(5)),
                                      rng.chance(1, 2) ? "crash:x#" + std::to_string(i) : ""});
    int step = 0;
    int arrivals = 0;
    for (auto n = rng.below(20); n > 0; --n) {
        step += static_cast<int>(rng.below(5));
        if (arrivals > 0 && rng.chance(1, 4)) {
            const auto victim = rng.below(static_cast<std::uint64_t>(arrivals));
            t.events.push_back({step, AbortEvent{"r" + std::to_string(victim)}, 0});
            continue;
        }
        ArriveEvent a;
        a.request_id = "r" + std::to_string(arrivals++);
        for (auto k = rng.between(1, 3); k > 0; --k) a.prompt.push_back(t.segments[rng.below(segments)].name);
        a.max_tokens = static_cast<int>(rng.between(1, 100));
        a.remote_prefill = rng.chance(1, 3);
        t.events.push_back({step, std::move(a), 0});
    }
    return t;
}

TEST_CASE("round trip: random in-memory traces", "[trace][roundtrip]") {
    Prng rng(2024);
    for (int i = 0; i < 500; ++i) {
        const Trace t = random_trace(rng);
        INFO("trace " << i << ":\n" << print_trace(t));
        REQUIRE_NOTHROW(validate_trace(t));
        check_round_trip(t);
    }
}

}  // namespace
}  // namespace kvsim
