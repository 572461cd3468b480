#include <catch2/catch.hpp>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

const std::string kTrace = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace";

// A usage error: exit 64, nothing on stdout, one line on stderr that starts with `start`.
void check_usage(const std::string& args, const std::string& start) {
    INFO(args);
    const auto r = run_kvsim(args);
    CHECK(r.exit_code == 64);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith(start));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("empty, signed, padded or repeated option values are usage errors naming the option", "[cli][options]") {
    check_usage("run " + kTrace + " -q --variant ''", "kvsim: --variant: empty value");
    check_usage("run " + kTrace + " -q --log=", "kvsim: --log: empty value");
    check_usage("run '' -q", "kvsim: trace: empty value");
    check_usage("matrix " + kTrace + " --variants ,,", "kvsim: --variants: empty item");
    check_usage("matrix " + kTrace + " --variants v0.30.0,", "kvsim: --variants: empty item");
    check_usage("matrix " + kTrace + " --variants v0.30.0,v0.29.0,v0.30.0", "kvsim: --variants: 'v0.30.0' is listed twice");
    check_usage("explore --seeds 1 --progress -5", "kvsim: --progress: expected plain decimal digits");
    check_usage("explore --seeds 010", "kvsim: --seeds: expected plain decimal digits");
    check_usage("explore --seeds 1 --seed 0x10", "kvsim: --seed: expected plain decimal digits");
    check_usage("run " + kTrace + " -q --variant v0.30.0+pr55066+pr55066",
                "kvsim: --variant: variant patch '+pr55066' given twice");
    check_usage("explain " + kTrace + " --max-events 0", "kvsim: --max-events: Value 0 not in range 1 to 1000000");
    // the same values, well formed, still run
    CHECK(run_kvsim("run " + kTrace + " -q --variant v0.30.0+pr55066").exit_code == 0);
    CHECK(run_kvsim("matrix " + kTrace + " --variants v0.30.0,v0.29.0").exit_code == 0);
}

TEST_CASE("a duplicate patch in a trace's run line is an input error", "[cli][options]") {
    std::string text = slurp(kTrace);
    const auto at = text.find("variant=v0.30.0");
    REQUIRE(at != std::string::npos);
    text.replace(at, 15, "variant=v0.30.0+pr55066+pr55066");
    const auto path = write_scratch("dup_patch.trace", text);
    const auto r = run_kvsim("run " + path + " -q");
    CHECK(r.exit_code == 65);
    CHECK_THAT(r.err, Catch::Contains("given twice"));
}

TEST_CASE("an unknown subcommand is named, and --version prints the project version", "[cli][options]") {
    check_usage("frobnicate", "kvsim: unknown subcommand 'frobnicate' (subcommands: coverage, explain,");
    check_usage("run " + kTrace + " --bogus", "kvsim: ");
    CHECK_THAT(run_kvsim("run " + kTrace + " --bogus").err, Catch::EndsWith("(see kvsim run --help)\n"));
    const auto v = run_kvsim("--version");
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.out, Catch::Matches("kvsim [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}
