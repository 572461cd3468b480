#pragma once
// Canonical text of a trace (format v1, see README.md in this directory): header, engine,
// run, connectors, workers, segments, store, expects, events; one line each, keys in table order, single
// spaces, no comments, ending with a newline. parse_trace(print_trace(t)) == t for every
// trace validate_trace() accepts, and printing is a fixed point after one parse.
#include "sim/trace/trace.h"

#include <cstddef>
#include <string>

namespace kvsim {

std::string print_trace(const Trace& trace);

// Whether print_trace writes the workers line: when the trace has a p2p or store connector
// (whose workers it configures), or when the line differs from the defaults.
bool prints_workers(const Trace& trace);

// One line each, without the newline.
std::string format_header(const Trace& trace);
std::string format_line(const EngineConfig& engine);
std::string format_line(const RunConfig& run);
std::string format_line(const ConnectorSpec& connector);
std::string format_line(const MultiConnectorSpec& multi);
std::string format_line(const WorkerConfig& workers);
std::string format_line(const StoreEntry& entry);
std::string format_line(const Segment& segment);
std::string format_line(const Expectation& expectation);
std::string format_line(const Event& event);
std::string format_line(const StepCheck& check);

// At least format_line(x).size(), without formatting: the keyword, every key and every number or
// flag of the line fit kPrintedKeysBound bytes, and the rest are its names and token lists.
// validate_trace formats a line only when this exceeds kMaxLineBytes.
inline constexpr std::size_t kPrintedKeysBound = 256;
std::size_t printed_size_bound(const StoreEntry& entry);
std::size_t printed_size_bound(const Segment& segment);
std::size_t printed_size_bound(const Event& event);

}  // namespace kvsim
