#include "cli/verdict_line.h"

#include <fmt/format.h>

namespace kvsim::cli {

std::string repro_command(const std::string& trace_path, const std::string& variant) {
    return fmt::format("kvsim run {} --variant {}", trace_path, variant);
}

std::string expectation_note(const Trace& trace, const RunResult& result, const std::string& variant) {
    for (const auto& e : trace.expectations) {
        if (e.variant != variant) continue;
        const bool verdict_ok = !result.internal_error && e.verdict == result.verdict;
        const bool signature_ok = e.signature.empty() || e.signature == result.signature;
        if (verdict_ok && signature_ok) return "met";
        return fmt::format("UNMET(expected {}{}{})", to_string(e.verdict), e.signature.empty() ? "" : " ", e.signature);
    }
    return "none";
}

std::string verdict_line(const RunResult& result, const std::string& trace_path, const std::string& variant,
                         const std::string& expectation) {
    const std::string verdict = result.internal_error ? "internal-error" : std::string(to_string(result.verdict));
    std::string line = fmt::format("{} {} variant={} steps={} digest={:016x}", verdict, trace_path, variant,
                                   result.steps, result.digest);
    if (!result.signature.empty()) line += fmt::format(" signature={}", result.signature);
    line += fmt::format(" expect={}", expectation);
    if (!result.message.empty()) line += fmt::format(" -- {}", result.message);
    line += fmt::format(" | repro: {}", repro_command(trace_path, variant));
    return line;
}

}  // namespace kvsim::cli
