#pragma once
// How a run is reported: the one verdict line every run ends with, the command that reproduces
// it, and the whole result as JSON (`kvsim run --json`).
#include <string>
#include <string_view>

#include "properties/harness/expectation_check.h"
#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"

namespace kvsim {

std::string repro_command(std::string_view trace_path, std::string_view variant);

// verdict, trace, variant, steps, digest, signature and message when failing, the expectation
// check, and the command that reproduces the run.
std::string verdict_line(const RunResult& result, std::string_view trace_path, std::string_view variant,
                         const ExpectationCheck& expectation);

// A rejected run (Verdict::rejected) as one error line: "FILE:LINE: FIELD: upstream rejects ... (rule ...)".
std::string rejection_line(const RunResult& result, std::string_view trace_path);

// run_result_json plus the trace, its connector stack ([{kind, role}] in trace order), the
// variant, the expectation check ({status, expected: {verdict, signature} or null}) and the
// repro command.
Json run_json(const Trace& trace, const RunResult& result, std::string_view trace_path, std::string_view variant,
              const ExpectationCheck& expectation);

}  // namespace kvsim
