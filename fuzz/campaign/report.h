#pragma once
// The work behind `kvsim report`: the nightly campaign's report (report.json and report.md) from
// what the campaign left in its run directory:
//   campaign.txt            facts scripts/nightly records, one `KEY VALUE` or `KEY k=v...` a line
//                           (run_id, started, commit, minutes, jobs, build, interrupted, broken,
//                           canary ..., variant name=V ...: see fuzz/README.md, The campaign's files)
//   stats/<V>/jobs.*.json   the fuzz target's counts of each campaign process (KVSIM_FUZZ_STATS)
//   stats/<V>/single.*.json the same binary alone, on the same corpus (the single-process rate)
//   triage-<V>.jsonl        `kvsim triage --summary` lines
// The campaign's exec/s is the executions of all its processes over the session's wall time; the
// per-job rate divides that by the jobs, and its ratio to the single-process rate is reported.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace kvsim {

struct CampaignReport {
    nlohmann::ordered_json json;
    std::string markdown;
    int exit_code = 0;  // 0 clean, 1 new finding on a clean variant, 2 canary failed, 70 build, 130 interrupted
};

// Throws InputError (campaign.txt:LINE) on a malformed fact, std::runtime_error on an unreadable file.
CampaignReport build_campaign_report(const std::filesystem::path& run_dir);

// The report's Markdown, from its JSON.
std::string render_report_markdown(const nlohmann::ordered_json& report);

}  // namespace kvsim
