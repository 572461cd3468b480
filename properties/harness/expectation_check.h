#pragma once
// Whether a run meets the trace's `expect` line for the variant it ran under.
#include <optional>
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
};

// The first expect line for `variant` decides: met when the verdict matches (an internal error
// never does) and the line's signature, if it names one, is the run's.
ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, std::string_view variant);

// "met", "none" or "UNMET(expected <verdict>[ <signature>])", as the verdict line prints it.
std::string to_string(const ExpectationCheck& check);

}  // namespace kvsim
