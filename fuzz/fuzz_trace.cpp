// kvsim_fuzz_trace: the trace fuzzer (fuzz/README.md).
//
// Input: trace text. It runs under the campaign's variant with every checker on (and the
// determinism replay on every Nth input: KVSIM_FUZZ_DETERMINISM=N, default 1, 0 = never); any verdict other than pass, or a kvsim
// internal error, prints
//   kvsim-finding: verdict=<v> signature=<sig> variant=<V>
//   kvsim-message: <the run's one-line message>
// to stderr and aborts, so libFuzzer saves the input (trace text) as the crash artifact.
// Input that does not parse, or whose work is beyond the budget (fuzz/mutator/trace_mutator.h), is
// ignored. The structure-aware mutator and crossover (fuzz/mutator) produce only valid traces.
//
// The variant comes from -kvsim_variant=V on the command line (removed before libFuzzer parses
// its flags, and exported as KVSIM_FUZZ_VARIANT for fork-mode children) or from the environment
// variable KVSIM_FUZZ_VARIANT; default: the variant table's default preset. The input's own `run variant=` line is overridden.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/mutator/trace_mutator.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

constexpr std::string_view kVariantFlag = "-kvsim_variant=";

// Every input by default: sampling changes which inputs libFuzzer keeps (the replay's coverage),
// and scripts/fuzz-smoke's canaries are tuned to the default; a campaign sets N for throughput.
constexpr std::uint64_t kDeterminismEvery = 1;

struct Campaign {
    std::string variant_name;
    kvsim::Variant variant;
    std::uint64_t determinism_every = kDeterminismEvery;  // replay every Nth input twice; 0: never
    std::uint64_t inputs = 0;
};

Campaign* g_campaign = nullptr;

// Signature of a kvsim internal error: the message's words, without numbers or ids.
std::string internal_signature(const std::string& message) {
    std::string text = message;
    if (const auto at = text.find("internal error: "); at != std::string::npos) text = text.substr(at + 16);
    std::string out = "internal-error:";
    bool underscore = false;
    for (const char c : text) {
        if (out.size() >= 72) break;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            out.push_back(c);
            underscore = false;
        } else if (c == ' ' && !underscore) {
            out.push_back('_');
            underscore = true;
        }
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

[[noreturn]] void report(std::string_view verdict, const std::string& signature, const std::string& message) {
    std::fprintf(stderr, "kvsim-finding: verdict=%.*s signature=%s variant=%s\n", static_cast<int>(verdict.size()),
                 verdict.data(), signature.c_str(), g_campaign->variant_name.c_str());
    std::fprintf(stderr, "kvsim-message: %s\n", message.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    std::string name;
    if (const char* env = std::getenv("KVSIM_FUZZ_VARIANT"); env != nullptr && *env != '\0') name = env;
    // -kvsim_variant=V: taken out of argv so that libFuzzer does not warn about an unknown flag.
    int kept = 0;
    for (int i = 0; i < *argc; ++i) {
        const char* arg = (*argv)[i];
        if (i > 0 && std::strncmp(arg, kVariantFlag.data(), kVariantFlag.size()) == 0) {
            name = arg + kVariantFlag.size();
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
    std::uint64_t every = kDeterminismEvery;
    if (const char* determinism = std::getenv("KVSIM_FUZZ_DETERMINISM"); determinism != nullptr && *determinism != '\0') {
        char* end = nullptr;
        every = std::strtoull(determinism, &end, 10);
        if (*end != '\0' || *determinism == '-') {
            std::fprintf(stderr, "kvsim_fuzz_trace: KVSIM_FUZZ_DETERMINISM='%s' is not a count (N: every Nth input, 0: never)\n",
                         determinism);
            std::exit(64);
        }
    }
    g_campaign = new Campaign{name, *variant, every};
    std::fprintf(stderr, "kvsim_fuzz_trace: variant=%s determinism=%s every=%llu\n", name.c_str(), every > 0 ? "on" : "off",
                 static_cast<unsigned long long>(every));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > kvsim::fuzz::budget::kMaxInputBytes) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    kvsim::Trace trace;
    try {
        trace = kvsim::parse_trace(text, "<input>");
    } catch (const kvsim::InputError&) {
        return 0;  // the mutator repairs such inputs; as an input it is simply not a trace
    }
    if (!kvsim::fuzz::within_budget(trace)) return 0;
    trace.run.variant = g_campaign->variant_name;
    trace.run.max_steps = kvsim::fuzz::step_budget(trace);
    const std::uint64_t input = g_campaign->inputs++;
    const bool replay = g_campaign->determinism_every > 0 && input % g_campaign->determinism_every == 0;
    const kvsim::RunResult result =
        kvsim::run_trace(trace, g_campaign->variant, kvsim::RunOptions{.check_determinism = replay, .text_log = false});
    if (result.internal_error) report("internal-error", internal_signature(result.message), result.message);
    if (result.verdict != kvsim::Verdict::pass)
        report(kvsim::to_string(result.verdict), result.signature, result.message);
    return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
    kvsim::fuzz::TextOptions options;
    options.max_size = max_size;
    options.variant = g_campaign->variant_name;
    options.byte_mutate = &LLVMFuzzerMutate;
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
    const std::string child = kvsim::fuzz::cross_over_text(std::string_view(reinterpret_cast<const char*>(data1), size1),
                                                           std::string_view(reinterpret_cast<const char*>(data2), size2),
                                                           seed, options);
    if (child.empty()) return 0;  // libFuzzer then keeps the unit it had
    std::memcpy(out, child.data(), child.size());
    return child.size();
}
