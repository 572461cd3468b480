#include "properties/harness/expectation_check.h"

#include <fmt/format.h>

namespace kvsim {

namespace {

std::string joined(const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : "+") + id;
    return out;
}

}  // namespace

ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, std::string_view variant,
                                   const std::vector<std::string>* causes) {
    for (const auto& e : trace.expectations) {
        if (e.variant != variant) continue;
        const bool verdict_ok = !result.internal_error && e.verdict == result.verdict;
        const bool signature_ok = e.signature.empty() || e.signature == result.signature;
        ExpectationCheck check{.status = ExpectationStatus::unmet, .expected = e, .got_causes = std::nullopt};
        bool causes_ok = true;
        if (!e.causes.empty()) {
            check.got_causes = causes != nullptr ? joined(*causes) : std::string("(not classified)");
            causes_ok = causes != nullptr && *causes == e.causes;
        }
        if (verdict_ok && signature_ok && causes_ok) check.status = ExpectationStatus::met;
        return check;
    }
    return {};
}

const std::vector<std::string>& expected_causes(const Trace& trace, std::string_view variant) {
    static const std::vector<std::string> none;
    for (const auto& e : trace.expectations)
        if (e.variant == variant) return e.causes;
    return none;
}

std::string to_string(const ExpectationCheck& check) {
    if (check.status != ExpectationStatus::unmet) return std::string(to_string(check.status));
    const Expectation& e = *check.expected;
    std::string out = fmt::format("UNMET(expected {}{}{}", to_string(e.verdict), e.signature.empty() ? "" : " ", e.signature);
    if (!e.causes.empty()) out += fmt::format(" causes={}, got causes={}", joined(e.causes), *check.got_causes);
    return out + ")";
}

}  // namespace kvsim
