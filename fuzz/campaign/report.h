#pragma once
// The work behind `kvsim report`: the nightly campaign's report (report.json and report.md) from
// what the campaign left in its run directory:
//   campaign.txt            facts scripts/nightly records, one `KEY VALUE` or `KEY k=v...` a line
//                           (every key declared in fuzz/campaign/campaign_facts.cpp; `kvsim report --help`)
//   stats/<V>/jobs.*.json   the fuzz target's counts of each campaign process (KVSIM_FUZZ_STATS)
//   stats/<V>/single.*.json the same binary alone, on the same corpus (the single-process rate)
//   triage-<V>.jsonl        `kvsim triage --summary` lines
//   lifecycle-<V>.dot/.svg  the lifecycle graph of V's corpus (`kvsim coverage --dot`; the SVG when
//                           Graphviz rendered it)
// The report's pages (report.md, index.html) link each finding's files (its minimal trace, HTML page
// and explain text) and the lifecycle graphs by paths relative to the directory the page is in.
// The campaign's exec/s is the executions of all its processes over the session's wall time; the
// per-job rate divides that by the jobs, and its ratio to the single-process rate is reported.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace kvsim {

struct CampaignReport {
    nlohmann::ordered_json json;
    std::string markdown;  // report.md, its links relative to the run directory
    std::string html;      // index.html, likewise
    int exit_code = 0;  // 0 clean, 1 new finding on a clean variant, 2 canary failed, 70 build, 130 interrupted
};

// Throws InputError (FILE:LINE: FIELD: ...) on an unreadable or malformed campaign.txt, triage summary line or
// stats file (fuzz/campaign/campaign_facts.h): nothing malformed is skipped or read as 0.
CampaignReport build_campaign_report(const std::filesystem::path& run_dir);

// The report's Markdown and its self-contained HTML page (inline CSS, no script, no network), from
// its JSON, for a page written into `page_dir`.
std::string render_report_markdown(const nlohmann::ordered_json& report, const std::filesystem::path& page_dir);
std::string render_report_html(const nlohmann::ordered_json& report, const std::filesystem::path& page_dir);

// "OK: no new finding on a variant expected clean" and the like.
std::string report_status_line(const nlohmann::ordered_json& report);

// The link from a page in `page_dir` to `target`: a relative path, each byte outside
// [A-Za-z0-9-._~/] percent-encoded (a cause such as crash:x is not read as a URL scheme).
std::string relative_link(const std::filesystem::path& target, const std::filesystem::path& page_dir);

// A finding's file (`files.trace`, `files.page` or `files.explain` of report.json's finding) as a
// path, or empty when the finding has none.
std::filesystem::path finding_file(const nlohmann::ordered_json& finding, const char* which);

// A finding's registry causes as one label: "a+b" when known, "after a+b: RESIDUE" when new behind
// known causes, "" otherwise.
std::string causes_label(const nlohmann::ordered_json& finding);

}  // namespace kvsim
