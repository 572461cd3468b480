#include "fuzz/minimize/minimize_finding.h"

#include <fmt/format.h>

#include "properties/findings/classify.h"
#include "sim/trace/trace_printer.h"

namespace kvsim {
namespace {

// Text safe for a trace comment: printable ASCII, one line, bounded.
std::string comment_text(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (out.size() >= 300) {
            out += "...";
            break;
        }
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return out;
}

MinimizedFinding not_minimized(MinimizeOutcome outcome, std::string signature, RunResult original) {
    MinimizedFinding out;
    out.outcome = outcome;
    out.signature = std::move(signature);
    out.original = std::move(original);
    return out;
}

Classification classified(const Registry* registry, const Trace& trace, const Variant& variant, const RunResult& r) {
    if (registry == nullptr) return {};
    return classify(*registry, trace, variant, r);
}

std::string registry_comment(const Classification& c) {
    if (c.known()) return "known, causes " + c.cause_set();
    if (c.is_new() && !c.causes.empty())
        return fmt::format("NEW: {} after the known causes {}", c.residue_signature, c.cause_set());
    if (c.is_new()) return "NEW (no known finding matches)";
    return "not classified";
}

}  // namespace

MinimizedFinding minimize_finding(const FindingToMinimize& finding) {
    std::string signature = finding.signature;
    RunResult first = run_trace(finding.trace, finding.variant);
    if (first.verdict == Verdict::rejected) return not_minimized(MinimizeOutcome::rejected, "", std::move(first));
    if (signature.empty()) {
        if (first.internal_error) return not_minimized(MinimizeOutcome::internal_error, "", std::move(first));
        if (first.signature.empty()) return not_minimized(MinimizeOutcome::passes, "", std::move(first));
        signature = first.signature;
    }
    MinimizedFinding out;
    out.signature = signature;
    if (first.signature == signature)
        out.classification = classified(finding.registry, finding.trace, finding.variant, first);
    MinimizeOptions options;
    options.max_runs = finding.max_runs;
    options.stats = &out.stats;
    if (finding.registry != nullptr)
        options.also_keep = [&](const Trace& t, const RunResult& r) {
            return classified(finding.registry, t, finding.variant, r).key() == out.classification.key();
        };
    out.minimal = minimize_trace(finding.trace, finding.variant, signature, options);
    if (!out.stats.reproduced)
        return not_minimized(MinimizeOutcome::not_reproduced, signature, run_trace(finding.trace, finding.variant));
    out.minimal_result = run_trace(out.minimal, finding.variant);
    out.minimal.run.variant = finding.variant.name;
    Expectation expect{.variant = finding.variant.name, .verdict = out.minimal_result.verdict, .signature = signature, .causes = {}};
    if (out.classification.known())
        for (const KnownEntry* e : out.classification.causes) expect.causes.push_back(e->id);
    out.minimal.expectations = {expect};
    return out;
}

std::string minimized_trace_text(const MinimizedFinding& minimized, const FindingToMinimize& finding) {
    const MinimizeStats& stats = minimized.stats;
    std::string text = print_trace(minimized.minimal);
    std::string comments;
    comments += fmt::format("# Minimised by kvsim minimize from {} under {}, keeping signature={}\n",
                            comment_text(finding.source), finding.variant.name, comment_text(minimized.signature));
    comments += fmt::format("# ({} -> {} events, {} -> {} bytes, {} replays{}).\n", stats.events_before,
                            stats.events_after, stats.bytes_before, stats.bytes_after, stats.runs,
                            stats.budget_exhausted ? ", budget exhausted" : "");
    comments += fmt::format("# registry: {}\n", registry_comment(minimized.classification));
    comments += fmt::format("# {}: {}\n", to_string(minimized.minimal_result.verdict),
                            comment_text(minimized.minimal_result.message));
    text.insert(text.find('\n') + 1, comments);
    return text;
}

std::string minimize_summary_line(const MinimizedFinding& minimized, const FindingToMinimize& finding) {
    const MinimizeStats& stats = minimized.stats;
    return fmt::format("kvsim minimize: signature={} ({}) kept under {}: {} -> {} events, {} -> {} bytes, {} replays{}",
                       minimized.signature, registry_comment(minimized.classification),
                       finding.variant.name, stats.events_before, stats.events_after,
                       stats.bytes_before, stats.bytes_after, stats.runs,
                       stats.budget_exhausted ? " (budget exhausted)" : "");
}

}  // namespace kvsim
