#include <catch2/catch.hpp>

#include "padded_seed000.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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
engine block_size=16 num_blocks=128 max_batched_tokens=512 max_running=8 max_model_len=2048
run seed=99 max_steps=500
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
    CliResult triage(const std::string& args) const {
        const auto out = dir / "triage.out";
        const std::string command = "cd " + kRepo + " && scripts/triage --variant v0.29.0 --kvsim " + KVSIM_BINARY +
                                    " --out " + (dir / "findings").string() + " " + args + " >" + out.string() + " 2>&1";
        const int status = std::system(command.c_str());
        CliResult r;
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        r.out = slurp(out);
        return r;
    }
    std::vector<fs::path> finding_dirs() const {
        std::vector<fs::path> out;
        if (!fs::exists(dir / "findings" / "v0.29.0")) return out;
        for (const auto& e : fs::directory_iterator(dir / "findings" / "v0.29.0"))
            if (e.is_directory() && e.path().filename().string().front() != '.') out.push_back(e.path());
        return out;
    }
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("triage turns two planted crash artifacts of one bug into one minimal finding", "[triage]") {
    const Sandbox box("triage-dedup");
    const auto a = box.artifact("crash-planted-a", kArtifactA);
    const auto b = box.artifact("crash-planted-b", kArtifactB);
    const auto known = box.artifact("known.txt", "# nothing is known\n");

    const auto first = box.triage("--known " + known + " " + a);
    INFO(first.out);
    REQUIRE(first.exit_code == 0);
    REQUIRE_THAT(first.out, Catch::Contains("triage: NEW v0.29.0 crash:missing_current_block_table <- crash-planted-a (9 -> 1 events)"));
    const auto second = box.triage("--known " + known + " " + b);
    INFO(second.out);
    REQUIRE(second.exit_code == 0);
    REQUIRE_THAT(second.out, Catch::Contains("triage: duplicate new v0.29.0 crash:missing_current_block_table <- crash-planted-b"));
    REQUIRE_THAT(second.out, Catch::Contains("0 new finding(s), 0 known, 1 duplicate(s)"));

    // exactly one de-duplicated finding
    const auto dirs = box.finding_dirs();
    REQUIRE(dirs.size() == 1);
    const fs::path finding = dirs.front();
    REQUIRE(finding.filename() == "crash:missing_current_block_table");
    for (const char* file : {"trace", "log", "repro.txt", "meta.json", "original-crash-planted-a", "duplicates.txt"}) {
        INFO(file);
        REQUIRE(fs::is_regular_file(finding / file));
    }
    REQUIRE(slurp(finding / "original-crash-planted-a") == kArtifactA);
    REQUIRE_THAT(slurp(finding / "duplicates.txt"), Catch::Contains(b));

    // the minimal trace: one request, and the expect line for the variant
    const std::string trace = slurp(finding / "trace");
    REQUIRE_THAT(trace, Catch::Contains("\nexpect v0.29.0 crash signature=crash:missing_current_block_table\n"));
    REQUIRE(std::count(trace.begin(), trace.end(), '@') == 1);
    auto lines = [](const std::string& text) {  // non-comment lines
        int n = 0;
        for (std::size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
            n += text[at] != '#' ? 1 : 0;
            if (text.find('\n', at) == std::string::npos) break;
        }
        return n;
    };
    REQUIRE(lines(trace) < lines(kArtifactA) / 2);

    // the log is the full event log of the minimal trace
    const std::string log = slurp(finding / "log");
    REQUIRE_THAT(log, Catch::Contains(" park ") && Catch::Contains("Missing current block table for store request"));
    REQUIRE_THAT(log, Catch::Contains("signature=crash:missing_current_block_table expect=met"));

    const auto meta = nlohmann::json::parse(slurp(finding / "meta.json"));
    REQUIRE(meta["status"] == "new");
    REQUIRE(meta["verdict"] == "crash");
    REQUIRE(meta["events_before"] == 9);
    REQUIRE(meta["events_after"] == 1);

    // the repro command, run from the repository root, reproduces the signature
    const std::string repro = first_line(slurp(finding / "repro.txt"));
    REQUIRE_THAT(repro, Catch::Contains(" run ") && Catch::EndsWith("/trace --variant v0.29.0"));
    REQUIRE(meta["repro"] == repro);
    const auto replay_out = box.dir / "replay.out";
    const int status = std::system(("cd " + kRepo + " && " + repro + " >" + replay_out.string() + " 2>&1").c_str());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 2);
    REQUIRE_THAT(slurp(replay_out), Catch::Contains("crash ") &&
                                        Catch::Contains("signature=crash:missing_current_block_table expect=met"));

    // triaging the same artifact again records nothing new
    const auto again = box.triage("--known " + known + " " + a + " " + b);
    REQUIRE(again.exit_code == 0);
    REQUIRE(box.finding_dirs().size() == 1);
    const std::string dups = slurp(finding / "duplicates.txt");
    REQUIRE(std::count(dups.begin(), dups.end(), '\n') == 1);
}

TEST_CASE("triage reports a signature of the known-findings file as known", "[triage]") {
    const Sandbox box("triage-known");
    const auto a = box.artifact("crash-planted-a", kArtifactA);
    const auto known = box.artifact("known.txt", "# variant signature reason\nv0.29.* crash:missing_current_block_table seed 000, fixed by #54643\n");
    const auto summary = box.dir / "summary.tsv";
    const auto r = box.triage("--known " + known + " --summary " + summary.string() + " " + a);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("triage: known v0.29.0 crash:missing_current_block_table") &&
                            Catch::Contains("[known: seed 000, fixed by #54643]") &&
                            Catch::Contains("0 new finding(s), 1 known, 0 duplicate(s)"));
    const auto meta = nlohmann::json::parse(slurp(box.finding_dirs().at(0) / "meta.json"));
    REQUIRE(meta["status"] == "known");
    REQUIRE(meta["known_reason"] == "seed 000, fixed by #54643");
    REQUIRE_THAT(slurp(summary), Catch::StartsWith("first\tknown\tv0.29.0\tcrash:missing_current_block_table\t"));
}

TEST_CASE("triage keeps an artifact that does not replay to a finding under its own signature", "[triage]") {
    const Sandbox box("triage-unreproduced");
    const auto passes = box.artifact("crash-passes", "kvsim-trace 1\nengine block_size=16 num_blocks=64\nsegment p len=20\n@0 arrive r1 prompt=p max_tokens=2\n");
    const auto garbage = box.artifact("crash-garbage", "\x01\x02 not a trace");
    const auto r = box.triage("--known /dev/null " + passes + " " + garbage);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("unreproduced:crash_replays_pass") && Catch::Contains("unreproduced:crash_not_a_trace"));
    REQUIRE(box.finding_dirs().size() == 2);
    REQUIRE(box.triage("").exit_code == 64);  // no artifact
}

TEST_CASE("every failing corpus trace is a known finding of fuzz/known_findings.txt", "[triage]") {
    // corpus/upstream and corpus/findings: each expect line with a finding verdict is a bug the
    // campaign must report as known, under that variant, not as new
    std::map<std::string, std::vector<std::string>> by_variant;
    for (const auto& e : fs::recursive_directory_iterator(kRepo + "/corpus")) {
        if (!e.is_regular_file() || e.path().extension() != ".trace") continue;
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("expect ", 0) != 0 || line.find(" pass") != std::string::npos) continue;
            const auto v_end = line.find(' ', 7);
            by_variant[line.substr(7, v_end - 7)].push_back(e.path().string());
        }
    }
    REQUIRE(by_variant.size() >= 3);
    for (const auto& [variant, traces] : by_variant) {
        const Sandbox box("triage-corpus-" + variant);
        std::string args;
        for (const auto& t : traces) args += " " + t;
        const auto out = box.dir / "triage.out";
        const std::string command = "cd " + kRepo + " && scripts/triage --variant " + variant + " --kvsim " + KVSIM_BINARY +
                                    " --out " + (box.dir / "findings").string() + args + " >" + out.string() + " 2>&1";
        const int status = std::system(command.c_str());
        const std::string text = slurp(out);
        INFO(variant << "\n" << text);
        REQUIRE(WEXITSTATUS(status) == 0);
        REQUIRE_THAT(text, Catch::Contains(" 0 new finding(s)"));
    }
}

TEST_CASE("triage matches known-finding conditions on typed fields and a new cause behind a known signature is new",
          "[triage]") {
    // seed 000 under v0.29.0: MultiConnector(p2p, store); r1 is parked for its async P2P load, then
    // the store child's pending-load branch builds a save for it and the assertion fires
    const Sandbox box("triage-conditions");
    const auto a = box.artifact("crash-seed000", kArtifactA);
    const auto triage_with = [&](const std::string& stack, const std::string& category) {
        const std::string entry = "v0.29.0 crash:missing_current_block_table name=pending_save stack~" + stack +
                                  " event~" + category + ",request=$request,external=48 seed 000\n";
        const auto r = box.triage("--known " + box.artifact("known.txt", entry) + " " + a);
        INFO(r.out);
        CHECK(r.exit_code == 0);
        return r.out;
    };
    const fs::path findings = box.dir / "findings" / "v0.29.0";
    SECTION("every condition holds: known, filed apart under <signature>~<ID>") {
        REQUIRE_THAT(triage_with("p2p,store", "park"), Catch::Contains("0 new finding(s), 1 known"));
        REQUIRE(fs::exists(findings / "crash:missing_current_block_table~pending_save"));
    }
    SECTION("a condition fails (the stack is the other way round): new") {
        REQUIRE_THAT(triage_with("store,p2p", "park"), Catch::Contains("1 new finding(s), 0 known"));
        REQUIRE(fs::exists(findings / "crash:missing_current_block_table"));
    }
    SECTION("an event condition on a field value the replay never has: new") {
        REQUIRE_THAT(triage_with("p2p,store", "promote"), Catch::Contains("1 new finding(s), 0 known"));
    }
}
