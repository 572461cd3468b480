// kvsim_fuzz_trace: the trace fuzzer (fuzz/README.md).
//
// Input: trace text. It runs under the campaign's variant with every checker on (and the
// determinism replay on every Nth input: KVSIM_FUZZ_DETERMINISM=N, default 16, 0 = never), for at
// most its step budget; it stops as a hang when it makes no progress for its hang budget, or
// computes nothing new for its idle budget once its faults have settled, and the
// checkers sweep all blocks every budget::kSweepPeriod steps and at the end, judging in between
// what each step touched (fuzz/mutator/trace_mutator.h). A NEW hang of the idle budget is run again
// on the hang budget alone; a finding still NEW is run again as `kvsim run` runs it (a sweep every
// step, no hang or idle budget), and that run decides what is reported (judge_input,
// fuzz/judge/input_judge.h). A failing
// run is classified against the registry of known findings (properties/findings/known_findings.txt):
// a KNOWN finding is counted and the fuzzing goes on; a NEW one (or a kvsim internal error) prints
//   kvsim-finding: verdict=<v> signature=<sig> variant=<V>
//   kvsim-message: <the run's one-line message>
// to stderr and aborts, so libFuzzer saves the input (trace text) as the crash artifact.
// -kvsim_abort_on_any=1 (or KVSIM_FUZZ_ABORT_ON_ANY=1) aborts on known findings too (the canary),
// with a third line `kvsim-known: <id>`. -kvsim_stop_on=SIG (or KVSIM_FUZZ_STOP_ON=SIG) aborts on the
// first finding whose signature starts with SIG, known or not (scripts/bench's detection times).
// Counts (executions, passes, ignored inputs, repeated inputs, known findings by id, runs under
// each scheduling mode as the engine resolves it, texts found parsed in the trace cache) are printed
// at exit as one line
//   kvsim-fuzz-stats: {"variant":...,"executions":N,"passed":N,"ignored":N,"repeats":N,"known":{"id":N,...},
//                      "async_scheduling":{"off":N,"on":N},"trace_cache":{"hits":N,"misses":N},
//                      "idle_rerun":N,"new_rerun":N,"variant_reruns":{"made":N,"shared":N}}
// and, with KVSIM_FUZZ_STATS=PREFIX, also kept in PREFIX.<pid>.json (rewritten every 500
// executions and at exit, so that a process stopped by a signal leaves its counts too).
// Input that does not parse, or whose work is beyond the budget (fuzz/mutator/trace_mutator.h), is
// ignored. An input the process has already run (the mutator printed the same text again, about one
// in twenty) is not run again: the model is deterministic, so it would give the same schedule. The
// structure-aware mutator and crossover (fuzz/mutator) produce only valid traces.
//
// The variant comes from -kvsim_variant=V on the command line (removed before libFuzzer parses
// its flags, and exported as KVSIM_FUZZ_VARIANT for fork-mode children) or from the environment
// variable KVSIM_FUZZ_VARIANT; default: the variant table's default preset. The input's own `run variant=` line is overridden.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "fuzz/judge/input_judge.h"
#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/search_options.h"
#include "properties/findings/classify.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/scheduling_mode.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

constexpr std::string_view kVariantFlag = "-kvsim_variant=";
constexpr std::string_view kAbortOnAnyFlag = "-kvsim_abort_on_any=";
constexpr std::string_view kStopOnFlag = "-kvsim_stop_on=";
constexpr std::uint64_t kStatsEvery = 500;

// Every 16th input: a replayed input runs twice and formats both text logs, the others run once.
constexpr std::uint64_t kDeterminismEvery = 16;

struct Campaign {
    std::string variant_name;
    kvsim::Variant variant;
    std::uint64_t determinism_every = kDeterminismEvery;  // replay every Nth input twice; 0: never
    std::uint64_t inputs = 0;
    bool abort_on_any = false;
    std::string stop_on;     // non-empty: abort on a finding whose signature starts with it
    std::string stats_path;  // empty: counts only printed at exit
    std::uint64_t executions = 0, passed = 0, ignored = 0;
    std::uint64_t repeats = 0;  // inputs the process had already run (TraceCache::ran_before), not run again
    std::map<std::string, std::uint64_t> known;  // registry id -> runs
    std::uint64_t runs_async_off = 0, runs_async_on = 0;  // inputs run, by resolved async_scheduling
    kvsim::fuzz::TraceCache traces;  // the texts parsed so far: the mutator's parents and outputs
    kvsim::EventCategories events_read = kvsim::builtin_registry().events_read();  // kept by the muted runs
    std::uint64_t idle_rerun = 0;  // NEW hangs the idle budget stopped, run again on the hang budget alone
    std::uint64_t new_rerun = 0;   // NEW findings of the search's options, run again as kvsim run does
    kvsim::VariantReruns variant_reruns;  // the classifier's counterfactual runs: made, shared, steps
    std::int64_t steps_passed = 0, steps_known = 0;  // engine steps of the judge's runs, by the input's verdict
};

// KVSIM_FUZZ_DETERMINISM=N: replay every Nth input twice (0: never); exits 64 on a value that is not a count.
std::uint64_t determinism_every() {
    const char* text = std::getenv("KVSIM_FUZZ_DETERMINISM");
    if (text == nullptr || *text == '\0') return kDeterminismEvery;
    char* end = nullptr;
    const std::uint64_t every = std::strtoull(text, &end, 10);
    if (*end != '\0' || *text == '-') {
        std::fprintf(stderr, "kvsim_fuzz_trace: KVSIM_FUZZ_DETERMINISM='%s' is not a count (N: every Nth input, 0: never)\n",
                     text);
        std::exit(64);
    }
    return every;
}

Campaign* g_campaign = nullptr;

std::string stats_json() {
    nlohmann::json known = nlohmann::json::object();
    for (const auto& [id, n] : g_campaign->known) known[id] = n;
    return nlohmann::json{{"variant", g_campaign->variant_name}, {"pid", ::getpid()},
                          {"executions", g_campaign->executions}, {"passed", g_campaign->passed},
                          {"ignored", g_campaign->ignored}, {"repeats", g_campaign->repeats}, {"known", known},
                          {"async_scheduling", {{"off", g_campaign->runs_async_off}, {"on", g_campaign->runs_async_on}}},
                          {"trace_cache", {{"hits", g_campaign->traces.hits()}, {"misses", g_campaign->traces.misses()}}},
                          {"idle_rerun", g_campaign->idle_rerun},
                          {"new_rerun", g_campaign->new_rerun},
                          {"variant_reruns", {{"made", g_campaign->variant_reruns.made},
                                              {"shared", g_campaign->variant_reruns.shared}}},
                          {"steps", {{"passed", g_campaign->steps_passed}, {"known", g_campaign->steps_known},
                                     {"variant_reruns", g_campaign->variant_reruns.steps}}}}
        .dump();
}

void write_stats_file() {
    if (g_campaign->stats_path.empty() || g_campaign->executions == 0) return;
    const std::string tmp = g_campaign->stats_path + ".tmp";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fprintf(f, "%s\n", stats_json().c_str());
        std::fclose(f);
        std::rename(tmp.c_str(), g_campaign->stats_path.c_str());
    }
}

void print_stats_at_exit() {
    if (g_campaign == nullptr || g_campaign->executions == 0) return;
    write_stats_file();
    std::fprintf(stderr, "kvsim-fuzz-stats: %s\n", stats_json().c_str());
}

bool flag_on(const char* value) { return value != nullptr && std::strcmp(value, "1") == 0; }

// A known run names its cause set; a NEW one the causes removed before the failure nothing explains.
[[noreturn]] void report(std::string_view verdict, const std::string& signature, const std::string& message,
                         const kvsim::Classification* classification = nullptr) {
    std::fprintf(stderr, "kvsim-finding: verdict=%.*s signature=%s variant=%s\n", static_cast<int>(verdict.size()),
                 verdict.data(), signature.c_str(), g_campaign->variant_name.c_str());
    std::fprintf(stderr, "kvsim-message: %s\n", message.c_str());
    if (classification != nullptr && classification->known())
        std::fprintf(stderr, "kvsim-known: %s\n", classification->cause_set().c_str());
    if (classification != nullptr && classification->is_new() && !classification->causes.empty())
        std::fprintf(stderr, "kvsim-new-after: %s residue=%s\n", classification->cause_set().c_str(),
                     classification->residue_signature.c_str());
    print_stats_at_exit();
    std::fflush(stderr);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    std::string name;
    if (const char* env = std::getenv("KVSIM_FUZZ_VARIANT"); env != nullptr && *env != '\0') name = env;
    bool abort_on_any = flag_on(std::getenv("KVSIM_FUZZ_ABORT_ON_ANY"));
    std::string stop_on;
    if (const char* env = std::getenv("KVSIM_FUZZ_STOP_ON"); env != nullptr) stop_on = env;
    // -kvsim_variant=V, -kvsim_abort_on_any=1: taken out of argv so that libFuzzer does not warn
    // about an unknown flag.
    int kept = 0;
    for (int i = 0; i < *argc; ++i) {
        const char* arg = (*argv)[i];
        if (i > 0 && std::strncmp(arg, kVariantFlag.data(), kVariantFlag.size()) == 0) {
            name = arg + kVariantFlag.size();
            continue;
        }
        if (i > 0 && std::strncmp(arg, kAbortOnAnyFlag.data(), kAbortOnAnyFlag.size()) == 0) {
            abort_on_any = flag_on(arg + kAbortOnAnyFlag.size());
            continue;
        }
        if (i > 0 && std::strncmp(arg, kStopOnFlag.data(), kStopOnFlag.size()) == 0) {
            stop_on = arg + kStopOnFlag.size();
            continue;
        }
        (*argv)[kept++] = (*argv)[i];
    }
    if (kept < *argc) (*argv)[kept] = nullptr;
    *argc = kept;
    if (name.empty()) name = kvsim::default_variant();
    std::string error;
    auto variant = kvsim::resolve_variant(name, &error);
    if (!variant) {
        std::fprintf(stderr, "kvsim_fuzz_trace: unknown variant '%s': %s\n", name.c_str(), error.c_str());
        std::exit(64);
    }
    // fork/jobs mode re-runs this binary with libFuzzer's view of argv: keep the variant in the environment
    setenv("KVSIM_FUZZ_VARIANT", name.c_str(), 1);
    setenv("KVSIM_FUZZ_ABORT_ON_ANY", abort_on_any ? "1" : "0", 1);
    setenv("KVSIM_FUZZ_STOP_ON", stop_on.c_str(), 1);
    g_campaign = new Campaign{.variant_name = name,
                              .variant = *variant,
                              .determinism_every = determinism_every(),
                              .abort_on_any = abort_on_any,
                              .stop_on = stop_on};
    if (const char* stats = std::getenv("KVSIM_FUZZ_STATS"); stats != nullptr && *stats != '\0')
        g_campaign->stats_path = std::string(stats) + "." + std::to_string(::getpid()) + ".json";
    std::atexit(&print_stats_at_exit);
    std::fprintf(stderr, "kvsim_fuzz_trace: variant=%s determinism every=%llu known_findings=%s (%zu in the registry)\n",
                 name.c_str(), static_cast<unsigned long long>(g_campaign->determinism_every),
                 abort_on_any ? "abort" : "count", kvsim::builtin_registry().entries.size());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ++g_campaign->executions;
    if (g_campaign->executions % kStatsEvery == 0) write_stats_file();
    if (size > kvsim::fuzz::budget::kMaxInputBytes) {
        ++g_campaign->ignored;
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<kvsim::Trace> own;  // the trace when the cache does not hold it as run
    const kvsim::Trace* parsed = nullptr;
    try {
        parsed = &g_campaign->traces.parsed_view(text, own);
    } catch (const kvsim::InputError&) {
        ++g_campaign->ignored;
        return 0;  // the mutator repairs such inputs; as an input it is simply not a trace
    }
    if (!kvsim::fuzz::within_budget(*parsed)) {
        ++g_campaign->ignored;
        return 0;
    }
    if (g_campaign->traces.ran_before(text)) {
        ++g_campaign->repeats;
        return 0;
    }
    // The trace runs under the campaign's variant, at most its step budget: the mutator's outputs,
    // which the cache holds, carry both already and run without a copy.
    const kvsim::fuzz::SearchBudgets budgets = kvsim::fuzz::search_budgets(*parsed);
    if (parsed->run.variant != g_campaign->variant_name || parsed->run.max_steps != budgets.steps) {
        if (!own) own = *parsed;
        own->run.variant = g_campaign->variant_name;
        own->run.max_steps = budgets.steps;
        parsed = &*own;
    }
    const kvsim::Trace& trace = *parsed;
    ++(kvsim::resolved_async_scheduling(trace.engine, g_campaign->variant) ? g_campaign->runs_async_on
                                                                            : g_campaign->runs_async_off);
    const std::uint64_t input = g_campaign->inputs++;
    const bool replay = g_campaign->determinism_every > 0 && input % g_campaign->determinism_every == 0;
    // muted, but for the event categories the registry reads: classifying a failing input then needs
    // no replay of it for its events
    const kvsim::RunOptions options = kvsim::fuzz::search_run_options(budgets, replay, g_campaign->events_read);
    const kvsim::InputJudgement judged = kvsim::judge_input(kvsim::builtin_registry(), trace, g_campaign->variant,
                                                            options, &g_campaign->variant_reruns);
    g_campaign->idle_rerun += judged.idle_rerun ? 1 : 0;
    g_campaign->new_rerun += judged.new_rerun ? 1 : 0;
    const kvsim::RunResult& result = judged.result;
    const kvsim::Classification& classification = judged.classification;
    if (result.internal_error) report("internal-error", kvsim::internal_error_signature(result.message), result.message);
    if (result.verdict == kvsim::Verdict::rejected) {  // a configuration upstream refuses: not a run
        ++g_campaign->ignored;
        return 0;
    }
    if (result.verdict == kvsim::Verdict::pass) {
        ++g_campaign->passed;
        g_campaign->steps_passed += judged.steps;
        return 0;
    }
    const bool stop = !g_campaign->stop_on.empty() && result.signature.starts_with(g_campaign->stop_on);
    if (!classification.known() || g_campaign->abort_on_any || stop)
        report(kvsim::to_string(result.verdict), result.signature, result.message, &classification);
    ++g_campaign->known[classification.cause_set()];
    g_campaign->steps_known += judged.steps;
    return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
    kvsim::fuzz::TextOptions options;
    options.max_size = max_size;
    options.variant = g_campaign->variant_name;
    options.byte_mutate = &LLVMFuzzerMutate;
    options.cache = &g_campaign->traces;
    const std::string out =
        kvsim::fuzz::mutate_text(std::string_view(reinterpret_cast<const char*>(data), size), seed, options);
    if (out.empty()) return size <= max_size && size > 0 ? size : (max_size > 0 ? 1 : 0);  // max_len too small
    std::memcpy(data, out.data(), out.size());
    return out.size();
}

extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* data1, std::size_t size1,
                                                 const std::uint8_t* data2, std::size_t size2, std::uint8_t* out,
                                                 std::size_t max_out_size, unsigned int seed) {
    kvsim::fuzz::TextOptions options;
    options.max_size = max_out_size;
    options.variant = g_campaign->variant_name;
    options.cache = &g_campaign->traces;
    const std::string child = kvsim::fuzz::cross_over_text(std::string_view(reinterpret_cast<const char*>(data1), size1),
                                                           std::string_view(reinterpret_cast<const char*>(data2), size2),
                                                           seed, options);
    if (child.empty()) return 0;  // libFuzzer then keeps the unit it had
    std::memcpy(out, child.data(), child.size());
    return child.size();
}
