// scripts/nightly end to end with stubs in place of the libFuzzer binaries (the sanitizer build
// `fuzzer` and the throughput build `fast-fuzzer`, which record each call): the stub writes the
// crash artifacts a test plants (plant-canary for the canary session, plant-<variant> for a
// variant's session), one fork-mode stats line and one corpus input, then exits. The real
// kvsim triages, minimises, measures coverage and writes the report.
#include <catch2/catch.hpp>

#include "planted_traces.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "fuzz/campaign/report.h"

using namespace kvsim::testing;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;

const std::string kStubFuzzer = R"STUB(#!/usr/bin/env bash
# stub libFuzzer (tests/test_nightly.cpp)
here=$(cd "$(dirname "$0")" && pwd)
prefix="" canary=0 dirs=()
for a in "$@"; do
  case $a in
    -artifact_prefix=*) prefix=${a#*=} ;;
    -kvsim_stop_on=*) canary=1 ;;
    -*) ;;
    *) dirs+=("$a") ;;
  esac
done
plant=$here/plant-$KVSIM_FUZZ_VARIANT
((canary)) && plant=$here/plant-canary
echo "$(basename "$0") $KVSIM_FUZZ_VARIANT ${KVSIM_FUZZ_STATS##*/}" >>"$here/calls"
[[ -n ${KVSIM_FUZZ_STATS:-} ]] && echo '{"executions":1234,"repeats":56,"known":{"seed001_eager_snapshot_stale_save":3},"async_scheduling":{"off":600,"on":634}}' >"$KVSIM_FUZZ_STATS.$$.json"
if [[ -f $plant ]]; then
  cp "$plant" "${prefix}crash-$(sha1sum <"$plant" | cut -c1-40)"
  ((canary)) && echo "kvsim-finding: verdict=crash signature=crash:missing_current_block_table variant=$KVSIM_FUZZ_VARIANT"
fi
((canary)) || echo "not a trace" >"${dirs[0]}/stub-input"
sleep 1
exit 0
)STUB";

const std::string kSeed000 = R"(kvsim-trace 1
engine block_size=16 num_blocks=64 max_model_len=1008
run seed=3 max_steps=100
multi role=kv_consumer
connector p2p role=kv_consumer
connector store role=kv_consumer
segment prompt len=48
segment other len=20
store prefix=prompt
@0 arrive bystander prompt=other max_tokens=5
@1 arrive r1 prompt=prompt max_tokens=4 remote_prefill=on
)";

const std::string& kLiveness = kvsim::testing::kPendingLookupLiveness;

struct Campaign {
    fs::path dir;
    explicit Campaign(const std::string& name) : dir(scratch_dir() / name) {
        fs::remove_all(dir);
        fs::create_directories(dir / "stub");
        for (const char* build : {"fuzzer", "fast-fuzzer"}) {
            write(std::string("stub/") + build, kStubFuzzer);
            fs::permissions(dir / "stub" / build, fs::perms::owner_all);
        }
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir / name, std::ios::binary) << text;
    }
    // fuzzer: the sanitizer build's path (default: the stub)
    CliResult run(fs::path fuzzer = {}) const {
        const auto out = dir / "nightly.out";
        if (fuzzer.empty()) fuzzer = dir / "stub" / "fuzzer";
        const std::string command = "cd " + kRepo + " && scripts/nightly --minutes 0.2 --variants v0.29.0,v0.30.0 " +
                                    "--jobs 1 --canary-seconds 5 --no-build --fuzzer " + fuzzer.string() +
                                    " --fast-fuzzer " + (dir / "stub" / "fast-fuzzer").string() + " --sanitizer-share 50" +
                                    " --kvsim " + KVSIM_BINARY + " --workdir " + (dir / "work").string() + " >" +
                                    out.string() + " 2>&1";
        const int status = std::system(command.c_str());
        CliResult r;
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        r.out = slurp(out);
        return r;
    }
    nlohmann::json report() const { return nlohmann::json::parse(slurp(dir / "work" / "report.json")); }
    std::string report_md() const { return slurp(dir / "work" / "report.md"); }
};

}  // namespace

TEST_CASE("nightly with a stub fuzzer: canary passes and no new finding on the clean variant exits 0", "[triage][nightly]") {
    const Campaign c("nightly-clean");
    c.write("stub/plant-canary", kSeed000);
    c.write("stub/plant-v0.29.0", kSeed000);
    const auto r = c.run();
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("[canary] PASSED: crash:missing_current_block_table") &&
                            Catch::Contains("[v0.30.0] ") && Catch::Contains("writing the report"));
    const auto j = c.report();
    REQUIRE(j["status"] == "clean");
    REQUIRE(j["canary"]["status"] == "passed");
    REQUIRE(j["variants"].size() == 2);
    const auto& v29 = j["variants"][0];
    REQUIRE(v29["variant"] == "v0.29.0");
    REQUIRE(v29["expected_clean"] == false);
    // every job process's counts are summed; the single-process run is measured apart
    REQUIRE(v29["processes"].get<int>() >= 1);
    REQUIRE(v29["executions"].get<double>() == 1234.0 * v29["processes"].get<double>());
    REQUIRE(v29["repeats"].get<double>() == 56.0 * v29["processes"].get<double>());
    REQUIRE(v29["single_process"]["executions"] == 1234.0);
    REQUIRE(v29["exec_per_sec"].get<double>() > 0);
    REQUIRE(v29["per_job_to_single_ratio"].get<double>() > 0);
    REQUIRE(v29["known_in_process"]["seed001_eager_snapshot_stale_save"].get<double>() >= 3);
    // the jobs' last half (--sanitizer-share 50) in the sanitizer build, the rest and the single process in
    // the throughput build, and the canary too
    const auto& sanitizer = v29["sanitizer_build"];
    REQUIRE(sanitizer["processes"].get<int>() >= 1);
    REQUIRE(sanitizer["executions"].get<double>() == 1234.0 * sanitizer["processes"].get<double>());
    REQUIRE(sanitizer["repeats"].get<double>() == 56.0 * sanitizer["processes"].get<double>());
    REQUIRE(sanitizer["seconds"].get<double>() > 0);
    REQUIRE(j["sanitizer_share_percent"] == 50);
    const std::string calls = slurp(c.dir / "stub" / "calls");
    CHECK_THAT(calls, Catch::Contains("fast-fuzzer v0.29.0 single\n") && Catch::Contains("fast-fuzzer v0.29.0 jobs\n") &&
                          Catch::Contains("fuzzer v0.29.0 sanitizer\n") && Catch::Contains("fast-fuzzer v0.29.0 \n"));
    CHECK_THAT(calls, !Catch::Contains("\nfuzzer v0.29.0 jobs") && !Catch::Contains("\nfuzzer v0.29.0 single") &&
                          !Catch::Contains("fast-fuzzer v0.29.0 sanitizer"));
    // runs under each scheduling mode, summed over both builds' jobs and the single process
    const double processes = v29["processes"].get<double>() + 1 + sanitizer["processes"].get<double>();
    REQUIRE(v29["runs_by_async_scheduling"]["on"].get<double>() == 634.0 * processes);
    REQUIRE(v29["runs_by_async_scheduling"]["off"].get<double>() == 600.0 * processes);
    REQUIRE(v29["seeds_left_out"].get<int>() >= 5);  // the corpus traces that fail under v0.29.0
    REQUIRE(v29["findings_known"] == 1);
    REQUIRE(v29["findings"][0]["status"] == "known");
    REQUIRE(v29["findings"][0]["causes"] == nlohmann::json::array({"seed000_pending_load_save"}));
    const auto& v30 = j["variants"][1];
    REQUIRE(v30["expected_clean"] == true);
    REQUIRE(v30["findings"].empty());
    REQUIRE(v30["coverage"]["traces_run"].get<int>() >= 13);  // the seeds that pass under v0.30.0
    // every corpus seed is given under both scheduling modes, its engine line stating the mode
    std::map<std::string, int> seeds_by_mode;
    for (const auto& e : fs::recursive_directory_iterator(c.dir / "work" / "runs")) {
        const fs::path& p = e.path();
        if (p.parent_path().filename() != "v0.30.0" || p.parent_path().parent_path().filename() != "seeds") continue;
        for (const std::string mode : {"off", "on"})
            if (p.filename().string().ends_with(".async-" + mode + ".trace") &&
                slurp(p).find(" async_scheduling=" + mode) != std::string::npos)
                ++seeds_by_mode[mode];
    }
    CHECK(seeds_by_mode["off"] >= 13);
    CHECK(seeds_by_mode["on"] >= 13);
    CHECK(v30["seeds"].get<int>() == seeds_by_mode["off"] + seeds_by_mode["on"]);
    REQUIRE(v30["coverage"]["rejected"].get<int>() >= 1);     // the stub's corpus input
    const std::string md = c.report_md();
    REQUIRE_THAT(md, Catch::Contains("**OK: no new finding on a variant expected clean** (exit 0)") &&
                         Catch::Contains("| v0.30.0 | clean |") && Catch::Contains("exec/s single process") &&
                         Catch::Contains("runs async off / on |") &&
                         Catch::Contains("| sanitizer build: time (s) / exec/s per job |") &&
                         Catch::Contains("## Lifecycle coverage"));
    const std::string repro = v29["findings"][0]["repro"];
    const int status = std::system((repro + " --quiet >/dev/null").c_str());
    REQUIRE(WEXITSTATUS(status) == 2);

    // the report folder: index.html beside report.md (in the run directory and the workdir), each
    // linking the finding's page; the lifecycle graph of each variant, as SVG when dot is installed
    const fs::path run_dir = j["run_dir"].get<std::string>();
    const fs::path page = kvsim::finding_file(nlohmann::ordered_json::parse(v29["findings"][0].dump()), "page");
    REQUIRE(fs::is_regular_file(page));
    for (const fs::path& dir : {run_dir, c.dir / "work"}) {
        INFO(dir);
        CHECK_THAT(slurp(dir / "index.html"), Catch::Contains("href=\"" + kvsim::relative_link(page, dir) + "\""));
        CHECK_THAT(slurp(dir / "report.md"), Catch::Contains("[page](" + kvsim::relative_link(page, dir) + ")"));
    }
    for (const char* v : {"v0.29.0", "v0.30.0"}) CHECK(fs::is_regular_file(run_dir / ("lifecycle-" + std::string(v) + ".dot")));
    if (std::system("command -v dot >/dev/null 2>&1") == 0) {
        CHECK(fs::is_regular_file(run_dir / "lifecycle-v0.30.0.svg"));
        CHECK(v30["lifecycle_graph"]["svg"] == (run_dir / "lifecycle-v0.30.0.svg").string());
        CHECK_THAT(r.out, Catch::Contains("[v0.30.0] lifecycle graph: "));
    } else {
        CHECK(v30["lifecycle_graph"]["svg"].is_null());
        CHECK_THAT(r.out, Catch::Contains("Graphviz's dot is not installed"));
    }
}

TEST_CASE("nightly with a stub fuzzer: a new finding on a clean variant exits 1", "[triage][nightly]") {
    const Campaign c("nightly-new");
    c.write("stub/plant-canary", kSeed000);
    c.write("stub/plant-v0.30.0", kLiveness);
    const auto r = c.run();
    INFO(r.out);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.out, Catch::Contains("nightly: report: NEW v0.30.0 liveness:requests_not_finished: ") &&
                            Catch::Contains("nightly: report: status new_findings (exit 1)"));
    const auto j = c.report();
    REQUIRE(j["status"] == "new_findings");
    REQUIRE(j["findings_new"] == 1);
    const auto& f = j["variants"][1]["findings"][0];
    REQUIRE(f["signature"] == "liveness:requests_not_finished");
    REQUIRE(f["first_seen_this_run"] == true);
    const std::string trace = slurp(fs::path(f["dir"].get<std::string>()) / "trace");
    REQUIRE_THAT(trace, Catch::Contains("expect v0.30.0 liveness signature=liveness:requests_not_finished"));
    REQUIRE_THAT(c.report_md(), Catch::Contains("**NEW** `liveness:requests_not_finished`"));
}

TEST_CASE("nightly with a stub fuzzer: a canary that finds nothing fails loudly with exit 2", "[triage][nightly]") {
    const Campaign c("nightly-canary");
    const auto r = c.run();
    INFO(r.out);
    REQUIRE(r.exit_code == 2);
    REQUIRE_THAT(r.out, Catch::Contains("CANARY FAILED") && Catch::Contains("report: status canary_failed (exit 2)"));
    const auto j = c.report();
    REQUIRE(j["status"] == "canary_failed");
    REQUIRE(j["canary"]["status"] == "failed");
    REQUIRE_THAT(c.report_md(), Catch::Contains("FAIL: the canary did not find crash:missing_current_block_table"));
}

TEST_CASE("nightly --no-build refuses a binary of build/ older than the sources, with exit 70", "[triage][nightly]") {
    const Campaign c("nightly-stale");
    c.write("stub/plant-canary", kSeed000);
    const fs::path in_build = fs::path(kRepo) / "build" / ("nightly-stale-" + std::to_string(::getpid()));
    fs::create_directories(in_build);
    const fs::path binary = in_build / "kvsim_fuzz_trace";
    fs::copy_file(c.dir / "stub" / "fuzzer", binary, fs::copy_options::overwrite_existing);
    fs::last_write_time(binary, fs::last_write_time(fs::path(kRepo) / "CMakeLists.txt") - std::chrono::hours(24));
    const auto stale = c.run(binary);
    fs::last_write_time(binary, fs::file_time_type::clock::now());
    const auto fresh = c.run(binary);
    fs::remove_all(in_build);
    INFO(stale.out);
    REQUIRE(stale.exit_code == 70);
    REQUIRE_THAT(stale.out, Catch::Contains("--no-build: " + binary.string() + " is older than") &&
                                Catch::Contains("report: status build_failed (exit 70)"));
    INFO(fresh.out);
    CHECK(fresh.exit_code != 70);
    CHECK_THAT(fresh.out, !Catch::Contains("is older than"));
}

TEST_CASE("nightly rejects a bad command line with exit 64", "[triage][nightly]") {
    const auto r = std::system(("cd " + kRepo + " && scripts/nightly --variants v0.30.0 >/dev/null 2>&1").c_str());  // no --minutes
    REQUIRE(WEXITSTATUS(r) == 64);
    const auto r2 = std::system(("cd " + kRepo + " && scripts/nightly --minutes x --variants v0.30.0 >/dev/null 2>&1").c_str());
    REQUIRE(WEXITSTATUS(r2) == 64);
}
