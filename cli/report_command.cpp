// kvsim report: the nightly campaign's report.json and report.md from its run directory
// (fuzz/campaign/report.h does the work); exits with the campaign's status.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "fuzz/campaign/report.h"
#include "properties/harness/exit_codes.h"
#include "sim/trace/input_error.h"

namespace kvsim::cli {

struct ReportOptions {
    std::string run_dir;
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

}  // namespace

int run_report(const ReportOptions& options) {
    const std::filesystem::path dir = options.run_dir;
    try {
        const CampaignReport report = build_campaign_report(dir);
        if (!write(dir / "report.json", report.json.dump(2) + "\n") || !write(dir / "report.md", report.markdown)) {
            std::cerr << "kvsim: report: cannot write into " << dir.string() << "\n";
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
        "report", "Write a nightly campaign's report.json and report.md from its run directory; exit with its status");
    cmd->add_option("run_dir", opts->run_dir, "The campaign's run directory (campaign.txt, stats/, triage-*.jsonl)")
        ->required();
    return [opts] { return run_report(*opts); };
}

}  // namespace kvsim::cli
