// kvsim report: the nightly campaign's report.json, report.md and index.html from its run directory
// (fuzz/campaign/report.h does the work); exits with the campaign's status.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "fuzz/campaign/campaign_facts.h"
#include "fuzz/campaign/report.h"
#include "properties/harness/exit_codes.h"
#include "sim/trace/input_error.h"

namespace kvsim::cli {

struct ReportOptions {
    std::string run_dir;
    std::string copy_to;  // non-empty: the same report written there too, its links relative to it
};

namespace {

bool write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    return static_cast<bool>(out);
}

void print_summary(const nlohmann::ordered_json& r) {
    std::string line = fmt::format("report: canary {}", r["canary"]["status"].get<std::string>());
    for (const auto& v : r["variants"])
        line += fmt::format("; {} {} execs, {} exec/s per job vs {} single process (ratio {}), {} new/{} known",
                            v["variant"].get<std::string>(), v["executions"].dump(), v["exec_per_sec_per_job"].dump(),
                            v["single_process"]["exec_per_sec"].dump(), v["per_job_to_single_ratio"].dump(),
                            v["findings_new"].dump(), v["findings_known"].dump());
    std::cout << line << "\n";
    for (const auto& v : r["variants"])
        for (const auto& f : v["findings"])
            if (f["status"] == "new")
                std::cout << fmt::format("report: NEW {} {}: {}\n", v["variant"].get<std::string>(),
                                         f["signature"].get<std::string>(), f["repro"].get<std::string>());
    std::cout << fmt::format("report: status {} (exit {})\n", r["status"].get<std::string>(), r["exit_code"].dump());
}

// report.json, report.md and index.html into `dir`, the pages' links relative to it.
bool write_report(const CampaignReport& report, const std::filesystem::path& dir, const std::filesystem::path& run_dir) {
    const bool here = dir == run_dir;
    return write(dir / "report.json", report.json.dump(2) + "\n") &&
           write(dir / "report.md", here ? report.markdown : render_report_markdown(report.json, dir)) &&
           write(dir / "index.html", here ? report.html : render_report_html(report.json, dir));
}

}  // namespace

int run_report(const ReportOptions& options) {
    const std::filesystem::path dir = options.run_dir;
    try {
        const CampaignReport report = build_campaign_report(dir);
        for (const std::string& into : {options.run_dir, options.copy_to}) {
            if (into.empty() || write_report(report, into, dir)) continue;
            std::cerr << "kvsim: report: cannot write into " << into << "\n";
            return exit_code::kUsage;
        }
        print_summary(report.json);
        return report.exit_code;
    } catch (const InputError& bad) {
        std::cerr << "kvsim: " << bad.what() << "\n";
        return exit_code::kInputError;
    }
}

Command add_report_command(CLI::App& app) {
    auto opts = std::make_shared<ReportOptions>();
    CLI::App* cmd = app.add_subcommand(
        "report", "Write a nightly campaign's report.json, report.md and index.html (a self-contained page linking "
                  "each finding's trace, HTML page and explain text) from its run directory; exit with its status");
    cmd->add_option("run_dir", opts->run_dir, "The campaign's run directory (campaign.txt, stats/, triage-*.jsonl)")
        ->required();
    cmd->add_option("--copy-to", opts->copy_to,
                    "Also write the three files into DIR, with the pages' links relative to DIR");
    cmd->footer("\n" + campaign_facts_help());
    return [opts] { return run_report(*opts); };
}

}  // namespace kvsim::cli
