// kvsim report's index.html and report.md over a campaign directory built from real triage output:
// every link resolves to a file that exists, from the run directory and from --copy-to's.
#include <catch2/catch.hpp>

#include "planted_traces.h"

#include "padded_seed000.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "cli_runner.h"
#include "fuzz/campaign/report.h"

using namespace kvsim::testing;
namespace fs = std::filesystem;

namespace {

const std::string kVariantFacts = " budget=1 seconds=1 sanitizer_seconds=0 jobs=1 single_seconds=0 corpus=/nonexistent "
                                  "seeds=/nonexistent corpus_before=0 corpus_after=0 seed_count=0 seeds_left_out=0 "
                                  "crash_artifacts=0\n";
const std::string kCampaign = "run_id planted\nstarted 2026-01-01T00:00:00Z\ncommit abc\nminutes 1\njobs 1\n"
                              "sanitizer_share 25\nbuild ok\nbroken v0.29.0\nvariant name=v0.29.0" + kVariantFacts +
                              "variant name=v0.30.0" + kVariantFacts + "interrupted 0\nwall_seconds 60\n";

// A finding whose signature needs escaping, in a directory that holds only its trace.
nlohmann::json hostile_line(const fs::path& dir) {
    return {{"artifact", "crash-x"}, {"variant", "v0.30.0"}, {"first", true}, {"status", "new"},
            {"verdict", "crash"}, {"signature", "crash:<b>&\"x\""}, {"causes", nlohmann::json::array()}, {"residue", ""}, {"cause", "x"},
            {"dir", dir.string()}, {"files", {{"trace", "trace"}, {"page", "page.html"}, {"explain", nullptr}}},
            {"repro", "kvsim run x"}, {"message", "m"}};
}

struct Campaign {
    fs::path root = scratch_dir() / "report-index";
    fs::path run = root / "run";
    Campaign() {
        fs::remove_all(root);
        fs::create_directories(run);
        fs::create_directories(root / "copy");
        std::ofstream(run / "campaign.txt") << kCampaign;
        std::ofstream(run / "lifecycle-v0.30.0.svg") << "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n";
        triage("v0.29.0", "crash-seed000", kvsim::testing::padded_seed000_trace("v0.30.0"));
        triage("v0.30.0", "crash-pending", kPendingLookupLiveness);
        const fs::path hostile = root / "findings" / "v0.30.0" / "hostile";
        fs::create_directories(hostile);
        std::ofstream(hostile / "trace") << "kvsim-trace 1\n";
        std::ofstream(run / "triage-v0.30.0.jsonl", std::ios::app) << hostile_line(hostile).dump() << "\n";
    }
    void triage(const std::string& variant, const std::string& name, const std::string& text) const {
        const fs::path artifact = root / name;
        std::ofstream(artifact, std::ios::binary) << text;
        const auto r = run_kvsim("triage --variant " + variant + " --max-runs 300 --out " + (root / "findings").string() +
                                 " --summary " + (run / ("triage-" + variant + ".jsonl")).string() + " " +
                                 artifact.string());
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
    }
};

std::string percent_decoded(const std::string& link) {
    std::string out;
    for (std::size_t i = 0; i < link.size(); ++i) {
        if (link[i] == '%' && i + 2 < link.size()) {
            out += static_cast<char>(std::stoi(link.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += link[i];
        }
    }
    return out;
}

std::set<std::string> links_in(const std::string& text, const std::regex& pattern) {
    std::set<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) out.insert((*it)[1]);
    return out;
}

// Every link of report.json's findings (and each variant's lifecycle graph) is on the page, and
// every link on the page resolves, from `page_dir`, to a file that exists.
void check_links(const nlohmann::ordered_json& report, const fs::path& page_dir, const std::set<std::string>& links) {
    std::size_t expected = 0;
    for (const auto& v : report["variants"]) {
        for (const auto& f : v["findings"])
            for (const char* which : {"trace", "page", "explain"}) {
                const fs::path file = kvsim::finding_file(f, which);
                if (file.empty()) continue;
                ++expected;
                INFO(file);
                CHECK(links.contains(kvsim::relative_link(file, page_dir)));
            }
        if (v["lifecycle_graph"]["svg"].is_string())
            CHECK(links.contains(kvsim::relative_link(v["lifecycle_graph"]["svg"].get<std::string>(), page_dir)));
    }
    CHECK(expected == 7);  // two triaged findings with trace, page and explain; the hostile one's trace
    for (const std::string& link : links) {
        INFO(link);
        CHECK(fs::is_regular_file(page_dir / percent_decoded(link)));
    }
}

}  // namespace

TEST_CASE("kvsim report's index.html links each finding's trace, page and explain text, and every link resolves", "[report]") {
    const Campaign c;
    const auto r = run_kvsim("report " + c.run.string() + " --copy-to " + (c.root / "copy").string());
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 1);  // the planted liveness is NEW on v0.30.0, expected clean
    const auto report = nlohmann::ordered_json::parse(slurp(c.run / "report.json"));
    REQUIRE(report["variants"][1]["findings"].size() == 2);
    REQUIRE(report["variants"][1]["findings"][1]["files"]["page"].is_null());  // named, but not there
    const std::regex href("href=\"([^\"]*)\"");
    const std::regex md_link("\\]\\(([^)]*)\\)");
    for (const fs::path& dir : {c.run, c.root / "copy"}) {
        INFO(dir);
        const std::string html = slurp(dir / "index.html");
        REQUIRE_THAT(html, Catch::StartsWith("<!DOCTYPE html>") && Catch::Contains("<style>") &&
                               Catch::Contains("<td>seed000_pending_load_save</td>"));
        const auto links = links_in(html, href);
        check_links(report, dir, links);
        CHECK(links.size() == 8);  // 7 files and one lifecycle graph
        check_links(report, dir, links_in(slurp(dir / "report.md"), md_link));
    }
    // every text is escaped: the hostile signature appears only escaped
    const std::string html = slurp(c.run / "index.html");
    CHECK_THAT(html, Catch::Contains("crash:&lt;b&gt;&amp;&quot;x&quot;"));
    CHECK(html.find("<b>&") == std::string::npos);
    CHECK(html.find("http") == std::string::npos);  // no network: nothing fetched, nothing linked outside
}
