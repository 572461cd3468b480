// The incremental block-pool check (properties/checkers/block_pool_checker.h) against the full
// sweep, on a pool corrupted by hand: a fault in a block the step holds is reported at once with
// the sweep's report; a fault in a block nobody holds waits for the next full sweep, which finds it.
#include <catch2/catch.hpp>

#include "corpus_traces.h"

#include <string>
#include <vector>

#include "properties/checkers/block_pool_checker.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

const char* const kTrace =
    "kvsim-trace 1\n"
    "engine block_size=4 num_blocks=32 max_model_len=124 prefix_caching=off\n"
    "run seed=1 max_steps=100 variant=v0.30.0\n"
    "segment s len=12\n"
    "@0 arrive r prompt=s max_tokens=8\n";

std::vector<std::string> described(const std::vector<Violation>& violations) {
    std::vector<std::string> out;
    for (const Violation& v : violations) out.push_back(describe(v));
    return out;
}

// The engine's pool, writable: the faults below are what a model bug would do.
BlockPool& pool_of(const Engine& engine) {
    return const_cast<BlockPool&>(engine.scheduler().kv_cache_manager().block_pool());
}

struct Judged {
    std::vector<std::string> step;   // the incremental check_step, not sweeping
    std::vector<std::string> sweep;  // the full sweep
};

Judged judge(BlockPoolChecker& incremental, const Engine& engine) {
    std::vector<Violation> step, sweep;
    incremental.check_step(engine, step, false);
    BlockPoolChecker().check(engine, sweep);
    return {described(step), described(sweep)};
}

TEST_CASE("incremental block-pool check: a held block's fault now, an untouched block's at the sweep",
          "[checkers][incremental]") {
    const Trace trace = parse_trace(kTrace, "<incremental>");
    Engine engine(trace, require_variant("v0.30.0"));
    BlockPoolChecker incremental;
    engine.run_step(0);
    std::vector<Violation> none;
    incremental.check_step(engine, none, true);
    REQUIRE(none.empty());
    const std::vector<BlockId> held = engine.scheduler().kv_cache_manager().all_request_blocks().at("r");
    REQUIRE(held.size() == 3);

    SECTION("a held block freed behind its table's back") {
        pool_of(engine).free_blocks({held[1]});
        const Judged judged = judge(incremental, engine);
        REQUIRE_FALSE(judged.sweep.empty());
        CHECK(judged.step == judged.sweep);
    }
    SECTION("a block nobody holds taken from the free queue") {
        const BlockId untouched = 20;
        REQUIRE(engine.scheduler().kv_cache_manager().block_pool().block(untouched).ref_cnt == 0);
        pool_of(engine).touch({untouched});
        const Judged judged = judge(incremental, engine);
        CHECK(judged.step.empty());
        REQUIRE(judged.sweep.size() == 1);
        CHECK(judged.sweep.front().find("ref_count_mismatch") == 0);
        std::vector<Violation> swept;
        incremental.check_step(engine, swept, true);
        CHECK(described(swept) == judged.sweep);
    }
}

// Store saves pin their blocks until every rank has copied them: the pins come and go job by job
// while the tables grow, so the check_step keeps its counts across steps (block_pool_checker.h).
const char* const kStoreTrace =
    "kvsim-trace 1\n"
    "engine block_size=4 num_blocks=64 max_model_len=252 prefix_caching=on\n"
    "run seed=3 max_steps=100 variant=v0.30.0\n"
    "connector store role=kv_both save_decode_cache=on\n"
    "workers ranks=2 store_delay_min=1 store_delay_max=4\n"
    "segment s len=10\n"
    "segment t len=6\n"
    "@0 arrive a prompt=s max_tokens=9\n"
    "@1 arrive b prompt=s+t max_tokens=7\n"
    "@3 arrive c prompt=t max_tokens=5\n";

std::vector<BlockId> pinned_blocks(const Engine& engine) {
    std::vector<BlockId> pins;
    if (const KVConnectorScheduler* connector = engine.connector()) connector->append_pinned_blocks(pins);
    return pins;
}

TEST_CASE("incremental block-pool check: counts kept across steps judge a pinned block's fault at once",
          "[checkers][incremental]") {
    const Trace trace = parse_trace(kStoreTrace, "<incremental-store>");
    int faults_judged = 0;
    for (int fault_step = 0; fault_step < 24; ++fault_step) {
        Engine engine(trace, require_variant("v0.30.0"));
        BlockPoolChecker incremental;
        bool judged = false;
        for (int step = 0; step <= fault_step && !(engine.events_exhausted() && engine.quiet()); ++step) {
            engine.run_step(step);
            if (step < fault_step) {
                std::vector<Violation> none;
                incremental.check_step(engine, none, step % 5 == 0);
                REQUIRE(described(none).empty());
                continue;
            }
            const std::vector<BlockId> pins = pinned_blocks(engine);
            if (pins.empty()) break;
            pool_of(engine).touch({pins.back()});  // a reference nobody holds, on a block a save job pins
            const Judged verdict = judge(incremental, engine);
            REQUIRE_FALSE(verdict.sweep.empty());
            CHECK(verdict.step == verdict.sweep);
            judged = true;
        }
        if (judged) ++faults_judged;
    }
    CHECK(faults_judged >= 4);  // pins at several steps: jobs added and let go between them
}

// Every corpus trace under its own variant, step by step: wherever the full sweep finds the pool
// sound, the step check did not suspect it, so its holder counts, kept from step to step, were exact.
TEST_CASE("incremental block-pool check: its kept counts are exact on every corpus trace", "[checkers][incremental]") {
    const std::vector<std::string> files = testing::corpus_trace_paths();
    REQUIRE(files.size() >= 20);
    std::size_t steps_judged = 0;
    for (const auto& file : files) {
        INFO(file);
        const Trace trace = parse_trace_file(file);
        Engine engine(trace, require_variant(trace.run.variant));  // every corpus trace names one, as kvsim run needs
        BlockPoolChecker incremental;
        for (int step = 0; step < trace.run.max_steps && !(engine.events_exhausted() && engine.quiet()); ++step) {
            try {
                engine.run_step(step);
            } catch (const UpstreamAssertion&) {
                break;  // the modelled engine died: the trace's finding, not the checker's
            }
            const std::uint64_t before = incremental.suspicions();
            std::vector<Violation> step_found, swept;
            incremental.check_step(engine, step_found, false);
            BlockPoolChecker().check(engine, swept);
            if (!swept.empty()) break;  // a finding of the trace: the rest of the run is not sound
            REQUIRE(incremental.suspicions() == before);
            ++steps_judged;
        }
    }
    CHECK(steps_judged > 1000);
}

}  // namespace
}  // namespace kvsim
