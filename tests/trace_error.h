#pragma once
// The one-line input error of a trace text, for tests that assert the exact "FILE:LINE: FIELD: MESSAGE".
#include <string>
#include <string_view>

#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::testing {

// The first error of `text` parsed as t.trace, or "" when it parses.
inline std::string error_of(std::string_view text) {
    try {
        (void)parse_trace(text, "t.trace");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace kvsim::testing
