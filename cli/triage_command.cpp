// kvsim triage: replay fuzzer artifacts, classify them against the registry of known findings,
// group them by cause, minimise and write findings/<variant>/<id or signature>/
// (fuzz/campaign/triage.h does the work).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>

#include "cli/commands.h"
#include "cli/registry_option.h"
#include "fuzz/campaign/triage.h"
#include "properties/harness/exit_codes.h"

namespace kvsim::cli {

struct TriageOptions {
    std::string variant;
    std::string out_dir = "findings";
    std::string registry;
    std::string summary;  // JSON lines appended, one per artifact
    std::string kvsim = "kvsim";
    int max_runs = 4000;
    std::vector<std::string> artifacts;
};

namespace {

struct Counts {
    int fresh = 0, known = 0, unreproduced = 0, duplicates = 0;
};

void count(const TriagedArtifact& t, Counts& c) {
    if (!t.first) ++c.duplicates;
    else if (t.status == TriageStatus::known) ++c.known;
    else if (t.status == TriageStatus::unreproduced) ++c.unreproduced;
    else ++c.fresh;
}

// An artifact that is not a readable file is the caller's mistake (a directory, a typo), not an
// artifact that fails to parse: one line naming it, before any is triaged.
bool artifacts_readable(const std::vector<std::string>& artifacts) {
    for (const std::string& artifact : artifacts) {
        std::error_code ec;
        const char* problem = nullptr;
        if (std::filesystem::is_directory(artifact, ec)) problem = "is a directory, not an artifact";
        else if (!std::ifstream(artifact, std::ios::binary)) problem = "cannot open";
        if (problem == nullptr) continue;
        std::cerr << "kvsim: " << artifact << ":0: artifact: " << problem << "\n";
        return false;
    }
    return true;
}

}  // namespace

int run_triage(const TriageOptions& options) {
    if (!artifacts_readable(options.artifacts)) return exit_code::kInputError;
    int failure = 0;
    const Registry* registry = registry_from_option(options.registry, &failure);
    if (registry == nullptr) return failure;
    std::string error;
    const auto variant = resolve_variant(options.variant, &error);
    if (!variant) {
        std::cerr << "kvsim: --variant: " << error << "\n";
        return exit_code::kUsage;
    }
    const TriageConfig config{.variant = *variant, .out_dir = options.out_dir, .registry = registry,
                              .max_runs = options.max_runs, .kvsim = options.kvsim};
    std::ofstream summary;
    if (!options.summary.empty()) summary.open(options.summary, std::ios::app);
    Counts c;
    for (const std::string& artifact : options.artifacts) {
        try {
            const TriagedArtifact t = triage_artifact(artifact, config);
            count(t, c);
            std::cout << triage_report_line(t, variant->name) << "\n" << std::flush;
            if (summary.is_open()) summary << triage_summary_line(t, variant->name) << "\n" << std::flush;
        } catch (const std::bad_alloc&) {
            throw;  // main's one line and exit code, not an internal error
        } catch (const std::exception& e) {
            std::cerr << e.what() << "\n";
            return exit_code::kInternalError;
        }
    }
    std::cout << fmt::format(
        "triage: {} artifact(s) under {}: {} new finding(s), {} known, {} unreproduced, {} duplicate(s) -> {}/{}\n",
        options.artifacts.size(), variant->name, c.fresh, c.known, c.unreproduced, c.duplicates, options.out_dir,
        variant->name);
    return exit_code::kPass;
}

Command add_triage_command(CLI::App& app) {
    auto opts = std::make_shared<TriageOptions>();
    CLI::App* cmd = app.add_subcommand(
        "triage", "Replay fuzzer artifacts, classify them against the known findings, group by cause, minimise, "
                  "and write OUT/<variant>/<registry id or signature>/");
    cmd->add_option("artifacts", opts->artifacts, "Artifacts (trace texts, e.g. libFuzzer crash-<sha1>)")->required();
    cmd->add_option("--variant", opts->variant, "The campaign's variant")->required();
    cmd->add_option("--out", opts->out_dir, "Findings root (default findings)");
    cmd->add_option("--registry", opts->registry, "Registry of known findings (default: built in)");
    cmd->add_option("--summary", opts->summary, "Append one JSON line per artifact to FILE");
    cmd->add_option("--kvsim", opts->kvsim, "How repro commands name kvsim (default kvsim)");
    cmd->add_option("--max-runs", opts->max_runs, "Minimiser budget in replays (default 4000)")
        ->check(CLI::Range(1, 10'000'000));
    return [opts] { return run_triage(*opts); };
}

}  // namespace kvsim::cli
