#include <catch2/catch.hpp>

#include <fstream>

#include "cli_runner.h"

using namespace kvsim::testing;

TEST_CASE("kvsim explain cites only the trace lines whose step ran", "[cli][explain]") {
    // crashes at step 3; the arrival at step 40 never runs
    std::string trace = slurp(std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/issue46240_abort_recv_and_send_same_step.trace");
    trace += "@40 arrive r1 prompt=p1 max_tokens=4\n";
    const auto path = write_scratch("explain_late.trace", trace);
    const auto r = run_kvsim("explain " + path);
    REQUIRE(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("at step 3") && Catch::Contains("line 24: @3 report finished_sending r1"));
    CHECK(r.out.find("@40") == std::string::npos);
}
