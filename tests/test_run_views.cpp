// The views of a run: the timeline, the causal slice and `kvsim explain`, the Perfetto JSON, the
// lifecycle graph as DOT, and the HTML page's content (the browser test renders it too).
#include <boost/graph/graphviz.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "properties/harness/causal_slice.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/lifecycle_coverage.h"
#include "properties/harness/run_views.h"
#include "sim/trace/trace_parser.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;
const std::string kSeed000Both = kRepo + "/corpus/upstream/seed000_multiconnector_both.trace";

std::vector<std::string> finding_traces() {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(kRepo + "/corpus/findings"))
        if (e.path().extension() == ".trace") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

struct Loaded {
    std::string text;
    Trace trace;
    std::string variant_name;
    RunResult result;
};

Loaded load_and_run(const std::string& path, const std::string& variant_name = "", bool record = true) {
    Loaded l;
    l.text = slurp(path);
    l.trace = parse_trace(l.text, path);
    l.variant_name = variant_name.empty() ? l.trace.run.variant : variant_name;
    std::string error;
    const auto variant = resolve_variant(l.variant_name, &error);
    REQUIRE(variant);
    RunOptions options;
    options.record_timeline = record;
    l.result = run_trace(l.trace, *variant, options);
    return l;
}

std::set<std::string> arrived_requests(const Trace& trace) {
    std::set<std::string> ids;
    for (const Event& e : trace.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) ids.insert(a->request_id);
    return ids;
}

}  // namespace

TEST_CASE("the timeline is recorded only when asked, and recording does not change the run", "[views]") {
    const Loaded plain = load_and_run(kSeed000Both, "v0.29.0", false);
    const Loaded recorded = load_and_run(kSeed000Both, "v0.29.0", true);
    CHECK_FALSE(plain.result.timeline);
    REQUIRE(recorded.result.timeline);
    CHECK(plain.result.digest == recorded.result.digest);
    CHECK(plain.result.signature == recorded.result.signature);
}

TEST_CASE("the timeline of seed 000's kv_both crash: r1 parks for its P2P load, the store child lost", "[views]") {
    const Loaded l = load_and_run(kSeed000Both, "v0.29.0");
    const Timeline& t = *l.result.timeline;
    REQUIRE(t.lanes == std::vector<std::string>{"r1"});
    REQUIRE(t.num_blocks == 64);
    REQUIRE(t.num_ranks == 2);
    REQUIRE_FALSE(t.steps.empty());
    const TimelineStep& last = t.steps.back();
    CHECK(last.step == l.result.findings.front().step);
    // r1's lane at the crash: parked for the remote KV, holding the blocks of its 48-token prompt.
    const RequestChange* r1 = nullptr;
    for (const TimelineStep& s : t.steps)
        for (const RequestChange& r : s.requests) r1 = &r;
    REQUIRE(r1 != nullptr);
    CHECK(r1->status == LaneStatus::waiting_for_remote_kvs);
    CHECK(r1->blocks.size() == 3);
    // MultiConnector chose the P2P child for r1; the blocks it holds have ref count 1.
    bool chose_p2p = false;
    for (const TimelineStep& s : t.steps)
        for (const auto& [lane, child] : s.chosen_child) chose_p2p = chose_p2p || (lane == 0 && child == "p2p");
    CHECK(chose_p2p);
    int held = 0;
    for (const TimelineStep& s : t.steps)
        for (const BlockChange& b : s.blocks) held += b.ref_cnt == 1 ? 1 : 0;
    CHECK(held == 3);
}

TEST_CASE("the timeline keeps deltas: an unchanged request or block is not recorded again", "[views]") {
    const Loaded l = load_and_run(kRepo + "/corpus/examples/01_single_request.trace");
    const Timeline& t = *l.result.timeline;
    REQUIRE(t.steps.size() >= 3);
    std::size_t block_records = 0;
    for (const TimelineStep& s : t.steps) {
        block_records += s.blocks.size();
        std::set<int> lanes;
        for (const RequestChange& r : s.requests) CHECK(lanes.insert(r.lane).second);
    }
    CHECK(block_records < t.steps.size() * t.num_blocks / 2);
}

TEST_CASE("kvsim explain names the request and blocks of each corpus finding", "[views][explain]") {
    for (const std::string& path : finding_traces()) {
        const Loaded l = load_and_run(path);
        REQUIRE_FALSE(l.result.findings.empty());
        const Finding& f = l.result.findings.front();
        const auto r = run_kvsim("explain " + path);
        INFO(path << "\n" << r.out << r.err);
        CHECK(r.exit_code == exit_code::of(l.result.verdict));
        CHECK_THAT(r.out, Catch::StartsWith(f.signature() + " under "));
        if (!f.request.empty()) CHECK_THAT(r.out, Catch::Contains("request " + f.request));
        if (!f.blocks.empty()) CHECK_THAT(r.out, Catch::Contains("blocks " + format_blocks(f.blocks)));
        CHECK_THAT(r.out, Catch::Contains("repro: kvsim run " + path + " --variant " + l.variant_name));
        // the story in at most 30 lines, then the settings block: its header, one line per setting that
        // differs from upstream's defaults, sizing and environment
        const std::size_t settings = r.out.find("settings that differ from upstream's defaults under ");
        REQUIRE(settings != std::string::npos);
        const std::string story = r.out.substr(0, settings), block = r.out.substr(settings);
        CHECK(std::count(story.begin(), story.end(), '\n') <= 30);
        CHECK(std::count(block.begin(), block.end(), '\n') <= 14);
    }
}

TEST_CASE("kvsim explain lists the settings that differ from upstream's defaults, with their source", "[views][explain][settings]") {
    const auto r = run_kvsim("explain " + std::string(KVSIM_SOURCE_DIR) +
                             "/corpus/upstream/seed000_multiconnector_both.trace --variant v0.29.0");
    REQUIRE(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("\nsettings that differ from upstream's defaults under v0.29.0:\n"
                                      "  stack=multi(kv_both)[p2p(kv_both), store(kv_both)] (upstream "));
    CHECK_THAT(r.out, Catch::Contains("\n  engine.async_scheduling=off (upstream on) -- vllm/config/vllm.py "));
    CHECK_THAT(r.out, Catch::Contains("\ndeployment sizing: engine.block_size=16, "));
    CHECK_THAT(r.out, Catch::Contains("\nenvironment: workers.ranks="));
}

TEST_CASE("the causal slice of seed 000's crash starts at r1's arrival and ends at the assertion", "[views][explain]") {
    const Loaded l = load_and_run(kSeed000Both, "v0.29.0");
    const CausalSlice slice = causal_slice(l.trace, l.result, l.result.findings.front());
    CHECK(slice.request == "r1");
    REQUIRE(slice.trace_events.size() == 1);
    CHECK(l.trace.events[slice.trace_events[0]].line > 0);
    REQUIRE_FALSE(slice.events.empty());
    CHECK(l.result.events[slice.events.back()].category == EventCategory::crash);
    for (std::size_t i : slice.events) CHECK(touches(l.result.events[i], slice));
    const std::string text = explain_text(l.trace, l.result, slice, "seed000.trace", "v0.29.0");
    CHECK_THAT(text, Catch::Contains("AssertionError: Missing current block table for store request r1"));
    CHECK_THAT(text, Catch::Contains("@0 arrive r1"));
}

TEST_CASE("the Perfetto JSON parses back with a track per request and rank, and the trace's jobs", "[views][perfetto]") {
    const Loaded l = load_and_run(kRepo + "/corpus/upstream/issue52360_preempted_save_reads_reused_blocks.trace", "v0.29.0");
    const std::string path = (scratch_dir() / "run.perfetto.json").string();
    const auto r = run_kvsim("run " + kRepo + "/corpus/upstream/issue52360_preempted_save_reads_reused_blocks.trace"
                             " --variant v0.29.0 --quiet --perfetto " + path);
    REQUIRE(r.err.empty());
    const auto j = nlohmann::json::parse(slurp(path));
    std::set<std::string> threads, processes;
    std::size_t request_slices = 0, rank_slices = 0, async_begins = 0, async_ends = 0;
    for (const auto& e : j.at("traceEvents")) {
        const std::string ph = e.at("ph");
        if (ph == "M" && e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
        if (ph == "M" && e.at("name") == "process_name") processes.insert(e.at("args").at("name").get<std::string>());
        if (ph == "X" && e.at("pid") == 1) ++request_slices;
        if (ph == "X" && e.at("pid") == 2) ++rank_slices;
        async_begins += ph == "b" ? 1 : 0;
        async_ends += ph == "e" ? 1 : 0;
    }
    for (const std::string& id : arrived_requests(l.trace)) CHECK(threads.contains(id));
    for (int rank = 0; rank < l.trace.workers.ranks; ++rank) CHECK(threads.contains("rank " + std::to_string(rank)));
    CHECK(processes.contains("requests"));
    CHECK(processes.contains("connector store"));
    CHECK(request_slices >= arrived_requests(l.trace).size());
    const Timeline& t = *l.result.timeline;
    REQUIRE_FALSE(t.jobs.empty());
    std::size_t reports = 0;
    for (const StoreJob& job : t.jobs)
        for (const RankReport& rr : job.reports) reports += rr.rank >= 0 ? 1 : 0;
    CHECK(rank_slices == reports);
    CHECK(async_begins == t.jobs.size() + t.transfers.size());
    CHECK(async_ends == async_begins);
}

TEST_CASE("kvsim coverage --dot reads back with read_graphviz into the same edges", "[views][coverage]") {
    const std::string path = (scratch_dir() / "lifecycle.dot").string();
    const auto r = run_kvsim("coverage " + kRepo + "/corpus/upstream --dot " + path);
    REQUIRE(r.exit_code == 0);
    const LifecycleCoverage coverage =
        measure_lifecycle_coverage(find_trace_files({kRepo + "/corpus/upstream"}, false).files, std::nullopt);
    LifecycleDotGraph read(0);
    boost::dynamic_properties dp = lifecycle_dot_properties(read);
    std::istringstream dot(slurp(path));
    REQUIRE(boost::read_graphviz(dot, read, dp, "node_id"));
    std::set<std::tuple<std::string, std::string, int, std::string>> got, want;
    for (auto [it, end] = boost::edges(read); it != end; ++it)
        got.emplace(read[boost::source(*it, read)].name + "->" + read[boost::target(*it, read)].name, read[*it].key,
                    read[*it].weight, read[*it].style);
    for (const LifecycleEdgeInfo& e : LifecycleGraph::upstream().edges()) {
        const int n = coverage.traces_of(e.key);
        want.emplace(e.key, e.key, n, n > 0 ? "solid" : (e.modelled ? "dashed" : "dotted"));
    }
    CHECK(got == want);
    CHECK(coverage.exercised.size() > 0);
    CHECK(coverage.never_reached.size() > 0);
}

TEST_CASE("the HTML page is self-contained and carries the finding, its slice and the trace", "[views][html]") {
    const std::string path = (scratch_dir() / "seed000.html").string();
    const auto r = run_kvsim("run " + kSeed000Both + " --variant v0.29.0 --quiet --html " + path);
    CHECK(r.exit_code == 2);
    const std::string page = slurp(path);
    REQUIRE_THAT(page, Catch::StartsWith("<!DOCTYPE html>"));
    CHECK_THAT(page, !Catch::Contains("http://") && !Catch::Contains("https://") && !Catch::Contains("src="));
    CHECK_THAT(page, !Catch::Contains("{{DATA}}") && !Catch::Contains("{{JS}}") && !Catch::Contains("{{CSS}}"));
    const auto open = page.find("<script id=\"kvsim-data\" type=\"application/json\">");
    REQUIRE(open != std::string::npos);
    const auto start = page.find('>', open) + 1;
    const auto data = nlohmann::json::parse(page.substr(start, page.find("</script>", start) - start));
    CHECK(data.at("finding").at("request") == "r1");
    CHECK(data.at("finding").at("signature") == "crash:missing_current_block_table");
    CHECK_THAT(data.at("finding").at("quote").get<std::string>(),
               Catch::Contains("AssertionError: Missing current block table for store request r1"));
    CHECK(data.at("repro") == "kvsim run " + kSeed000Both + " --variant v0.29.0");
    CHECK(data.at("lanes") == nlohmann::json::array({"r1"}));
    CHECK_THAT(data.at("trace_text").get<std::string>(), Catch::Contains("@0 arrive r1"));
    CHECK_FALSE(data.at("slice").at("events").empty());
}
