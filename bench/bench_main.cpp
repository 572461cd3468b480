// kvsim_bench: Google Benchmark over the model and the search (bench/README.md, Performance).
//   kvsim_bench [--short] [--print-trace concurrency:N|pool:BLOCKS] [--benchmark_* flags]
// --short registers small sizes with one iteration each: it checks that every benchmark runs and
// passes, never that it is fast. scripts/bench turns the JSON output into the side-by-side table.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_fuzz_input.h"
#include "bench/bench_traces.h"
#include "fuzz/swarm/explore.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim::bench {
namespace {

struct Sizes {
    std::vector<int> running;
    int concurrency_decode = 0;
    std::vector<int> pool_blocks;
    int pool_requests = 0;
    int pool_decode = 0;
    int explore_seeds = 0;  // seeds per iteration
    int fuzz_inputs = 0;    // traces per iteration of the fuzz_input benchmarks
    bool one_iteration = false;
};

Sizes full_sizes() { return {{64, 256, 1024, 4096}, 50, {1'000, 10'000, 100'000, 1'000'000}, 256, 64, 20, 50, false}; }
Sizes short_sizes() { return {{64, 256}, 3, {1'000, 10'000}, 8, 3, 2, 2, true}; }

// Every checker on; the text log off (nobody reads it), unless the benchmark is about it.
RunOptions bench_run_options(bool text_log) { return RunOptions{.text_log = text_log}; }

// Runs `trace` once per iteration; a run that does not pass is an error, not a number.
bool run_each_iteration(benchmark::State& state, const Trace& trace, const Variant& variant, int& steps,
                        bool text_log = false) {
    for (auto _ : state) {
        const RunResult result = run_trace(trace, variant, bench_run_options(text_log));
        if (result.internal_error || result.verdict != Verdict::pass) {
            state.SkipWithError(("the benchmark trace did not pass: " + result.message).c_str());
            return false;
        }
        steps = result.steps;
    }
    return true;
}

void concurrency(benchmark::State& state, int decode, bool text_log) {
    const int running = static_cast<int>(state.range(0));
    const Trace trace = parse_trace(concurrency_trace(running, decode), "<concurrency>");
    const Variant variant = require_variant(trace.run.variant);
    int steps = 0;
    if (!run_each_iteration(state, trace, variant, steps, text_log)) return;
    const auto request_steps = static_cast<double>(concurrency_request_steps(running, decode));
    state.counters["request_steps_per_s"] =
        benchmark::Counter(request_steps * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["steps"] = steps;
}

// The pool benchmarks' trace for the pool size in state.range(0): the schedule, or its engine alone.
using PoolTrace = std::string (*)(int num_blocks, int requests, int decode_tokens);

// Runs the pool trace `make` builds once per iteration; each run's time per step (a schedule) or per
// run (the setup alone), with the steps.
void pool_runs(benchmark::State& state, PoolTrace make, int requests, int decode, bool per_step) {
    const Trace trace = parse_trace(make(static_cast<int>(state.range(0)), requests, decode), "<pool>");
    const Variant variant = require_variant(trace.run.variant);
    int steps = 0;
    if (!run_each_iteration(state, trace, variant, steps)) return;
    state.counters[per_step ? "s_per_step" : "s_per_run"] = benchmark::Counter(
        static_cast<double>(per_step ? steps : 1) * static_cast<double>(state.iterations()),
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["steps"] = steps;
}

void pool(benchmark::State& state, int requests, int decode) { pool_runs(state, &pool_trace, requests, decode, true); }

// A run of pool_setup_trace: what a pool of BLOCKS costs a run before its first step.
void pool_setup(benchmark::State& state, int requests, int decode) {
    pool_runs(state, &pool_setup_trace, requests, decode, false);
}

// `kvsim explore --variant v0.30.0` in process: generated traces per second, failing ones included.
void explore_traces(benchmark::State& state, int seeds) {
    ExploreConfig config;
    config.variant = require_variant("v0.30.0");
    std::uint64_t seed = 1;
    for (auto _ : state)
        for (int i = 0; i < seeds; ++i) benchmark::DoNotOptimize(explore_seed(seed++, config).result.steps);
    state.counters["traces_per_s"] = benchmark::Counter(
        static_cast<double>(seeds) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void register_all(const Sizes& sizes) {
    auto shape = [&](benchmark::internal::Benchmark* b) {
        b->Unit(benchmark::kMillisecond);  // CPU time: the machine may be shared
        if (sizes.one_iteration) b->Iterations(1);
    };
    shape(benchmark::RegisterBenchmark("explore", explore_traces, sizes.explore_seeds));
    auto* c = benchmark::RegisterBenchmark("concurrency", concurrency, sizes.concurrency_decode, false);
    for (int n : sizes.running) c->Arg(n);
    shape(c);
    shape(benchmark::RegisterBenchmark("concurrency_text_log", concurrency, sizes.concurrency_decode, true)
              ->Arg(sizes.running[1]));
    auto* p = benchmark::RegisterBenchmark("pool", pool, sizes.pool_requests, sizes.pool_decode);
    for (int b : sizes.pool_blocks) p->Arg(b);
    shape(p);
    auto* setup = benchmark::RegisterBenchmark("pool_setup", pool_setup, sizes.pool_requests, sizes.pool_decode);
    for (int b : sizes.pool_blocks) setup->Arg(b);
    shape(setup);
    register_fuzz_input(sizes.fuzz_inputs, sizes.one_iteration);
}

// "concurrency:N" or "pool:BLOCKS" -> the trace text of that benchmark (full sizes).
int print_trace(std::string_view which) {
    const Sizes sizes = full_sizes();
    const auto colon = which.find(':');
    const std::string kind(which.substr(0, colon));
    const int n = colon == std::string_view::npos ? 0 : std::stoi(std::string(which.substr(colon + 1)));
    if (kind == "concurrency" && n > 0) std::cout << concurrency_trace(n, sizes.concurrency_decode);
    else if (kind == "pool" && n > 0) std::cout << pool_trace(n, sizes.pool_requests, sizes.pool_decode);
    else {
        std::cerr << "kvsim_bench: --print-trace wants concurrency:N or pool:BLOCKS, not '" << which << "'\n";
        return 64;
    }
    return 0;
}

}  // namespace
}  // namespace kvsim::bench

int main(int argc, char** argv) {
    std::vector<char*> args;
    bool short_mode = false;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--short") short_mode = true;
        else if (arg == "--print-trace" && i + 1 < argc) return kvsim::bench::print_trace(argv[++i]);
        else args.push_back(argv[i]);
    }
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 64;
    kvsim::bench::register_all(short_mode ? kvsim::bench::short_sizes() : kvsim::bench::full_sizes());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
