// Opens `kvsim run --html` pages in headless Chromium: the dumped DOM must show the finding's step,
// request, blocks and assertion, and the screenshot must not be blank. Opens a nightly report's
// index.html: every finding's links must be on the page. Without a Chromium that
// runs, the binary exits 77 before any test, which ctest reports as skipped (SKIP_RETURN_CODE).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fuzz/campaign/report.h"
#include "png_reader.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;
const std::string kChromium = "chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars";

bool chromium_runs() {
    return std::system((kChromium + " --dump-dom about:blank >/dev/null 2>&1").c_str()) == 0;
}

std::string dump_dom(const std::string& page) {
    const std::string out = (scratch_dir() / "dom.html").string();
    REQUIRE(std::system((kChromium + " --virtual-time-budget=5000 --dump-dom file://" + page + " >" + out +
                         " 2>/dev/null").c_str()) == 0);
    return slurp(out);
}

// The first finding of `trace` under `variant` (empty: the trace's own).
Finding first_finding(const std::string& trace_path, const std::string& variant) {
    const Trace trace = parse_trace_file(trace_path);
    const RunResult result = run_trace(trace, require_variant(variant.empty() ? trace.run.variant : variant));
    REQUIRE_FALSE(result.findings.empty());
    return result.findings.front();
}

void check_page_shows(const std::string& trace_path, const std::string& variant_flag, const Finding& finding) {
    const std::string page = (scratch_dir() / "page.html").string();
    const auto r = run_kvsim("run " + trace_path + variant_flag + " --quiet --html " + page);
    REQUIRE(r.err.empty());
    const std::string dom = dump_dom(page);
    INFO(trace_path);
    CHECK_THAT(dom, Catch::Contains("id=\"finding-step\">step " + std::to_string(finding.step) + "<"));
    if (!finding.request.empty()) CHECK_THAT(dom, Catch::Contains("id=\"finding-request\">" + finding.request + "<"));
    if (!finding.blocks.empty()) CHECK_THAT(dom, Catch::Contains("id=\"finding-blocks\">" + format_blocks(finding.blocks) + "<"));
    const std::string quoted = finding.kind == FindingKind::crash ? "AssertionError: " + finding.detail : finding.id;
    CHECK_THAT(dom, Catch::Contains(quoted));
    CHECK_THAT(dom, Catch::Contains("repro: kvsim run " + trace_path));
}

}  // namespace

TEST_CASE("headless Chromium shows seed 000's kv_both crash: step, request and assertion", "[browser]") {
    const std::string trace = kRepo + "/corpus/upstream/seed000_multiconnector_both.trace";
    const Finding finding = first_finding(trace, "v0.29.0");
    REQUIRE(finding.kind == FindingKind::crash);
    check_page_shows(trace, " --variant v0.29.0", finding);
}

TEST_CASE("headless Chromium shows each corpus finding's step, request and invariant or assertion", "[browser]") {
    for (const auto& e : std::filesystem::directory_iterator(kRepo + "/corpus/findings"))
        if (e.path().extension() == ".trace") check_page_shows(e.path().string(), "", first_finding(e.path().string(), ""));
}

TEST_CASE("headless Chromium shows the blocks a finding names (issue 52360 under v0.27.1)", "[browser]") {
    const std::string trace = kRepo + "/corpus/upstream/issue52360_preempted_save_reads_reused_blocks.trace";
    const Finding finding = first_finding(trace, "v0.27.1");
    REQUIRE_FALSE(finding.blocks.empty());
    check_page_shows(trace, " --variant v0.27.1", finding);
}

TEST_CASE("headless Chromium shows a finding's cause set and the settings it needs", "[browser]") {
    const std::string page = (scratch_dir() / "causes.html").string();
    const std::string seed000 = kRepo + "/corpus/upstream/seed000_multiconnector_both.trace";
    REQUIRE(run_kvsim("run " + seed000 + " --variant v0.29.0+skip_save_is_consumer --quiet --html " + page).err.empty());
    const std::string dom = dump_dom(page);
    CHECK_THAT(dom, Catch::Contains("<div id=\"finding-causes\">registry: known: <b class=\"cause\">seed000_pending_load_save</b>"));
    CHECK_THAT(dom, Catch::Contains("<div id=\"finding-settings\">settings that differ from upstream's defaults: "));
    CHECK_THAT(dom, Catch::Contains("engine.async_scheduling=off <i>(upstream on)</i>"));
    // the one cause reachable with all of upstream's defaults says so
    const std::string producer = kRepo + "/corpus/findings/inflight_write_producer_store_load.trace";
    REQUIRE(run_kvsim("run " + producer + " --quiet --html " + page).err.empty());
    const std::string defaults = dump_dom(page);
    CHECK_THAT(defaults, Catch::Contains("<div id=\"finding-settings\">settings: upstream's defaults</div>"));
    CHECK_THAT(defaults, Catch::Contains("<b class=\"cause\">inflight_write_producer_store_load</b>"));
}

TEST_CASE("the screenshot of a run page is not blank", "[browser]") {
    const std::string page = (scratch_dir() / "shot.html").string();
    const std::string png = (scratch_dir() / "shot.png").string();
    REQUIRE(run_kvsim("run " + kRepo + "/corpus/upstream/seed000_multiconnector_both.trace --variant v0.29.0 --quiet --html " + page)
                .err.empty());
    std::filesystem::remove(png);
    REQUIRE(std::system((kChromium + " --virtual-time-budget=5000 --window-size=1200,900 --screenshot=" + png +
                         " file://" + page + " >/dev/null 2>&1").c_str()) == 0);
    const auto image = read_png(slurp(png));
    REQUIRE(image);
    CHECK(image->width == 1200);
    CHECK(image->height == 900);
    std::set<std::uint32_t> colours;
    const std::size_t n = image->pixels.size() / std::size_t(image->channels);
    for (std::size_t i = 0; i < n && colours.size() < 64; ++i) {
        const std::uint8_t* p = &image->pixels[i * std::size_t(image->channels)];
        colours.insert((std::uint32_t(p[0]) << 16) | (std::uint32_t(p[1]) << 8) | p[2]);
    }
    CHECK(colours.size() >= 8);  // text, the status colours, the finding's red: far from one colour
}

TEST_CASE("headless Chromium shows each finding's links on a nightly report's index.html", "[browser]") {
    const auto root = scratch_dir() / "campaign";
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "run");
    std::ofstream(root / "run" / "campaign.txt")
        << "run_id browser\nstarted 2026-01-01T00:00:00Z\ncommit abc\nminutes 1\njobs 1\nsanitizer_share 25\nbuild ok\n"
        << "broken v0.29.0\ninterrupted 0\nwall_seconds 60\n";
    for (const char* v : {"v0.29.0", "v0.30.0"})
        std::ofstream(root / "run" / "campaign.txt", std::ios::app)
            << "variant name=" << v << " budget=1 seconds=1 sanitizer_seconds=0 jobs=1 single_seconds=0 "
            << "corpus=/nonexistent seeds=/nonexistent corpus_before=0 corpus_after=0 seed_count=0 seeds_left_out=0 "
            << "crash_artifacts=0\n";
    const std::pair<const char*, const char*> artifacts[] = {
        {"v0.29.0", "/corpus/upstream/seed000_multiconnector_both.trace"},
        {"v0.30.0", "/corpus/findings/failed_store_load_reserves_itself.trace"}};
    for (const auto& [variant, trace] : artifacts) {
        const auto r = run_kvsim(std::string("triage --max-runs 200 --variant ") + variant + " --out " +
                                 (root / "findings").string() + " --summary " +
                                 (root / "run" / ("triage-" + std::string(variant) + ".jsonl")).string() + " " + kRepo + trace);
        REQUIRE(r.exit_code == 0);
    }
    REQUIRE(run_kvsim("report " + (root / "run").string()).err.empty());
    const std::string dom = dump_dom((root / "run" / "index.html").string());
    const auto report = nlohmann::ordered_json::parse(slurp(root / "run" / "report.json"));
    int links = 0;
    for (const auto& v : report["variants"])
        for (const auto& f : v["findings"]) {
            CHECK_THAT(dom, Catch::Contains(f["signature"].get<std::string>()));
            for (const char* which : {"trace", "page", "explain"}) {
                const std::filesystem::path file = finding_file(f, which);
                REQUIRE(std::filesystem::is_regular_file(file));
                CHECK_THAT(dom, Catch::Contains("href=\"" + relative_link(file, root / "run") + "\""));
                ++links;
            }
        }
    CHECK(links == 6);
}

int main(int argc, char** argv) {
    if (!chromium_runs()) {
        std::cout << "SKIPPED: headless chromium does not run here (scripts/setup installs Debian's chromium)\n";
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
