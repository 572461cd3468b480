// The fuzz target's trace cache (fuzz/mutator/trace_cache.h): what it answers is what parsing and
// repairing the text again would give, so a chain of mutations through it prints the same texts
// as the same chain without it; and it empties itself at its capacity.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/mutator/trace_cache.h"
#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/swarm/swarm.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::fuzz {
namespace {

std::string swarm_text(std::uint64_t seed) {
    Trace trace = trace_for_seed(seed, SwarmOptions{});
    return print_trace(trace);  // not normalized: the cache must repair it as repair() does
}

TEST_CASE("trace cache: a chain of mutations prints the same texts with and without it", "[fuzz][cache]") {
    TraceCache cache;
    for (std::uint64_t start = 1; start <= 12; ++start) {
        std::string plain = swarm_text(start), cached = plain;
        for (std::uint64_t i = 0; i < 40; ++i) {
            const std::uint64_t seed = start * 1000 + i;
            const TextOptions without{.max_size = 8192, .variant = "v0.30.0", .byte_mutate = {}, .cache = nullptr};
            TextOptions with = without;
            with.cache = &cache;
            // every third step a crossover with the chain's start, the others a mutation
            plain = i % 3 == 2 ? cross_over_text(plain, swarm_text(start), seed, without) : mutate_text(plain, seed, without);
            cached = i % 3 == 2 ? cross_over_text(cached, swarm_text(start), seed, with) : mutate_text(cached, seed, with);
            INFO("chain " << start << " step " << i);
            REQUIRE(cached == plain);
            REQUIRE(cache.parsed(cached) == parse_trace(cached, "<input>"));
            REQUIRE(cache.repaired(cached, seed) == repair(cached, seed));
        }
    }
    CHECK(cache.hits() > cache.misses());
}

TEST_CASE("trace cache: a text that does not parse throws, and is repaired as repair() does", "[fuzz][cache]") {
    TraceCache cache;
    const std::string garbage = "kvsim-trace 1\nengine block_size=banana\n@0 arrive\n";
    CHECK_THROWS_AS(cache.parsed(garbage), InputError);
    CHECK_THROWS_AS(cache.parsed(garbage), InputError);
    for (std::uint64_t seed : {1u, 2u, 3u}) CHECK(cache.repaired(garbage, seed) == repair(garbage, seed));
    // the seed draws the request of a text without one: a cached salvage does not fix it
    CHECK(cache.repaired(garbage, 1) != cache.repaired(garbage, 2));
}

TEST_CASE("trace cache: the mutator's output keeps no source line of its parent", "[fuzz][cache]") {
    TraceCache cache;
    const TextOptions options{.max_size = 8192, .variant = "v0.30.0", .byte_mutate = {}, .cache = &cache};
    const std::string text = mutate_text(swarm_text(7), 7, options);
    const Trace trace = cache.parsed(text);
    REQUIRE(cache.hits() == 1);
    for (const Event& e : trace.events) CHECK(e.line == 0);
    CHECK(trace == parse_trace(text, "<input>"));
}

TEST_CASE("trace cache: it empties itself when full and still answers", "[fuzz][cache]") {
    TraceCache cache;
    const std::string first = swarm_text(1);
    const Trace expected = parse_trace(first, "<input>");
    CHECK(cache.parsed(first) == expected);
    CHECK(cache.parsed(first) == expected);
    CHECK(cache.hits() == 1);
    // kCapacity other texts: the first one is gone with the rest and parsed again
    for (std::size_t i = 0; i < TraceCache::kCapacity; ++i) cache.parsed(first + "# " + std::to_string(i) + "\n");
    const std::uint64_t misses = cache.misses();
    CHECK(cache.parsed(first) == expected);
    CHECK(cache.misses() == misses + 1);
}

TEST_CASE("trace cache: Keep::no answers from the cache but does not add a text it lacks", "[fuzz][cache]") {
    TraceCache cache;
    const std::string text = swarm_text(3);
    const Trace expected = parse_trace(text, "<input>");
    CHECK(cache.parsed(text, TraceCache::Keep::no) == expected);
    CHECK(cache.parsed(text, TraceCache::Keep::no) == expected);
    CHECK(cache.misses() == 2);  // not kept: parsed twice
    CHECK(cache.hits() == 0);
    CHECK(cache.parsed(text) == expected);
    CHECK(cache.parsed(text, TraceCache::Keep::no) == expected);
    CHECK(cache.misses() == 3);
    CHECK(cache.hits() == 1);  // kept by the default, then found
}

TEST_CASE("trace cache: parsed_view answers as parsed does, from the cache or into the caller's storage",
          "[fuzz][cache]") {
    TraceCache cache;
    const std::string text = swarm_text(4);
    const Trace expected = parse_trace(text, "<input>");
    std::optional<Trace> storage;
    CHECK(cache.parsed_view(text, storage) == expected);
    REQUIRE(storage.has_value());  // a miss parses into the caller's storage and keeps nothing
    CHECK(cache.misses() == 1);
    cache.parsed(text);
    std::optional<Trace> unused;
    const Trace& found = cache.parsed_view(text, unused);
    CHECK(found == expected);
    CHECK_FALSE(unused.has_value());  // a hit is the cached trace itself
    CHECK(cache.hits() == 1);
    CHECK_THROWS_AS(cache.parsed_view("not a trace", unused), InputError);
    CHECK(cache.misses() == 3);
}

TEST_CASE("trace cache: repaired_view answers as repaired does, copying only a trace given a request",
          "[fuzz][cache]") {
    TraceCache cache;
    const std::string with_requests = swarm_text(5);
    const std::string without = "not a trace at all";
    for (int pass = 0; pass < 2; ++pass) {  // a miss, then a hit
        INFO("pass " << pass);
        std::optional<Trace> storage;
        CHECK(cache.repaired_view(with_requests, 7, storage) == repair(with_requests, 7));
        CHECK(storage.has_value() == (pass == 0));  // a hit is the cached trace itself
        std::optional<Trace> given;
        CHECK(cache.repaired_view(without, 7, given) == repair(without, 7));
        CHECK(given.has_value());  // the seed's request is added to a copy, never to the cached trace
        CHECK(cache.repaired_view(without, 8, given) == repair(without, 8));
    }
    CHECK(cache.hits() == 4);
    CHECK(cache.misses() == 2);
}

TEST_CASE("trace cache: ran_before is true only for a held text already marked, and forgets with the cache",
          "[fuzz][cache]") {
    TraceCache cache;
    const TextOptions options{.max_size = 8192, .variant = "v0.30.0", .byte_mutate = {}, .cache = &cache};
    const std::string printed = mutate_text(swarm_text(3), 3, options);
    CHECK_FALSE(cache.ran_before(printed));  // held, not yet run: marked now
    CHECK(cache.ran_before(printed));
    CHECK(cache.ran_before(printed));
    // the mutator printing the same text again keeps the mark
    cache.printed(printed, cache.parsed(printed));
    CHECK(cache.ran_before(printed));
    // a text the cache does not hold is never marked, so never a repeat
    const std::string unheld = swarm_text(4);
    CHECK_FALSE(cache.ran_before(unheld));
    CHECK_FALSE(cache.ran_before(unheld));
    // a parent the mutator read is held: its first run marks it
    std::optional<Trace> storage;
    cache.repaired_view(unheld, 1, storage);
    CHECK_FALSE(cache.ran_before(unheld));
    CHECK(cache.ran_before(unheld));
    // emptied at capacity: the marks go with the texts
    for (std::size_t i = 0; i < TraceCache::kCapacity; ++i) cache.parsed(printed + "# " + std::to_string(i) + "\n");
    CHECK_FALSE(cache.ran_before(printed));
}

}  // namespace
}  // namespace kvsim::fuzz
