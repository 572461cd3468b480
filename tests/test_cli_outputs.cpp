#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

const std::string kTrace = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace";

void check_one_line_error(const CliResult& r, const std::string& start) {
    CHECK(r.exit_code == 74);
    CHECK_THAT(r.err, Catch::StartsWith(start));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// kvsim with standard output on a full device (run_kvsim sends it to a file of its own).
CliResult run_to_full_device(const std::string& args) {
    const auto err = scratch_dir() / "full_stderr.txt";
    const int status = std::system((kvsim_binary() + " " + args + " >/dev/full 2>" + err.string()).c_str());
    CliResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.err = slurp(err);
    return result;
}

}  // namespace

TEST_CASE("an output that cannot be written is one line and exit 74", "[cli][outputs]") {
    check_one_line_error(run_kvsim("run " + kTrace + " -q --log /dev/full"), "kvsim: --log: cannot write /dev/full");
    check_one_line_error(run_kvsim("run " + kTrace + " -q --html /dev/full"), "kvsim: --html: cannot write /dev/full");
    check_one_line_error(run_kvsim("run " + kTrace + " -q --perfetto /dev/full"),
                         "kvsim: --perfetto: cannot write /dev/full");
    check_one_line_error(run_kvsim("run " + kTrace + " -q --log /nonexistent/dir/log"),
                         "kvsim: --log: cannot write /nonexistent/dir/log");
}

TEST_CASE("standard output on a full device is an error, not a silent success", "[cli][outputs]") {
    for (const std::string& args : {"run " + kTrace, "run " + kTrace + " --json", "run " + kTrace + " -q",
                                   std::string("explore --seeds 2 --progress 0"), std::string("variants"),
                                   std::string("format")}) {
        INFO(args);
        check_one_line_error(run_to_full_device(args), "kvsim: cannot write standard output");
    }
}

TEST_CASE("outputs: --log, --html and --perfetto naming the input trace are refused", "[cli][outputs]") {
    const std::string text = slurp(kTrace);
    const auto copy = write_scratch("own.trace", text);
    for (const std::string option : {"--log", "--html", "--perfetto"}) {
        INFO(option);
        const auto r = run_kvsim("run " + copy + " -q " + option + " " + copy);
        CHECK(r.exit_code == 64);
        CHECK_THAT(r.err, Catch::StartsWith("kvsim: " + option + ": ") && Catch::Contains("is the input trace"));
        CHECK(slurp(copy) == text);
    }
    // another name for the same file is the same file
    const auto r = run_kvsim("run " + copy + " -q --html " + (scratch_dir() / "." / "own.trace").string());
    CHECK(r.exit_code == 64);
    CHECK(slurp(copy) == text);
}
