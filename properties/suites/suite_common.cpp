#include "properties/suites/suite_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "properties/findings/classify.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::propgen {
namespace {

std::string file_name_for(const std::string& name) {
    std::string out;
    for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
    return out;
}

void save_artifact(const std::string& name, const rc::detail::TestResult& result) {
    const char* dir = std::getenv("KVSIM_RC_ARTIFACTS");
    if (dir == nullptr || *dir == '\0') return;
    const auto trace = counterexample_trace(result);
    if (!trace) return;
    std::filesystem::create_directories(dir);
    const auto path = std::filesystem::path(dir) / (file_name_for(name) + ".trace");
    std::ofstream(path) << print_trace(*trace);
    std::cout << "property " << name << ": counterexample saved to " << path.string() << "\n";
}

}  // namespace

void report_property(const std::string& name, const RcSettings& settings, const rc::detail::TestResult& result) {
    rc::detail::SuccessResult success;
    if (result.match(success)) {
        std::string known;
        for (const auto& [tags, count] : success.distribution)
            for (const auto& tag : tags) known += fmt::format("{}{} x{}", known.empty() ? "" : ", ", tag, count);
        std::cout << fmt::format("property {}: {} cases passed (seed {}){}\n", name, success.numSuccess, settings.seed,
                                 known.empty() ? "" : "; classified: " + known);
        SUCCEED();
        return;
    }
    save_artifact(name, result);
    // Printed raw (Catch2 would re-wrap an INFO message at 80 columns and break the trace text).
    std::cout << fmt::format(
        "\n==== property {} FAILED ====\n{}\nRapidCheck settings: KVSIM_RC_SEED={} KVSIM_RC_CASES={} "
        "KVSIM_RC_MAX_SIZE={}\n==== end of {} ====\n",
        name, result_text(result), settings.seed, settings.cases, settings.max_size, name);
    FAIL("property failed: " << name << " (counterexample trace and reproduction command printed above)");
}

void check_family_property(Family family, const std::string& variant_name, int default_cases) {
    const Variant variant = require_variant(variant_name);
    const std::string what = family == Family::other ? std::string("liveness and verdict pass")
                                                     : std::string(to_string(family));
    require_property(fmt::format("{} under {}", what, variant_name), default_cases, [&] {
        const Trace trace = *gen_trace();
        const RunResult r = run_trace(trace, variant);
        if (r.internal_error)
            RC_FAIL(failure_report(trace, variant_name, r, "kvsim internal error: a model precondition failed"));
        if (r.verdict == Verdict::rejected)
            RC_FAIL(failure_report(trace, variant_name, r, "the generators made a configuration upstream rejects"));
        std::vector<std::string> bad;
        for (const auto& f : findings(r))
            if (family == Family::other || family_of(f) == family) bad.push_back(f);
        if (bad.empty()) return;
        // A known finding excuses the run's own signature and the other signatures its causes list (a cause
        // seen from another side in the same run), nothing else it reported.
        if (const Classification c = classify(builtin_registry(), trace, variant, r); c.known()) {
            std::erase(bad, r.signature);
            std::erase_if(bad, [&](const std::string& f) {
                return std::any_of(c.causes.begin(), c.causes.end(),
                                   [&](const KnownEntry* e) { return e->signature_named(f) != nullptr; });
            });
            if (bad.empty()) {
                RC_TAG(c.cause_set());
                return;
            }
        }
        std::string list;
        for (const auto& f : bad) list += (list.empty() ? "" : ", ") + f;
        RC_FAIL(failure_report(trace, variant_name, r, fmt::format("{} property violated: {}", what, list)));
    });
}

}  // namespace kvsim::propgen
