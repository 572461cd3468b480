#pragma once
// Loading what `kvsim run` and `kvsim minimize` start from: a trace file (read once; "-" is standard
// input) and the variant to run it under (the --variant flag, else the trace's `run variant=` line).
#include <optional>
#include <string>

#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim::cli {

struct TraceAndVariant {
    std::string text;  // the trace file's bytes, read once: the run and its views come from these
    Trace trace;
    std::string variant_name;
    Variant variant;
};

// On failure prints one line to stderr and sets *exit_code (65 input error, 64 usage).
std::optional<TraceAndVariant> load_trace_and_variant(const std::string& trace_path, const std::string& variant_flag,
                                                      int* exit_code);

}  // namespace kvsim::cli
