#include "bench/bench_fuzz_input.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/swarm/swarm.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

namespace kvsim::bench {
namespace {

// The fuzz target's inputs as the mutator leaves them: swarm traces brought inside the envelope.
std::vector<std::string> fuzz_inputs(int count) {
    std::vector<std::string> texts;
    for (int seed = 1; seed <= count; ++seed) {
        Trace trace = trace_for_seed(static_cast<std::uint64_t>(seed), SwarmOptions{});
        fuzz::normalize(trace);
        trace.run.variant = "v0.30.0";
        texts.push_back(print_trace(trace));
    }
    return texts;
}

void per_input(benchmark::State& state, std::size_t inputs) {
    state.counters["s_per_input"] = benchmark::Counter(
        static_cast<double>(inputs) * static_cast<double>(state.iterations()),
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void parse(benchmark::State& state, int count) {
    const std::vector<std::string> texts = fuzz_inputs(count);
    for (auto _ : state)
        for (const std::string& text : texts) benchmark::DoNotOptimize(parse_trace(text, "<input>").events.size());
    per_input(state, texts.size());
}

void print(benchmark::State& state, int count) {
    std::vector<Trace> traces;
    for (const std::string& text : fuzz_inputs(count)) traces.push_back(parse_trace(text, "<input>"));
    for (auto _ : state)
        for (const Trace& trace : traces) benchmark::DoNotOptimize(print_trace(trace).size());
    per_input(state, traces.size());
}

// LLVMFuzzerCustomMutator's work: parse (or repair), mutate, normalize, print.
void mutate(benchmark::State& state, int count) {
    const std::vector<std::string> texts = fuzz_inputs(count);
    const fuzz::TextOptions options{.max_size = 8192, .variant = "v0.30.0", .byte_mutate = {}, .cache = nullptr};
    std::uint64_t seed = 1;
    for (auto _ : state)
        for (const std::string& text : texts) benchmark::DoNotOptimize(fuzz::mutate_text(text, seed++, options).size());
    per_input(state, texts.size());
}

// LLVMFuzzerTestOneInput's run of an input that is not replayed: every checker on, no text log, no events.
void run(benchmark::State& state, int count) {
    std::vector<Trace> traces;
    for (const std::string& text : fuzz_inputs(count)) traces.push_back(parse_trace(text, "<input>"));
    const Variant variant = require_variant("v0.30.0");
    for (auto _ : state)
        for (const Trace& trace : traces)
            benchmark::DoNotOptimize(run_trace(trace, variant, RunOptions{.text_log = false, .events = false}).steps);
    per_input(state, traces.size());
}

}  // namespace

void register_fuzz_input(int inputs, bool one_iteration) {
    using Piece = void (*)(benchmark::State&, int);
    const std::pair<const char*, Piece> pieces[] = {
        {"fuzz_input_parse", &parse}, {"fuzz_input_print", &print}, {"fuzz_input_mutate", &mutate}, {"fuzz_input_run", &run}};
    for (const auto& [name, piece] : pieces) {
        auto* b = benchmark::RegisterBenchmark(name, piece, inputs)->Unit(benchmark::kMicrosecond);
        if (one_iteration) b->Iterations(1);
    }
}

}  // namespace kvsim::bench
