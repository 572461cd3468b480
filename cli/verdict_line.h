#pragma once
#include <string>

#include "properties/harness/run_trace.h"

namespace kvsim::cli {

// The one line every run ends with: verdict, trace, variant, steps, digest,
// signature and message when failing, and the command that reproduces it.
// expectation: "met", "UNMET(expected ...)" or "none", from expectation_note().
std::string verdict_line(const RunResult& result, const std::string& trace_path, const std::string& variant,
                         const std::string& expectation);
// Whether the trace's `expect` line for `variant` holds for this result.
std::string expectation_note(const Trace& trace, const RunResult& result, const std::string& variant);
std::string repro_command(const std::string& trace_path, const std::string& variant);

}  // namespace kvsim::cli
