#pragma once
// --registry FILE, shared by the subcommands that classify findings.
#include <string>

#include <vector>

#include "properties/findings/registry.h"
#include "properties/harness/run_trace.h"

namespace kvsim::cli {

// The built-in registry for an empty path, else the file's, kept for the process. On a bad file
// prints its one-line error ("FILE:LINE: FIELD: MESSAGE"), sets *failure to the input-error exit
// code and returns nullptr.
const Registry* registry_from_option(const std::string& path, int* failure);

// The cause set of a run, as expect lines state it (classify.h expectation_causes), from `registry`.
std::vector<std::string> causes_of_run(const Registry& registry, const Trace& trace, const Variant& variant,
                                       const RunResult& result);

}  // namespace kvsim::cli
