// kvsim report over a run directory as scripts/nightly leaves it: a well-formed one reports as it always
// did; each malformed campaign.txt fact, triage summary line or stats file is one input error line
// (FILE:LINE: FIELD: MESSAGE) and exit 65, with nothing read as 0 and nothing written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

using namespace kvsim::testing;
namespace fs = std::filesystem;

namespace {

// campaign.txt as scripts/nightly writes it: @RUN@ is the run directory.
const std::string kCampaign =
    "run_id 20260101T000000Z\n"                                                                  // 1
    "started 2026-01-01T00:00:00Z\n"                                                             // 2
    "commit abc1234\n"                                                                           // 3
    "minutes 0.5\n"                                                                              // 4
    "jobs 2\n"                                                                                   // 5
    "sanitizer_share 25\n"                                                                       // 6
    "build ok\n"                                                                                 // 7
    "broken v0.29.0\n"                                                                           // 8
    "canary variant=v0.29.0 signature=crash:missing_current_block_table status=passed seconds=3.250 runs=1 "
    "artifact=@RUN@/artifacts/canary/crash-1\n"                                                  // 9
    "variant name=v0.29.0 budget=12 seconds=8.100 sanitizer_seconds=2.050 jobs=2 single_seconds=2.010 "
    "corpus=@RUN@/none seeds=@RUN@/none corpus_before=3 corpus_after=5 seed_count=20 seeds_left_out=6 "
    "crash_artifacts=1\n"                                                                        // 10
    "variant name=v0.30.0 budget=12 seconds=8.000 sanitizer_seconds=2.000 jobs=2 single_seconds=2.000 "
    "corpus=@RUN@/none seeds=@RUN@/none corpus_before=0 corpus_after=2 seed_count=26 seeds_left_out=0 "
    "crash_artifacts=2\n"                                                                        // 11
    "interrupted 0\n"                                                                            // 12
    "wall_seconds 31.500\n";                                                                     // 13

const std::string kStats = R"({"variant":"v","pid":7,"executions":1000,"passed":990,"ignored":2,"repeats":50,)"
                           R"("known":{"seed001_eager_snapshot_stale_save":3},"async_scheduling":{"off":480,"on":520}})";

// A triage summary line as triage_summary_line() writes it; @FINDINGS@ is the findings root.
std::string triage_line(const std::string& status, const std::string& signature, const std::string& cause,
                        bool first, const std::string& causes) {
    return R"({"artifact":"@RUN@/artifacts/x/crash-)" + cause + R"(","variant":"v0.30.0","first":)" +
           (first ? "true" : "false") + R"(,"status":")" + status + R"(","verdict":"liveness","signature":")" +
           signature + R"(","causes":)" + causes + R"(,"residue":"","cause":")" + cause +
           R"(","dir":"@FINDINGS@/)" + cause + R"(","minimised":true,"events_before":9,"events_after":2,)" +
           R"("files":{"trace":"trace","page":"page.html","explain":null},"repro":"kvsim run @FINDINGS@/)" + cause +
           R"(/trace --variant v0.30.0","message":"m"})";
}

const std::string kNewLine = triage_line("new", "liveness:requests_not_finished", "liveness_requests_not_finished",
                                         true, "[]");
const std::string kDuplicateLine = triage_line("new", "liveness:requests_not_finished",
                                               "liveness_requests_not_finished", false, "[]");
const std::string kKnownLine = triage_line("known", "crash:missing_current_block_table", "seed000_pending_load_save",
                                           true, R"(["seed000_pending_load_save"])");

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
        text.replace(at, from.size(), to);
    return text;
}

// A well-formed run directory; `edit` changes one of its files before the report reads it.
struct RunDir {
    fs::path root = scratch_dir() / "report-inputs";
    fs::path run = root / "run";

    RunDir() {
        fs::remove_all(root);
        for (const char* v : {"v0.29.0", "v0.30.0"}) fs::create_directories(run / "stats" / v);
        for (const char* cause : {"liveness_requests_not_finished", "seed000_pending_load_save"}) {
            fs::create_directories(root / "findings" / cause);
            std::ofstream(root / "findings" / cause / "trace") << "kvsim-trace 1\n";
            std::ofstream(root / "findings" / cause / "page.html") << "<!DOCTYPE html>\n";
        }
        write("campaign.txt", kCampaign);
        for (const char* name : {"jobs.101.json", "jobs.102.json", "single.103.json", "sanitizer.104.json"})
            write(std::string("stats/v0.30.0/") + name, kStats + "\n");
        write("stats/v0.29.0/jobs.201.json", kStats + "\n");
        write("triage-v0.30.0.jsonl", kNewLine + "\n" + kDuplicateLine + "\n");
        write("triage-v0.29.0.jsonl", kKnownLine + "\n");
    }
    std::string path(const std::string& name) const { return (run / name).string(); }
    std::string placed(const std::string& text) const {
        return replaced(replaced(text, "@RUN@", run.string()), "@FINDINGS@", (root / "findings").string());
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(run / name, std::ios::binary) << placed(text);
    }
    void edit(const std::string& name, const std::string& from, const std::string& to) const {
        const std::string before = slurp(run / name);
        const std::string after = replaced(before, placed(from), placed(to));
        REQUIRE(after != before);
        std::ofstream(run / name, std::ios::binary) << after;
    }
    CliResult report() const { return run_kvsim("report " + run.string()); }
};

// `kvsim report` over the run directory with `from` replaced by `to` in `file`: exit 65, nothing on
// standard output, nothing written, and standard error the one line "kvsim: FILE:LINE: FIELD: MESSAGE".
void check_refused(const std::string& file, const std::string& from, const std::string& to,
                   const std::string& error_file, const std::string& rest) {
    const RunDir d;
    d.edit(file, from, to);
    const auto r = d.report();
    INFO(file << ": " << from << " -> " << to);
    CHECK(r.exit_code == 65);
    CHECK(r.err == "kvsim: " + d.path(error_file) + ":" + rest + "\n");
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(d.run / "report.json"));
}

void check_campaign_refused(const std::string& from, const std::string& to, const std::string& rest) {
    check_refused("campaign.txt", from, to, "campaign.txt", rest);
}

}  // namespace

TEST_CASE("kvsim report of a well-formed run directory reports as before", "[report]") {
    const RunDir d;
    const auto r = d.report();
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 1);  // a NEW finding on v0.30.0, expected clean
    CHECK(r.err.empty());
    CHECK(r.out == d.placed(
                       "report: canary passed; v0.29.0 1000.0 execs, 61.73 exec/s per job vs 0.0 single process "
                       "(ratio 0.0), 0 new/1 known; v0.30.0 2000.0 execs, 125.0 exec/s per job vs 500.0 single "
                       "process (ratio 0.25), 1 new/0 known\n"
                       "report: NEW v0.30.0 liveness:requests_not_finished: kvsim run "
                       "@FINDINGS@/liveness_requests_not_finished/trace --variant v0.30.0\n"
                       "report: status new_findings (exit 1)\n"));
    auto report = nlohmann::ordered_json::parse(slurp(d.run / "report.json"));
    CHECK(report["run_dir"] == fs::absolute(d.run).string());
    report.erase("run_dir");
    CHECK(report.dump(1) == d.placed(R"JSON({
 "run_id": "20260101T000000Z",
 "started": "2026-01-01T00:00:00Z",
 "commit": "abc1234",
 "minutes": 0.5,
 "wall_seconds": 31.5,
 "jobs": 2.0,
 "sanitizer_share_percent": 25.0,
 "build": "ok",
 "interrupted": false,
 "status": "new_findings",
 "exit_code": 1,
 "broken_variants": [
  "v0.29.0"
 ],
 "canary": {
  "variant": "v0.29.0",
  "signature": "crash:missing_current_block_table",
  "status": "passed",
  "seconds": 3.25,
  "runs": 1.0,
  "artifact": "@RUN@/artifacts/canary/crash-1"
 },
 "variants": [
  {
   "variant": "v0.29.0",
   "expected_clean": false,
   "fuzzed": true,
   "budget_seconds": 12.0,
   "seconds": 8.1,
   "jobs": 2.0,
   "processes": 1,
   "executions": 1000.0,
   "repeats": 50.0,
   "exec_per_sec": 123.46,
   "exec_per_sec_per_job": 61.73,
   "single_process": {
    "seconds": 2.01,
    "executions": 0.0,
    "exec_per_sec": 0.0
   },
   "per_job_to_single_ratio": 0.0,
   "sanitizer_build": {
    "seconds": 2.05,
    "processes": 0,
    "executions": 0.0,
    "repeats": 0.0,
    "exec_per_sec_per_job": 0.0
   },
   "known_in_process": {
    "seed001_eager_snapshot_stale_save": 3.0
   },
   "runs_by_async_scheduling": {
    "off": 480.0,
    "on": 520.0
   },
   "corpus_before": 3.0,
   "corpus_after": 5.0,
   "seeds": 20.0,
   "seeds_left_out": 6.0,
   "crash_artifacts": 1.0,
   "findings_new": 0,
   "findings_known": 1,
   "findings_unreproduced": 0,
   "findings": [
    {
     "status": "known",
     "signature": "crash:missing_current_block_table",
     "causes": [
      "seed000_pending_load_save"
     ],
     "residue": "",
     "cause": "seed000_pending_load_save",
     "verdict": "liveness",
     "dir": "@FINDINGS@/seed000_pending_load_save",
     "artifacts": 1,
     "first_seen_this_run": true,
     "files": {
      "trace": "trace",
      "page": "page.html",
      "explain": null
     },
     "repro": "kvsim run @FINDINGS@/seed000_pending_load_save/trace --variant v0.30.0",
     "message": "m"
    }
   ],
   "coverage": null,
   "lifecycle_graph": {
    "dot": null,
    "svg": null
   }
  },
  {
   "variant": "v0.30.0",
   "expected_clean": true,
   "fuzzed": true,
   "budget_seconds": 12.0,
   "seconds": 8.0,
   "jobs": 2.0,
   "processes": 2,
   "executions": 2000.0,
   "repeats": 100.0,
   "exec_per_sec": 250.0,
   "exec_per_sec_per_job": 125.0,
   "single_process": {
    "seconds": 2.0,
    "executions": 1000.0,
    "exec_per_sec": 500.0
   },
   "per_job_to_single_ratio": 0.25,
   "sanitizer_build": {
    "seconds": 2.0,
    "processes": 1,
    "executions": 1000.0,
    "repeats": 50.0,
    "exec_per_sec_per_job": 250.0
   },
   "known_in_process": {
    "seed001_eager_snapshot_stale_save": 9.0
   },
   "runs_by_async_scheduling": {
    "off": 1920.0,
    "on": 2080.0
   },
   "corpus_before": 0.0,
   "corpus_after": 2.0,
   "seeds": 26.0,
   "seeds_left_out": 0.0,
   "crash_artifacts": 2.0,
   "findings_new": 1,
   "findings_known": 0,
   "findings_unreproduced": 0,
   "findings": [
    {
     "status": "new",
     "signature": "liveness:requests_not_finished",
     "causes": [],
     "residue": "",
     "cause": "liveness_requests_not_finished",
     "verdict": "liveness",
     "dir": "@FINDINGS@/liveness_requests_not_finished",
     "artifacts": 2,
     "first_seen_this_run": true,
     "files": {
      "trace": "trace",
      "page": "page.html",
      "explain": null
     },
     "repro": "kvsim run @FINDINGS@/liveness_requests_not_finished/trace --variant v0.30.0",
     "message": "m"
    }
   ],
   "coverage": null,
   "lifecycle_graph": {
    "dot": null,
    "svg": null
   }
  }
 ],
 "findings_new": 1,
 "findings_known": 1
})JSON"));
    CHECK(slurp(d.run / "report.md") == d.placed(R"MD(# kvsim nightly campaign 20260101T000000Z

**FAIL: NEW finding(s) on a variant expected clean** (exit 1)

- started 2026-01-01T00:00:00Z, 31.5 s wall; budget 0.5 min, 2 job(s); commit abc1234
- findings: 1 new, 1 known; artifacts and logs: `@RUN@`

## Canary
v0.29.0 from an empty corpus, abort on any finding: **passed** (3.25 s, 1 run(s)); must find `crash:missing_current_block_table`.

## Variants
exec/s (campaign) = executions of every job of the throughput build / their wall time; per job = that / jobs; single process = the same fuzz binary alone on the same corpus; ratio = per job / single process. The sanitizer build (ASan+UBSan) fuzzes the last share of the jobs' time on the corpus the throughput build grew.

| variant | expected | time (s) | jobs | executions | exec/s (campaign) | exec/s per job | exec/s single process | ratio | sanitizer build: time (s) / exec/s per job | known in process | findings new | findings known | runs async off / on |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| v0.29.0 | broken | 8.1 | 2 | 1000 | 123.46 | 61.73 | 0 | 0 | 2.05 / 0 | 3 | 0 | 1 | 480 / 520 |
| v0.30.0 | clean | 8 | 2 | 2000 | 250 | 125 | 500 | 0.25 | 2 / 250 | 9 | 1 | 0 | 1920 / 2080 |

## Findings
### v0.29.0
- known `crash:missing_current_block_table` = seed000_pending_load_save (liveness; 1 artifact(s), first seen in this run)
  - repro: `kvsim run @FINDINGS@/seed000_pending_load_save/trace --variant v0.30.0`
  - finding: [trace](../findings/seed000_pending_load_save/trace) · [page](../findings/seed000_pending_load_save/page.html)
### v0.30.0
- **NEW** `liveness:requests_not_finished` (liveness; 2 artifact(s), first seen in this run)
  - repro: `kvsim run @FINDINGS@/liveness_requests_not_finished/trace --variant v0.30.0`
  - finding: [trace](../findings/liveness_requests_not_finished/trace) · [page](../findings/liveness_requests_not_finished/page.html)

## Lifecycle coverage
)MD"));
}

TEST_CASE("kvsim report refuses a campaign number that is not a non-negative number", "[report]") {
    check_campaign_refused("jobs 2\n", "jobs abc\n", "5: jobs: expected a non-negative integer, got 'abc'");
    check_campaign_refused("jobs 2\n", "jobs -1\n", "5: jobs: expected a non-negative integer, got '-1'");
    check_campaign_refused("minutes 0.5\n", "minutes\n", "4: minutes: expected a non-negative number, got ''");
    check_campaign_refused("wall_seconds 31.500", "wall_seconds 1e3",
                           "13: wall_seconds: expected a non-negative number, got '1e3'");
    check_campaign_refused("seconds=8.100", "seconds=abc", "10: variant.seconds: expected a non-negative number, got 'abc'");
    check_campaign_refused("single_seconds=2.000", "single_seconds=-2",
                           "11: variant.single_seconds: expected a non-negative number, got '-2'");
    check_campaign_refused("seed_count=20", "seed_count=2.5",
                           "10: variant.seed_count: expected a non-negative integer, got '2.5'");
    check_campaign_refused("runs=1", "runs=", "9: canary.runs: expected a non-negative integer, got ''");
    check_campaign_refused("corpus_before=3", "corpus_before=99999999999999999999",
                           "10: variant.corpus_before: value '99999999999999999999' above the maximum 1000000000000000");
    check_campaign_refused("sanitizer_share 25", "sanitizer_share 101",
                           "6: sanitizer_share: expected a percentage, an integer 0..100, got '101'");
}

TEST_CASE("kvsim report refuses a campaign value outside its choices", "[report]") {
    check_campaign_refused("status=passed", "status=bogus",
                           "9: canary.status: expected one of passed|failed|interrupted, got 'bogus'");
    check_campaign_refused("build ok", "build maybe", "7: build: expected one of ok|failed, got 'maybe'");
    check_campaign_refused("interrupted 0", "interrupted yes", "12: interrupted: expected one of 0|1, got 'yes'");
}

TEST_CASE("kvsim report refuses an unknown campaign key or a word that is not KEY=VALUE", "[report]") {
    check_campaign_refused("commit abc1234\n", "commit abc1234\ncolour blue\n", "4: colour: unknown key");
    check_campaign_refused("crash_artifacts=2", "crash_artifacts=2 speed=3", "11: variant.speed: unknown key");
    check_campaign_refused("runs=1", "runs=1 hue=red", "9: canary.hue: unknown key");
    check_campaign_refused("runs=1", "runs=1 loose", "9: campaign: expected KEY=VALUE, got 'loose'");
}

TEST_CASE("kvsim report refuses a campaign key given twice", "[report]") {
    check_campaign_refused("jobs=2 single_seconds=2.010", "jobs=2 jobs=3 single_seconds=2.010",
                           "10: variant.jobs: duplicate key");
    check_campaign_refused("jobs 2\n", "jobs 2\njobs 2\n", "6: jobs: duplicate line (first on line 5)");
    check_campaign_refused("interrupted 0\n", "interrupted 0\ncanary variant=v0.29.0\n",
                           "13: canary: duplicate line (first on line 9)");
    check_campaign_refused("name=v0.30.0", "name=v0.29.0", "11: variant.name: 'v0.29.0' fuzzed twice (first on line 10)");
}

TEST_CASE("kvsim report refuses a campaign missing a required key and names it", "[report]") {
    // without its build line the campaign is malformed, not a failed build (exit 70)
    check_campaign_refused("build ok\n", "", "0: build: missing required key");
    check_campaign_refused("sanitizer_share 25\n", "", "0: sanitizer_share: missing required key");
    check_campaign_refused("wall_seconds 31.500\n", "",
                           "0: wall_seconds: missing required key (every campaign whose build is ok has it)");
    check_campaign_refused(" seconds=8.100", "", "10: variant.seconds: missing required key");
    check_campaign_refused(" artifact=@RUN@/artifacts/canary/crash-1", "", "9: canary.artifact: missing required key");
}

TEST_CASE("kvsim report of a failed build's campaign says build_failed and leaves what it lacks null", "[report]") {
    const RunDir d;
    d.write("campaign.txt", "run_id r\nstarted 2026-01-01T00:00:00Z\ncommit unknown\nminutes 1\njobs 2\n"
                            "sanitizer_share 25\nbuild failed\ninterrupted 0\n");
    const auto r = d.report();
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 70);
    CHECK(r.out == "report: canary skipped\nreport: status build_failed (exit 70)\n");
    const auto j = nlohmann::ordered_json::parse(slurp(d.run / "report.json"));
    CHECK(j["wall_seconds"].is_null());
    CHECK(j["broken_variants"].is_null());
    CHECK(j["canary"] == nlohmann::ordered_json::parse(R"({"variant":null,"signature":null,"status":"skipped",)"
                                                       R"("seconds":null,"runs":null,"artifact":null})"));
    CHECK_THAT(slurp(d.run / "report.md"), Catch::Contains("**FAIL: build failed** (exit 70)") &&
                                               Catch::Contains(", - s wall;") && Catch::Contains("## Canary\nskipped"));
    CHECK_THAT(slurp(d.run / "index.html"), Catch::Contains("<p>skipped (scripts/nightly --no-canary)</p>"));
}

TEST_CASE("kvsim report refuses a triage summary line that is not a JSON object", "[report]") {
    const std::string file = "triage-v0.30.0.jsonl";
    check_refused(file, kDuplicateLine, "{not json", file, "2: json: not JSON (syntax error at byte 3)");
    check_refused(file, kDuplicateLine, "", file, "2: json: not JSON (syntax error at byte 1)");
    check_refused(file, kNewLine, "[1,2]", file, "1: json: expected a JSON object, got '[1,2]'");
    check_refused(file, kNewLine, "{} x", file, "1: json: not JSON (syntax error at byte 4)");
}

TEST_CASE("kvsim report refuses a triage summary field of the wrong type, unknown or missing", "[report]") {
    const std::string file = "triage-v0.30.0.jsonl";
    check_refused(file, R"("first":false)", R"("first":"yes")", file, R"(2: first: expected true or false, got '"yes"')");
    check_refused(file, R"("causes":[])", R"("causes":[1])", file, "1: causes: expected an array of strings, got '[1]'");
    check_refused(file, R"("message":"m"})", R"("message":null})", file, "1: message: expected a string, got 'null'");
    check_refused(file, R"("events_after":2)", R"("events_after":-2)", file,
                  "1: events_after: expected a non-negative integer, got '-2'");
    check_refused(file, R"("page":"page.html")", R"("page":3)", file,
                  "1: files.page: expected a file name or null, got '3'");
    check_refused(file, R"(,"explain":null)", "", file, "1: files.explain: missing required key");
    check_refused(file, R"("dir":"@FINDINGS@/liveness_requests_not_finished",)", "", file,
                  "1: dir: missing required key");
    check_refused(file, R"("message":"m"})", R"("message":"m","colour":"red"})", file, "1: colour: unknown key");
}

TEST_CASE("kvsim report refuses a triage status outside new, known and unreproduced", "[report]") {
    check_refused("triage-v0.29.0.jsonl", R"("status":"known")", R"("status":"bogus")", "triage-v0.29.0.jsonl",
                  "1: status: expected one of new|known|unreproduced, got 'bogus'");
    check_refused("triage-v0.29.0.jsonl", R"("status":"known")", R"("status":1)", "triage-v0.29.0.jsonl",
                  "1: status: expected one of new|known|unreproduced, got '1'");
}

TEST_CASE("kvsim report refuses a stats file that is not a JSON object", "[report]") {
    const std::string file = "stats/v0.30.0/jobs.102.json";
    check_refused(file, kStats, "garbage", file, "0: json: not JSON (syntax error at byte 1)");
    check_refused(file, kStats, "[]", file, "0: json: expected a JSON object, got '[]'");
    check_refused(file, kStats + "\n", "", file, "0: json: not JSON (syntax error at byte 1)");
}

TEST_CASE("kvsim report refuses a stats file whose counts are not non-negative integers", "[report]") {
    const std::string file = "stats/v0.30.0/single.103.json";
    check_refused(file, R"("executions":1000)", R"("executions":"many")", file,
                  R"(0: executions: expected a non-negative integer, got '"many"')");
    check_refused(file, R"("executions":1000)", R"("executions":-5)", file,
                  "0: executions: expected a non-negative integer, got '-5'");
    check_refused(file, R"("repeats":50,)", "", file, "0: repeats: missing required key");
    check_refused(file, R"(_save":3})", R"(_save":"3"})", file,
                  R"(0: known.seed001_eager_snapshot_stale_save: expected a non-negative integer, got '"3"')");
    check_refused(file, R"("on":520})", R"("on":520,"maybe":1})", file, "0: async_scheduling.maybe: unknown key");
    check_refused(file, R"("known":{"seed001_eager_snapshot_stale_save":3})", R"("known":[])", file,
                  "0: known: expected an object of non-negative integers, got '[]'");
}
