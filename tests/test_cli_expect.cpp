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

TEST_CASE("an expect signature that is not VERDICT:ID is an input error", "[cli][expect]") {
    for (const std::string bad : {"signature=banana", "signature=crash:", "signature=violation:x",
                                  "signature=:x"}) {
        INFO(bad);
        const auto path = write_scratch("sig.trace", kHead + "expect v0.30.0 crash " + bad +
                                                         "\n@0 arrive r1 prompt=a max_tokens=2\n");
        const auto r = run_kvsim("run " + path + " -q");
        CHECK(r.exit_code == 65);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::StartsWith("kvsim: " + path + ":5: expect.signature: "));
    }
    const auto pass_sig = write_scratch("sig_pass.trace", kHead + "expect v0.30.0 pass signature=pass:x\n"
                                                                  "@0 arrive r1 prompt=a max_tokens=2\n");
    CHECK(run_kvsim("run " + pass_sig + " -q").exit_code == 65);
    const auto good = write_scratch("sig_good.trace", kHead + "expect v0.30.0 crash signature=crash:some_assert\n"
                                                              "@0 arrive r1 prompt=a max_tokens=2\n");
    CHECK(run_kvsim("run " + good + " -q").exit_code == 6);
}

TEST_CASE("step check values outside their closed sets are input errors, not mismatches", "[cli][expect]") {
    const std::string arrive = "@0 arrive r1 prompt=a max_tokens=2\n";
    for (const std::string check : {"@0 check request r1 status=DANCING", "@0 check request r1 blocks=16",
                                    "@0 check block 16 ref_cnt=1", "@0 check pool free_queue=0,99"}) {
        INFO(check);
        const auto path = write_scratch("check.trace", kHead + arrive + check + "\n");
        const auto r = run_kvsim("run " + path + " -q");
        CHECK(r.exit_code == 65);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::StartsWith("kvsim: " + path + ":6: check."));
    }
    // inside the sets: a real mismatch or a pass
    const auto mismatch = write_scratch("check_ok.trace", kHead + arrive + "@0 check request r1 status=WAITING blocks=15\n");
    CHECK(run_kvsim("run " + mismatch + " -q").exit_code == 5);
    const auto absent = write_scratch("check_absent.trace", kHead + arrive + "@0 check block 15 ref_cnt=0\n");
    CHECK(run_kvsim("run " + absent + " -q").exit_code == 0);
}
