// kvsim's standard error never carries a raw escape byte (cli/escaping_stderr.h): CLI11's messages
// and kvsim's own echo options and paths as given, and every byte outside printable ASCII is
// written as \xHH.
#include <catch2/catch.hpp>

#include <string>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {
const std::string kTrace = std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/seed000_multiconnector_both.trace";
const std::string kEsc = "\x1b]0;pwned\x07\x1b[31m\xc2\x9b";  // OSC title, SGR, and a C1 CSI in UTF-8
}  // namespace

TEST_CASE("standard error escapes the bytes of every echoed argument", "[cli][escaping]") {
    const std::string arg = "'" + kEsc + "'";
    for (const std::string& args : {"run " + kTrace + " " + arg, "run " + kTrace + " --log-format " + arg,
                                    "run " + kTrace + " --variant " + arg, "run /nonexistent/" + arg,
                                    "matrix " + kTrace + " --variants " + arg, "explain " + kTrace + " --max-events " + arg,
                                    "coverage " + arg, arg}) {
        const CliResult r = run_kvsim(args);
        INFO(args);
        CHECK(r.exit_code != 0);
        CHECK_FALSE(r.err.empty());
        CHECK_FALSE(has_control_byte(r.err));
        CHECK_THAT(r.err, Catch::Contains("\\x1b]0;pwned\\x07\\x1b[31m\\xc2\\x9b"));
    }
}

TEST_CASE("standard error keeps printable messages byte for byte", "[cli][escaping]") {
    const CliResult r = run_kvsim("run " + kTrace + " --variant v9.9.9");
    CHECK(r.exit_code == 64);
    CHECK(r.err == "kvsim: --variant: unknown variant 'v9.9.9' (releases: v0.27.1, v0.29.0, v0.30.0)\n");
}
