#pragma once
// Exit codes (README.md, Verdicts and exit codes); 64/65 follow sysexits.h (EX_USAGE, EX_DATAERR), 70 = EX_SOFTWARE,
// 71 = EX_OSERR, 74 = EX_IOERR.
#include "sim/trace/trace.h"

namespace kvsim::exit_code {
inline constexpr int kPass = 0;
inline constexpr int kViolation = 1;
inline constexpr int kCrash = 2;
inline constexpr int kLiveness = 3;
inline constexpr int kNondeterminism = 4;
inline constexpr int kMismatch = 5;  // a step check of the trace read another value than it states
inline constexpr int kUnmetExpectation = 6;  // the trace's expect line for the variant is not met (run, matrix)
inline constexpr int kRejected = 78;  // EX_CONFIG: upstream refuses the configuration (sim/trace/config_rules.h)
inline constexpr int kUsage = 64;
inline constexpr int kInputError = 65;
inline constexpr int kInternalError = 70;  // a bug in kvsim itself, not in the modelled code
inline constexpr int kOutOfMemory = 71;  // EX_OSERR: std::bad_alloc reached main (one line on stderr)
inline constexpr int kOutputError = 74;  // EX_IOERR: standard output or an output file could not be written

constexpr int of(Verdict v) {
    switch (v) {
        case Verdict::pass: return kPass;
        case Verdict::violation: return kViolation;
        case Verdict::crash: return kCrash;
        case Verdict::liveness: return kLiveness;
        case Verdict::nondeterminism: return kNondeterminism;
        case Verdict::mismatch: return kMismatch;
        case Verdict::rejected: return kRejected;
    }
    return kInternalError;
}
}  // namespace kvsim::exit_code
