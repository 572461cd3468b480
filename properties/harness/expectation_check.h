#pragma once
// Whether a run meets the trace's `expect` line for the variant it ran under.
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "properties/harness/run_trace.h"
#include "sim/common/enum_names.h"
#include "sim/trace/trace.h"

namespace kvsim {

enum class ExpectationStatus { none, met, unmet };
inline constexpr EnumNames<ExpectationStatus, 3> kExpectationStatusNames = {{
    {ExpectationStatus::none, "none"},
    {ExpectationStatus::met, "met"},
    {ExpectationStatus::unmet, "unmet"},
}};
inline std::string_view to_string(ExpectationStatus status) { return enum_name(kExpectationStatusNames, status); }

struct ExpectationCheck {
    ExpectationStatus status = ExpectationStatus::none;
    std::optional<Expectation> expected;  // the trace's expect line for the variant, if any
    // The line names causes: the run's cause set as the registry's classifier found it ("" for none).
    std::optional<std::string> got_causes;
};

// The first expect line for `variant` decides: met when the verdict matches (an internal error
// never does) and the line's signature, if it names one, is the run's. `causes` is the run's cause set
// (classify.h, one floor up): a line that names causes is met only when they are these, and is unmet
// when nobody classified the run (nullptr).
ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, std::string_view variant,
                                   const std::vector<std::string>* causes = nullptr);
// The causes an expect line for `variant` names (empty: none, or no line).
const std::vector<std::string>& expected_causes(const Trace& trace, std::string_view variant);

// "met", "none" or "UNMET(expected <verdict>[ <signature>])", as the verdict line prints it.
std::string to_string(const ExpectationCheck& check);

}  // namespace kvsim
