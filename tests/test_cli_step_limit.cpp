#include <catch2/catch.hpp>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

// One request that finishes by step 5 of 20, then one event at `last_event`.
std::string trace_with_last_event(const std::string& event) {
    return "kvsim-trace 1\n"
           "engine block_size=16 num_blocks=32 max_batched_tokens=2048 max_running=4 max_model_len=496\n"
           "run seed=1 max_steps=20 variant=v0.30.0\n"
           "segment q len=40\n"
           "@0 arrive r1 prompt=q max_tokens=3\n" +
           event + "\n";
}

}  // namespace

TEST_CASE("an event on the last step of a drained run does not turn it into a liveness finding", "[cli][liveness]") {
    for (const std::string event : {"abort r1", "reset_prefix_cache"}) {
        for (const int step : {18, 19}) {
            INFO(event << " at step " << step);
            const auto path = write_scratch("last_step.trace", trace_with_last_event("@" + std::to_string(step) + " " + event));
            const auto r = run_kvsim("run " + path + " -q");
            CHECK(r.exit_code == 0);
            CHECK_THAT(r.out, Catch::StartsWith("pass "));
            CHECK(r.out.find("liveness") == std::string::npos);
        }
    }
}

TEST_CASE("a run still holding a request at the step limit stays a liveness finding", "[cli][liveness]") {
    const auto path = write_scratch("last_step_busy.trace",
                                    "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\n"
                                    "run max_steps=5 variant=v0.30.0\nsegment a len=6\n"
                                    "@0 arrive r1 prompt=a max_tokens=50\n@4 reset_prefix_cache\n");
    const auto r = run_kvsim("run " + path + " -q");
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.out, Catch::Contains("signature=liveness:requests_not_finished"));
}

TEST_CASE("an async run whose last batch in flight holds no request passes at the step limit", "[cli][liveness]") {
    // both requests finish in step 1's output; under async scheduling a batch is always in flight
    for (const int max_steps : {2, 3, 4}) {
        INFO("max_steps=" << max_steps);
        const auto path = write_scratch(
            "last_batch.trace",
            "kvsim-trace 1\n"
            "engine block_size=16 num_blocks=32 max_batched_tokens=2048 max_running=4 max_model_len=496 "
            "async_scheduling=on\n"
            "run seed=1 max_steps=" + std::to_string(max_steps) + " variant=v0.30.0\nsegment q len=40\n"
            "@0 arrive r1 prompt=q max_tokens=1\n@0 arrive r2 prompt=q max_tokens=1\n");
        const auto r = run_kvsim("run " + path + " -q");
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Catch::StartsWith("pass "));
    }
}
