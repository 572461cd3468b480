#include "cli/trace_and_variant.h"

#include <iostream>

#include "properties/harness/exit_codes.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::cli {

std::optional<TraceAndVariant> load_trace_and_variant(const std::string& trace_path, const std::string& variant_flag,
                                                      int* exit_code) {
    TraceAndVariant loaded;
    try {
        loaded.text = read_trace_file(trace_path);
        loaded.trace = parse_trace(loaded.text, trace_path);
    } catch (const InputError& error) {
        std::cerr << "kvsim: " << error.what() << "\n";
        *exit_code = exit_code::kInputError;
        return std::nullopt;
    }
    loaded.variant_name = variant_flag.empty() ? loaded.trace.run.variant : variant_flag;
    if (loaded.variant_name.empty()) {
        std::cerr << "kvsim: " << trace_path << ": no variant: give --variant or a 'run variant=' line in the trace\n";
        *exit_code = exit_code::kUsage;
        return std::nullopt;
    }
    std::string error;
    const auto variant = resolve_variant(loaded.variant_name, &error);
    if (!variant) {
        std::cerr << "kvsim: --variant: " << error << "\n";
        *exit_code = exit_code::kUsage;
        return std::nullopt;
    }
    loaded.variant = *variant;
    return loaded;
}

}  // namespace kvsim::cli
