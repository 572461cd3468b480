#pragma once
// The fuzz target's per-input work, piece by piece (bench/README.md, Performance): parsing an input,
// printing a trace, the custom mutator's whole call, and one run; each per input, over the same
// normalized swarm traces, so scripts/bench can show what share parsing and printing take.
#include <benchmark/benchmark.h>

namespace kvsim::bench {

void register_fuzz_input(int inputs, bool one_iteration);

}  // namespace kvsim::bench
