#pragma once
#include <optional>
#include <string>

#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"

namespace kvsim::cli {

// Whether the trace's `expect` line for a variant holds for a run.
struct ExpectationCheck {
    enum class Status { met, unmet, none };
    Status status = Status::none;
    std::optional<Expectation> expected;  // the trace's expect line for the variant, if any
};
ExpectationCheck check_expectation(const Trace& trace, const RunResult& result, const std::string& variant);
std::string_view to_string(ExpectationCheck::Status status);

// The one line every run ends with: verdict, trace, variant, steps, digest,
// signature and message when failing, and the command that reproduces it.
// expectation: "met", "UNMET(expected ...)" or "none", from expectation_note().
std::string verdict_line(const RunResult& result, const std::string& trace_path, const std::string& variant,
                         const std::string& expectation);
// check_expectation as the verdict line shows it.
std::string expectation_note(const Trace& trace, const RunResult& result, const std::string& variant);
std::string repro_command(const std::string& trace_path, const std::string& variant);

// `kvsim run --json`: run_result_json plus the trace, the variant, the expectation check
// ({status, expected: {verdict, signature} or null}) and the repro command.
Json run_json(const RunResult& result, const std::string& trace_path, const std::string& variant,
              const ExpectationCheck& expectation);

}  // namespace kvsim::cli
