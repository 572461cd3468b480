#pragma once
// The schedules the benchmarks replay: traces built as text, so a benchmark's input is a trace a
// person can run with `kvsim run` (`kvsim_bench --print-trace NAME`).
#include <string>

namespace kvsim::bench {

// `running` requests arrive at step 0 and all run together for `decode_tokens` steps: one
// request-step per request per step. The pool, batch and running limits never bind.
std::string concurrency_trace(int running, int decode_tokens);
// The number of request-steps a run of concurrency_trace(running, decode_tokens) makes.
long long concurrency_request_steps(int running, int decode_tokens);

// One schedule whatever the pool size: `requests` requests arrive one per step and decode for
// `decode_tokens` tokens, so about decode_tokens run at once; `num_blocks` (>= 1,024) only
// changes how many blocks sit idle.
std::string pool_trace(int num_blocks, int requests, int decode_tokens);
// pool_trace's engine without requests: a run of it is the pool's setup (engine, checkers) alone.
std::string pool_setup_trace(int num_blocks, int requests, int decode_tokens);

}  // namespace kvsim::bench
