#include "bench/bench_traces.h"

#include <fmt/format.h>

namespace kvsim::bench {
namespace {

constexpr int kBlockSize = 16;
constexpr int kPromptLen = 16;  // one full block per prompt, unique per request (no prefix hits)

// max_model_len holds one request whole (its prompt, its decode tokens and a block to spare), which every
// pool here holds: upstream's KV cache check (sim/trace/config_rules.h) refuses a pool that cannot.
std::string header(int num_blocks, int max_running, int max_batched, int max_steps, int decode_tokens) {
    return fmt::format(
        "kvsim-trace 1\n"
        "engine block_size={} num_blocks={} max_batched_tokens={} max_running={} max_model_len={}\n"
        "run seed=1 max_steps={} variant=v0.30.0\n"
        "connector store role=kv_both\n",
        kBlockSize, num_blocks, max_batched, max_running, kPromptLen + decode_tokens + kBlockSize, max_steps);
}

std::string request_lines(int requests, int decode_tokens, int arrival_gap) {
    std::string out;
    for (int r = 0; r < requests; ++r) out += fmt::format("segment p{} len={}\n", r, kPromptLen);
    for (int r = 0; r < requests; ++r)
        out += fmt::format("@{} arrive r{} prompt=p{} max_tokens={}\n", r * arrival_gap, r, r, decode_tokens);
    return out;
}

int blocks_per_request(int decode_tokens) { return (kPromptLen + decode_tokens + kBlockSize - 1) / kBlockSize + 1; }

}  // namespace

std::string concurrency_trace(int running, int decode_tokens) {
    const int num_blocks = running * blocks_per_request(decode_tokens) + 1;
    return header(num_blocks, running, running * kPromptLen, 10 * decode_tokens + 100, decode_tokens) +
           request_lines(running, decode_tokens, 0);
}

long long concurrency_request_steps(int running, int decode_tokens) {
    return static_cast<long long>(running) * decode_tokens;
}

std::string pool_trace(int num_blocks, int requests, int decode_tokens) {
    return header(num_blocks, requests, requests * kPromptLen, 10 * (requests + decode_tokens) + 100, decode_tokens) +
           request_lines(requests, decode_tokens, 1);
}

std::string pool_setup_trace(int num_blocks, int requests, int decode_tokens) {
    return header(num_blocks, requests, requests * kPromptLen, 10 * (requests + decode_tokens) + 100, decode_tokens);
}

}  // namespace kvsim::bench
