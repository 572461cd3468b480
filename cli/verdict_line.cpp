#include "cli/verdict_line.h"

#include <fmt/format.h>

namespace kvsim::cli {

std::string repro_command(const std::string& trace_path, const std::string& variant) {
    return fmt::format("kvsim run {} --variant {}", trace_path, variant);
}

std::string_view to_string(ExpectationCheck::Status status) {
    switch (status) {
        case ExpectationCheck::Status::met: return "met";
        case ExpectationCheck::Status::unmet: return "unmet";
        case ExpectationCheck::Status::none: return "none";
    }
    return "?";
}

ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, const std::string& variant) {
    for (const auto& e : trace.expectations) {
        if (e.variant != variant) continue;
        const bool verdict_ok = !result.internal_error && e.verdict == result.verdict;
        const bool signature_ok = e.signature.empty() || e.signature == result.signature;
        return {verdict_ok && signature_ok ? ExpectationCheck::Status::met : ExpectationCheck::Status::unmet, e};
    }
    return {};
}

std::string expectation_note(const Trace& trace, const RunResult& result, const std::string& variant) {
    const ExpectationCheck check = check_expectation(trace, result, variant);
    if (check.status != ExpectationCheck::Status::unmet) return std::string(to_string(check.status));
    const Expectation& e = *check.expected;
    return fmt::format("UNMET(expected {}{}{})", to_string(e.verdict), e.signature.empty() ? "" : " ", e.signature);
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

Json run_json(const RunResult& result, const std::string& trace_path, const std::string& variant,
              const ExpectationCheck& expectation) {
    Json out = {{"trace", trace_path}, {"variant", variant}};
    out.update(run_result_json(result));
    Json expected = nullptr;
    if (expectation.expected)
        expected = {{"verdict", to_string(expectation.expected->verdict)},
                    {"signature", expectation.expected->signature.empty() ? Json(nullptr)
                                                                          : Json(expectation.expected->signature)}};
    out["expect"] = {{"status", to_string(expectation.status)}, {"expected", expected}};
    out["repro"] = repro_command(trace_path, variant);
    return out;
}

}  // namespace kvsim::cli
