#include "fuzz/swarm/explore.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "properties/findings/classify.h"
#include "sim/trace/scheduling_mode.h"
#include "sim/trace/input_error.h"
#include "sim/common/on_off.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace kvsim {
namespace {

std::string verdict_text(const RunResult& result) {
    return result.internal_error ? std::string("internal-error") : std::string(to_string(result.verdict));
}

std::string directory_name(std::string signature) {
    std::replace(signature.begin(), signature.end(), ':', '_');
    return signature;
}

std::filesystem::path failing_trace_path(const ExploreSeed& seed, const std::string& out_dir) {
    return std::filesystem::path(out_dir) / directory_name(seed.failure_kind()) / fmt::format("seed-{}.trace", seed.seed);
}

bool write_failing_trace(const ExploreSeed& seed, const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream file(path, std::ios::binary);
    file << seed.header << print_trace(seed.swarm_case.trace);
    file.close();
    return !ec && file;
}

// Tallies a failing seed and prints its line; false when its trace could not be written.
bool report_failure(const ExploreSeed& seed, const ExploreConfig& config, ExploreSummary& summary,
                    std::ostream& out) {
    if (seed.known()) ++summary.known; else ++summary.failed;
    summary.internal_error = summary.internal_error || seed.result.internal_error;
    SignatureTally& tally =
        seed.known() ? summary.known_entries[seed.classification.cause_set()] : summary.signatures[seed.failure_kind()];
    if (tally.count++ == 0) tally.first_seed = seed.seed;
    if (seed.known() && !config.any_failure) return true;
    std::string line = failure_line(seed);
    if (!config.out_dir.empty()) {
        const auto path = failing_trace_path(seed, config.out_dir);
        if (!write_failing_trace(seed, path)) {
            summary.unwritable = path.string();
            return false;
        }
        line += fmt::format(" | trace: kvsim run {} --variant {}", path.string(), config.variant.name);
    }
    out << line << "\n" << std::flush;
    return true;
}

void tally_mode(const ExploreSeed& seed, const ExploreConfig& config, ExploreSummary& summary) {
    ModeTally& tally = summary.by_mode[std::string(on_off(resolved_async_scheduling(seed.swarm_case.trace.engine, config.variant)))];
    ++tally.runs;
    if (seed.passed()) ++tally.passed;
    else if (seed.known()) ++tally.known;
    else ++tally.failed;
}

}  // namespace

std::string ExploreSeed::failure_kind() const {
    if (result.internal_error) return "internal-error";
    if (classification.known()) return result.signature + "~" + classification.cause_set();
    if (!classification.causes.empty())
        return classification.residue_signature + " after " + classification.cause_set();
    return result.signature;
}

ExploreSeed explore_seed(std::uint64_t seed, const ExploreConfig& config) {
    const SwarmOptions swarm{.role = config.role, .variant = config.variant.name};
    ExploreSeed out{.seed = seed, .swarm_case = swarm_case_for_seed(seed, swarm), .result = {}, .repro = {}, .header = {}, .classification = {}};
    if (config.async_scheduling) {
        out.swarm_case.config.async_scheduling = config.async_scheduling;
        out.swarm_case.trace.engine.async_scheduling = config.async_scheduling;
    }
    out.repro = fmt::format("kvsim explore --seed {} --seeds 1 --variant {} --role {}{}{}", seed, config.variant.name,
                            to_string(config.role), config.any_failure ? " --any-failure" : "",
                            config.async_scheduling ? (*config.async_scheduling ? " --async-scheduling on"
                                                                                : " --async-scheduling off")
                                                    : "");
    out.header = fmt::format("# {}\n# knobs: {}\n", out.repro, describe(out.swarm_case.config));
    try {
        validate_trace(out.swarm_case.trace, fmt::format("seed-{}", seed));
        out.result = run_for_search(out.swarm_case.trace, config.variant);
        if (out.result.verdict == Verdict::rejected) {  // the generator promises configurations upstream accepts
            out.result.internal_error = true;
            out.result.message = fmt::format("generated trace is rejected: {}", out.result.message);
        } else if (config.registry != nullptr) {
            out.classification = classify(*config.registry, out.swarm_case.trace, config.variant, out.result);
        }
    } catch (const InputError& bad) {
        // The generator promises valid traces: an invalid one is a bug in kvsim.
        out.result.internal_error = true;
        out.result.message = fmt::format("generated trace is invalid: {}", bad.what());
    }
    return out;
}

static std::string seed_status(const ExploreSeed& seed) {
    const Classification& c = seed.classification;
    if (c.known()) return "known=" + c.cause_set();
    if (c.causes.empty()) return "NEW";
    return fmt::format("NEW after={} residue={}", c.cause_set(), c.residue_signature);
}

std::string failure_line(const ExploreSeed& seed) {
    const auto& mode = seed.swarm_case.trace.engine.async_scheduling;
    return fmt::format("seed={} {} verdict={} signature={} steps={} async_scheduling={} -- {} | repro: {}", seed.seed,
                       seed_status(seed),
                       verdict_text(seed.result), seed.result.internal_error ? "internal-error" : seed.result.signature,
                       seed.result.steps, mode ? on_off(*mode) : "default", seed.result.message, seed.repro);
}

ExploreSummary explore(const ExploreConfig& config, std::ostream& out, std::ostream& progress) {
    ExploreSummary summary;
    for (std::uint64_t i = 0; i < config.seeds; ++i) {
        const ExploreSeed seed = explore_seed(config.first_seed + i, config);
        if (config.print_trace) out << seed.header << print_trace(seed.swarm_case.trace) << std::flush;
        tally_mode(seed, config, summary);
        if (seed.passed())
            ++summary.passed;
        else if (!report_failure(seed, config, summary, out))
            return summary;
        const std::uint64_t done = i + 1;
        if (config.progress > 0 && done % config.progress == 0 && done < config.seeds)
            progress << fmt::format("explore: {}/{} seeds, {} new, {} known\n", done, config.seeds,
                                    summary.failed, summary.known);
    }
    return summary;
}

namespace {

std::string tally_rows(const std::map<std::string, SignatureTally>& tallies, std::string_view heading) {
    if (tallies.empty()) return {};
    std::size_t width = 0;
    for (const auto& [kind, tally] : tallies) width = std::max(width, kind.size());
    std::string out = fmt::format("  {}:\n", heading);
    for (const auto& [kind, tally] : tallies)
        out += fmt::format("    {:<{}} {:>6}  first seed={}\n", kind, width, tally.count, tally.first_seed);
    return out;
}

}  // namespace

std::string render_explore_summary(const ExploreSummary& summary, const ExploreConfig& config) {
    std::string out = fmt::format(
        "explore: variant={} role={} seeds={}..{} ({}): {} passed, {} new ({} signatures), {} known ({} causes)\n",
        config.variant.name, to_string(config.role), config.first_seed, config.first_seed + config.seeds - 1,
        config.seeds, summary.passed, summary.failed, summary.signatures.size(), summary.known,
        summary.known_entries.size());
    for (const auto& [mode, tally] : summary.by_mode)
        out += fmt::format("  async_scheduling={}: {} seeds, {} passed, {} new, {} known\n", mode, tally.runs,
                           tally.passed, tally.failed, tally.known);
    out += tally_rows(summary.signatures, "new (by signature)");
    out += tally_rows(summary.known_entries, "known (by cause set, in the order removed)");
    return out;
}

}  // namespace kvsim
