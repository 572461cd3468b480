#pragma once
// Text -> Trace (format v1, see README.md in this directory). Every malformed input is an
// InputError naming file, line and field; no input crashes the parser or reaches UB, so
// it is safe to run under a fuzzer.
#include "sim/trace/input_error.h"
#include "sim/trace/trace.h"

#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

// Throws InputError.
Trace parse_trace(std::string_view text, std::string_view filename);
// The bytes of a trace file, read once from start to end (a pipe or FIFO works; "-" is standard
// input), at most a little past kMaxTraceBytes, which parse_trace then rejects. Throws InputError
// (line 0) on a directory or an unreadable file.
std::string read_trace_file(const std::string& path);
// parse_trace(read_trace_file(path), path). Throws InputError; an unreadable file is reported with line 0.
Trace parse_trace_file(const std::string& path);

// Every rule a parsed trace obeys: value ranges, limits, keys of other kinds left at their
// defaults, unique names and ids, defined segments, prompt and store prefix lengths, event
// order, the connectors that requests, store lines and faults need, fault ranks, printable
// line lengths. parse_trace runs it on
// its result; call it on a Trace built in memory (generators, mutators) before printing
// it. A trace it accepts round-trips: parse_trace(print_trace(t)) == t. Throws InputError.
void validate_trace(const Trace& trace, std::string_view filename = "<trace>", const TraceLines* lines = nullptr);

}  // namespace kvsim
