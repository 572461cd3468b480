#include <catch2/catch.hpp>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

const std::string kHead =
    "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\nrun variant=v0.30.0\nsegment a len=6\n";

}  // namespace

TEST_CASE("kvsim run exits 6 on an unmet expect line, as kvsim matrix does", "[cli][expect]") {
    const auto unmet = write_scratch("unmet.trace", kHead + "expect v0.30.0 crash\n@0 arrive r1 prompt=a max_tokens=2\n");
    const auto r = run_kvsim("run " + unmet + " -q");
    CHECK(r.exit_code == 6);
    CHECK_THAT(r.out, Catch::StartsWith("pass ") && Catch::Contains("expect=UNMET(expected crash)"));
    CHECK(run_kvsim("run " + unmet + " --json").exit_code == 6);
    CHECK(run_kvsim("run " + unmet + " -q --async-scheduling both").exit_code == 6);
    CHECK(run_kvsim("matrix " + unmet).exit_code == 6);

    const auto met = write_scratch("met.trace", kHead + "expect v0.30.0 pass\n@0 arrive r1 prompt=a max_tokens=2\n");
    CHECK(run_kvsim("run " + met + " -q").exit_code == 0);
    CHECK(run_kvsim("matrix " + met).exit_code == 0);
    // no expect line for the variant run: the verdict's own code
    CHECK(run_kvsim("run " + met + " -q --variant v0.29.0").exit_code == 0);
}
