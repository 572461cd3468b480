#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {
const std::string kExamples = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/";

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("kvsim run prints the log and one verdict line with its repro command", "[cli]") {
    const auto r = run_kvsim("run " + kExamples + "01_single_request.trace");
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.err.empty());
    const auto last_line_start = r.out.rfind('\n', r.out.size() - 2) + 1;
    const std::string last = r.out.substr(last_line_start);
    REQUIRE(last.rfind("pass ", 0) == 0);
    REQUIRE_THAT(last, Catch::Contains("variant=v0.30.0") && Catch::Contains("expect=met") &&
                           Catch::Contains("| repro: kvsim run " + kExamples + "01_single_request.trace --variant v0.30.0"));
    REQUIRE_THAT(r.out, Catch::Contains("schedule") && Catch::Contains("finish"));
}

TEST_CASE("run with --quiet prints only the verdict line - --log writes the log to a file", "[cli]") {
    const auto log = (scratch_dir() / "run.log").string();
    const auto r = run_kvsim("run " + kExamples + "03_preemption_pressure.trace --quiet --log " + log);
    REQUIRE(r.exit_code == 0);
    REQUIRE(count_lines(r.out) == 1);
    REQUIRE_THAT(slurp(log), Catch::Contains("preempt"));
}

TEST_CASE("run with --check-determinism replays and passes on a deterministic model", "[cli]") {
    const auto r = run_kvsim("run " + kExamples + "04_async_remote_prefill.trace -q --check-determinism");
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.out.rfind("pass ", 0) == 0);
}

TEST_CASE("a malformed trace exits 65 with one line naming file / line and field", "[cli]") {
    const auto path = write_scratch("bad.trace", "kvsim-trace 1\nengine block_size=16 num_blocks=x\n");
    const auto r = run_kvsim("run " + path);
    REQUIRE(r.exit_code == 65);
    REQUIRE(r.out.empty());
    REQUIRE(count_lines(r.err) == 1);
    REQUIRE_THAT(r.err, Catch::StartsWith("kvsim: " + path + ":2: engine.num_blocks: "));
}

TEST_CASE("a missing trace file exits 65", "[cli]") {
    const auto r = run_kvsim("run /nonexistent/x.trace");
    REQUIRE(r.exit_code == 65);
    REQUIRE_THAT(r.err, Catch::Contains("/nonexistent/x.trace:0: file:"));
}

TEST_CASE("usage errors exit 64: unknown variant / unknown flag / no command", "[cli]") {
    REQUIRE(run_kvsim("run " + kExamples + "01_single_request.trace --variant v9.9.9").exit_code == 64);
    const auto unknown_patch = run_kvsim("run " + kExamples + "01_single_request.trace --variant v0.29.0+nope");
    REQUIRE(unknown_patch.exit_code == 64);
    REQUIRE_THAT(unknown_patch.err, Catch::Contains("unknown variant patch '+nope'"));
    REQUIRE(run_kvsim("run " + kExamples + "01_single_request.trace --bogus").exit_code == 64);
    REQUIRE(run_kvsim("").exit_code == 64);
    const auto no_variant = write_scratch("novariant.trace",
                                          "kvsim-trace 1\nengine block_size=4 num_blocks=8 max_model_len=28\nsegment a len=3\n"
                                          "@0 arrive r1 prompt=a max_tokens=1\n");
    const auto r = run_kvsim("run " + no_variant);
    REQUIRE(r.exit_code == 64);
    REQUIRE_THAT(r.err, Catch::Contains("no variant"));
}

TEST_CASE("a step limit that requests cannot finish in gives verdict liveness (exit 3)", "[cli]") {
    const auto path = write_scratch("slow.trace",
                                    "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\nrun max_steps=5 variant=v0.30.0\n"
                                    "segment a len=6\n@0 arrive r1 prompt=a max_tokens=50\n");
    const auto r = run_kvsim("run " + path + " -q");
    REQUIRE(r.exit_code == 3);
    REQUIRE_THAT(r.out, Catch::StartsWith("liveness ") && Catch::Contains("signature=liveness:requests_not_finished"));
}

TEST_CASE("an unmet expect line is reported on the verdict line", "[cli]") {
    const auto path = write_scratch("expect.trace",
                                    "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\nrun variant=v0.30.0\n"
                                    "segment a len=6\nexpect v0.30.0 crash\n@0 arrive r1 prompt=a max_tokens=2\n");
    const auto r = run_kvsim("run " + path + " -q");
    REQUIRE(r.exit_code == 6);
    REQUIRE_THAT(r.out, Catch::Contains("expect=UNMET(expected crash)"));
}

TEST_CASE("kvsim variants lists presets and flags - kvsim format lists keys", "[cli]") {
    const auto v = run_kvsim("variants");
    REQUIRE(v.exit_code == 0);
    for (const char* preset : {"v0.27.1", "v0.29.0", "v0.29.0+003", "v0.29.0+skip_save_is_consumer", "v0.30.0"})
        REQUIRE_THAT(v.out, Catch::Contains(preset));
    REQUIRE_THAT(v.out, Catch::Contains("snapshot_rule") && Catch::Contains("#51358"));
    // the tag column: clean or known_broken, and which preset is the default
    REQUIRE_THAT(v.out, Catch::Contains("v0.29.0                        known_broken"));
    REQUIRE_THAT(v.out, Catch::Contains("v0.30.0                        clean,default"));
    REQUIRE_THAT(v.out, Catch::Contains("v0.29.0+003                    clean "));
    const auto f = run_kvsim("format");
    REQUIRE(f.exit_code == 0);
    REQUIRE_THAT(f.out, Catch::Contains("block_size") && Catch::Contains("arrive"));
    REQUIRE(run_kvsim("--help").exit_code == 0);
    REQUIRE(run_kvsim("run --help").exit_code == 0);
}

TEST_CASE("run with --async-scheduling shows a trace under both modes and its repro carries the mode", "[cli][async]") {
    const std::string trace = std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/pr45357_inflight_write_after_abort.trace";
    const auto on = run_kvsim("run " + trace + " --variant v0.30.0+pre45357 --async-scheduling on --quiet");
    CHECK(on.exit_code != 0);
    CHECK_THAT(on.out, Catch::StartsWith("violation ") &&
                           Catch::EndsWith("--variant v0.30.0+pre45357 --async-scheduling on\n"));
    const auto off = run_kvsim("run " + trace + " --variant v0.30.0+pre45357 --async-scheduling off --quiet");
    CHECK(off.exit_code == 6);  // a pass, but the expect line states the violation of async scheduling
    CHECK_THAT(off.out, Catch::StartsWith("pass ") && Catch::EndsWith("--async-scheduling off\n"));
    CHECK(run_kvsim("run " + trace + " --async-scheduling maybe").exit_code == 64);
}

TEST_CASE("run --async-scheduling both labels each mode's verdict line and exits with the worse code", "[cli][async]") {
    const std::string trace = std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/pr45357_inflight_write_after_abort.trace";
    const std::string run = "run " + trace + " --variant v0.30.0+pre45357 --async-scheduling both";
    const auto quiet = run_kvsim(run + " --quiet");
    CHECK(quiet.exit_code == 6);  // off passes against its expect line (6), on is the violation it states (1)
    const auto off_line = quiet.out.find("[async_scheduling=off] pass ");
    const auto on_line = quiet.out.find("[async_scheduling=on] violation ");
    REQUIRE(off_line == 0);
    REQUIRE(on_line != std::string::npos);
    CHECK_THAT(quiet.out, Catch::Contains("--async-scheduling off\n") && Catch::EndsWith("--async-scheduling on\n"));
    CHECK(std::count(quiet.out.begin(), quiet.out.end(), '\n') == 2);

    const auto logged = run_kvsim(run);
    CHECK(logged.exit_code == 6);
    const auto off_log = logged.out.find("== async_scheduling=off\n");
    const auto on_log = logged.out.find("== async_scheduling=on\n");
    REQUIRE(off_log == 0);
    REQUIRE(on_log != std::string::npos);
    CHECK(logged.out.find("[async_scheduling=off] pass ") < on_log);
    CHECK(logged.out.find("(fenced until") == std::string::npos);  // pre-#45357: no deferred frees in either log

    const auto json = run_kvsim(run + " --json");
    CHECK(json.exit_code == 6);
    const auto parsed = nlohmann::json::parse(json.out);
    CHECK(parsed["off"]["verdict"] == "pass");
    CHECK(parsed["on"]["verdict"] == "violation");

    const auto fixed = run_kvsim("run " + trace + " --variant v0.30.0 --async-scheduling both --quiet");
    CHECK(fixed.exit_code == 0);
    CHECK_THAT(fixed.out, Catch::Contains("[async_scheduling=off] pass ") && Catch::Contains("[async_scheduling=on] pass "));
    CHECK(run_kvsim(run + " --html /tmp/x.html").exit_code == 64);
}
