// kvsim_fuzz_parser: the trace parser alone (fuzz/README.md).
//
// Input: arbitrary bytes. parse_trace must return a trace or throw InputError: any other exception,
// a sanitizer report, a leak or a hang is a finding. A trace it returns must also hold the format's
// promises (sim/trace/README.md, "Canonical form and round trip"): validate_trace accepts it,
// parse(print(t)) == t, and printing is a fixed point. A broken promise prints
//   kvsim-finding: verdict=parser signature=parser:<which> variant=-
// and aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace {

[[noreturn]] void report(const char* which, const std::string& detail) {
    std::fprintf(stderr, "kvsim-finding: verdict=parser signature=parser:%s variant=-\n", which);
    std::fprintf(stderr, "kvsim-message: %s\n", detail.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    kvsim::Trace trace;
    try {
        trace = kvsim::parse_trace(text, "<input>");
    } catch (const kvsim::InputError& error) {
        // The error's one line names a file and a line: it must be one line.
        if (std::string_view(error.what()).find('\n') != std::string_view::npos)
            report("multiline_error", error.what());
        return 0;
    }
    try {
        kvsim::validate_trace(trace, "<parsed>");
    } catch (const kvsim::InputError& error) {
        report("parsed_trace_invalid", error.what());
    }
    const std::string printed = kvsim::print_trace(trace);
    kvsim::Trace again;
    try {
        again = kvsim::parse_trace(printed, "<printed>");
    } catch (const kvsim::InputError& error) {
        report("printed_trace_rejected", error.what());
    }
    if (!(again == trace)) report("round_trip_differs", "parse(print(t)) != t");
    if (kvsim::print_trace(again) != printed) report("print_not_fixed_point", "print(parse(print(t))) != print(t)");
    return 0;
}
