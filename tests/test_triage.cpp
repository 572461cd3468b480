#include <catch2/catch.hpp>

#include "planted_traces.h"

#include "padded_seed000.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"

using namespace kvsim::testing;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;

// Two fuzzer crash artifacts of the same upstream bug (seed 000 under v0.29.0), each buried in
// different noise: bystander requests, aborts, faults, unused segments and store lines.
const std::string kArtifactA = kvsim::testing::padded_seed000_trace("v0.30.0");

const std::string kArtifactB = R"(kvsim-trace 1
engine block_size=16 num_blocks=128 max_batched_tokens=512 max_running=8 max_model_len=2032
run seed=99 max_steps=500
multi role=kv_both
connector p2p role=kv_both
connector store role=kv_both save_decode_cache=on
workers ranks=4 store_delay_min=2 store_delay_max=2 load_delay_min=1 load_delay_max=3
segment a len=64
segment b len=33
segment c tokens=1,2,3
store prefix=a
@0 arrive x1 prompt=b+c max_tokens=12
@0 arrive x2 prompt=c max_tokens=5
@2 fault store_fail rank=3
@4 arrive victim prompt=a max_tokens=30 remote_prefill=on
@4 abort x2
@7 arrive x3 prompt=b max_tokens=2
)";

// An entry for an unrelated signature: with it as the registry, seed 000's crash is NEW.
const std::string kUnrelatedRegistry =
    "finding other\n class upstream\n variants *\n signature crash:recving_not_finished\n upstream not_reported\n"
    " witness corpus/x.trace v0.30.0\n fix describe nothing\n why a test\n";

const std::string& kPendingLookup = kvsim::testing::kPendingLookupLiveness;

struct Sandbox {
    fs::path dir;
    Sandbox(const std::string& name) : dir(scratch_dir() / name) {
        fs::remove_all(dir);
        fs::create_directories(dir / "artifacts");
    }
    std::string artifact(const std::string& name, const std::string& text) const {
        const auto path = dir / "artifacts" / name;
        std::ofstream(path, std::ios::binary) << text;
        return path.string();
    }
    CliResult triage(const std::string& variant, const std::string& args) const {
        return run_kvsim("triage --variant " + variant + " --kvsim " + KVSIM_BINARY + " --out " +
                         (dir / "findings").string() + " " + args);
    }
    std::vector<fs::path> finding_dirs(const std::string& variant) const {
        std::vector<fs::path> out;
        if (!fs::exists(dir / "findings" / variant)) return out;
        for (const auto& e : fs::directory_iterator(dir / "findings" / variant))
            if (e.is_directory() && e.path().filename().string().front() != '.') out.push_back(e.path());
        return out;
    }
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("triage turns two planted crash artifacts of one new cause into one minimal finding", "[triage]") {
    const Sandbox box("triage-dedup");
    const auto a = box.artifact("crash-planted-a", kArtifactA);
    const auto b = box.artifact("crash-planted-b", kArtifactB);
    const auto registry = box.artifact("registry.txt", kUnrelatedRegistry);

    const auto first = box.triage("v0.29.0", "--registry " + registry + " " + a);
    INFO(first.out << first.err);
    REQUIRE(first.exit_code == 0);
    REQUIRE_THAT(first.out, Catch::Contains("triage: NEW v0.29.0 crash:missing_current_block_table <- crash-planted-a (9 -> 1 events)"));
    const auto second = box.triage("v0.29.0", "--registry " + registry + " " + b);
    INFO(second.out);
    REQUIRE(second.exit_code == 0);
    REQUIRE_THAT(second.out, Catch::Contains("triage: duplicate NEW v0.29.0 crash:missing_current_block_table <- crash-planted-b"));
    REQUIRE_THAT(second.out, Catch::Contains("0 new finding(s), 0 known, 0 unreproduced, 1 duplicate(s)"));

    const auto dirs = box.finding_dirs("v0.29.0");
    REQUIRE(dirs.size() == 1);
    const fs::path finding = dirs.front();
    REQUIRE(finding.filename() == "crash:missing_current_block_table");
    for (const char* file : {"trace", "log", "repro.txt", "result.json", "triage.json", "original-crash-planted-a",
                             "duplicates.txt"}) {
        INFO(file);
        REQUIRE(fs::is_regular_file(finding / file));
    }
    REQUIRE(slurp(finding / "original-crash-planted-a") == kArtifactA);
    REQUIRE_THAT(slurp(finding / "duplicates.txt"), Catch::Contains(b));

    const std::string trace = slurp(finding / "trace");
    REQUIRE_THAT(trace, Catch::Contains("\nexpect v0.29.0 crash signature=crash:missing_current_block_table\n") &&
                            Catch::Contains("# registry: NEW (no known finding matches)"));
    REQUIRE(std::count(trace.begin(), trace.end(), '@') == 1);

    const std::string log = slurp(finding / "log");
    REQUIRE_THAT(log, Catch::Contains(" park ") && Catch::Contains("Missing current block table for store request"));
    REQUIRE_THAT(log, Catch::Contains("signature=crash:missing_current_block_table expect=met"));

    const auto meta = nlohmann::json::parse(slurp(finding / "triage.json"));
    REQUIRE(meta["status"] == "new");
    REQUIRE(meta["verdict"] == "crash");
    REQUIRE(meta["events_before"] == 9);
    REQUIRE(meta["events_after"] == 1);
    const auto result = nlohmann::json::parse(slurp(finding / "result.json"));
    REQUIRE(result["signature"] == "crash:missing_current_block_table");

    // the repro command reproduces the signature
    const std::string repro = first_line(slurp(finding / "repro.txt"));
    REQUIRE(meta["repro"] == repro);
    const auto replay_out = box.dir / "replay.out";
    const int status = std::system((repro + " >" + replay_out.string() + " 2>&1").c_str());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 2);

    // triaging the same artifacts again records nothing new
    REQUIRE(box.triage("v0.29.0", "--registry " + registry + " " + a + " " + b).exit_code == 0);
    REQUIRE(box.finding_dirs("v0.29.0").size() == 1);
    const std::string dups = slurp(finding / "duplicates.txt");
    REQUIRE(std::count(dups.begin(), dups.end(), '\n') == 1);
}

TEST_CASE("triage files a known finding under its registry id, with its upstream reference and fix", "[triage]") {
    const Sandbox box("triage-known");
    const auto a = box.artifact("crash-planted-a", kArtifactA);
    const auto summary = box.dir / "summary.jsonl";
    const auto r = box.triage("v0.29.0", "--summary " + summary.string() + " " + a);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("triage: known seed000_pending_load_save v0.29.0 crash:missing_current_block_table") &&
                            Catch::Contains("0 new finding(s), 1 known"));
    const fs::path finding = box.dir / "findings" / "v0.29.0" / "seed000_pending_load_save";
    const auto meta = nlohmann::json::parse(slurp(finding / "triage.json"));
    REQUIRE(meta["status"] == "known");
    REQUIRE(meta["causes"] == nlohmann::json::array({"seed000_pending_load_save"}));
    REQUIRE(meta["cause_entries"][0]["fix"] == "+pr54643");
    REQUIRE(meta["cause_entries"][0]["upstream"]["references"][0] == "#54643");
    // the settings of the minimal trace against upstream's defaults, as `kvsim run --json` has them
    // (seed 000 needs none: the documented decoder, multi(kv_consumer)[p2p, store], at the defaults)
    int sizing = 0;
    for (const auto& d : meta["settings"]) {
        CHECK(d["group"] != "setting");
        if (d["group"] == "sizing" && d["key"] == "engine.block_size" && d["value"] == "16") ++sizing;
    }
    CHECK(sizing == 1);
    const auto result = nlohmann::json::parse(slurp(finding / "result.json"));
    CHECK(result["settings"] == meta["settings"]);
    CHECK(result["registry"]["outcome"] == "known");
    CHECK(result["registry"]["causes"][0]["id"] == "seed000_pending_load_save");
    REQUIRE_THAT(slurp(finding / "trace"), Catch::Contains("# registry: known, causes seed000_pending_load_save"));
    const auto line = nlohmann::json::parse(first_line(slurp(summary)));
    REQUIRE(line["first"] == true);
    REQUIRE(line["status"] == "known");
    REQUIRE(line["cause"] == "seed000_pending_load_save");
}

TEST_CASE("triage: a planted new cause behind a known signature is NEW, filed by its signature", "[triage]") {
    const Sandbox box("triage-new-cause");
    const auto a = box.artifact("crash-pending", kPendingLookup);
    const auto r = box.triage("v0.30.0", a);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("triage: NEW v0.30.0 liveness:requests_not_finished <- crash-pending"));
    REQUIRE(fs::exists(box.dir / "findings" / "v0.30.0" / "liveness:requests_not_finished" / "trace"));
}

TEST_CASE("triage writes the finding's HTML page and explain text beside its minimal trace", "[triage]") {
    const Sandbox box("triage-views");
    const auto a = box.artifact("crash-reused",
                                slurp(kRepo + "/corpus/upstream/issue52360_preempted_save_reads_reused_blocks.trace"));
    const auto summary = box.dir / "summary.jsonl";
    const auto r = box.triage("v0.27.1", "--max-runs 300 --summary " + summary.string() + " " + a);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto dirs = box.finding_dirs("v0.27.1");
    REQUIRE(dirs.size() == 1);
    const fs::path finding = dirs.front();

    // the typed fields name the files, relative to the finding's directory, in both JSON outputs
    const auto line = nlohmann::json::parse(first_line(slurp(summary)));
    const nlohmann::json files = {{"trace", "trace"}, {"page", "page.html"}, {"explain", "explain.txt"}};
    REQUIRE(line["files"] == files);
    REQUIRE(nlohmann::json::parse(slurp(finding / "triage.json"))["files"] == files);

    // the finding names a request and blocks; both views name them
    const auto result = nlohmann::json::parse(slurp(finding / "result.json"));
    const auto& f = result["findings"][0];
    const std::string request = f["request"];
    REQUIRE_FALSE(request.empty());
    REQUIRE_FALSE(f["blocks"].empty());
    std::string blocks;
    for (const auto& b : f["blocks"]) blocks += (blocks.empty() ? "" : ",") + b.dump();
    const std::string explain = slurp(finding / "explain.txt");
    REQUIRE_THAT(explain, Catch::Contains("request " + request) && Catch::Contains("blocks [" + blocks + "]"));
    const std::string page = slurp(finding / "page.html");
    REQUIRE_THAT(page, Catch::Contains("\"request\":\"" + request + "\"") &&
                           Catch::Contains("\"blocks\":[" + blocks + "]"));

    // the same page and text as kvsim run --html and kvsim explain give for the minimal trace
    const std::string trace = (finding / "trace").string();
    const auto explained = run_kvsim("explain " + trace + " --variant v0.27.1");
    REQUIRE(explained.out == explain);
    const auto html = box.dir / "run.html";
    run_kvsim("run " + trace + " --variant v0.27.1 --quiet --html " + html.string());
    REQUIRE(slurp(html) == page);
}

TEST_CASE("triage keeps an artifact that does not replay to a finding under its own signature", "[triage]") {
    const Sandbox box("triage-unreproduced");
    const auto passes = box.artifact("crash-passes", "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nsegment p len=20\n@0 arrive r1 prompt=p max_tokens=2\n");
    const auto garbage = box.artifact("crash-garbage", "\x01\x02 not a trace");
    const auto r = box.triage("v0.29.0", passes + " " + garbage);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("unreproduced:crash_replays_pass") && Catch::Contains("unreproduced:crash_not_a_trace") &&
                            Catch::Contains("0 new finding(s), 0 known, 2 unreproduced"));
    REQUIRE(box.finding_dirs("v0.29.0").size() == 2);
    // a text that is not a trace has neither page nor explanation; one that passes has both
    const auto not_a_trace = box.dir / "findings" / "v0.29.0" / "unreproduced:crash_not_a_trace";
    REQUIRE_FALSE(fs::exists(not_a_trace / "page.html"));
    REQUIRE(nlohmann::json::parse(slurp(not_a_trace / "triage.json"))["files"]["page"].is_null());
    REQUIRE(fs::exists(box.dir / "findings" / "v0.29.0" / "unreproduced:crash_replays_pass" / "page.html"));
    REQUIRE(box.triage("v0.29.0", "").exit_code == 64);  // no artifact
    // a directory or a missing file is the caller's mistake: one line, exit 65, nothing triaged
    const auto dir = box.triage("v0.29.0", passes + " " + box.dir.string());
    REQUIRE(dir.exit_code == 65);
    REQUIRE_THAT(dir.err, Catch::Contains(box.dir.string() + ":0: artifact: is a directory, not an artifact"));
    REQUIRE(dir.out.empty());
    const auto missing = box.triage("v0.29.0", (box.dir / "crash-missing").string());
    REQUIRE(missing.exit_code == 65);
    REQUIRE_THAT(missing.err, Catch::Contains("crash-missing:0: artifact: cannot open"));
    const auto bad = box.artifact("bad.registry", "finding x\n  colour blue\n");
    const auto broken = box.triage("v0.29.0", "--registry " + bad + " " + passes);
    REQUIRE(broken.exit_code == 65);
    REQUIRE_THAT(broken.err, Catch::Contains(bad + ":2: colour: unknown field"));
}
