#include "properties/harness/expectation_check.h"

#include <fmt/format.h>

namespace kvsim {

ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, std::string_view variant) {
    for (const auto& e : trace.expectations) {
        if (e.variant != variant) continue;
        const bool verdict_ok = !result.internal_error && e.verdict == result.verdict;
        const bool signature_ok = e.signature.empty() || e.signature == result.signature;
        return {.status = verdict_ok && signature_ok ? ExpectationStatus::met : ExpectationStatus::unmet, .expected = e};
    }
    return {};
}

std::string to_string(const ExpectationCheck& check) {
    if (check.status != ExpectationStatus::unmet) return std::string(to_string(check.status));
    const Expectation& e = *check.expected;
    return fmt::format("UNMET(expected {}{}{})", to_string(e.verdict), e.signature.empty() ? "" : " ", e.signature);
}

}  // namespace kvsim
