#pragma once
// Structure-aware mutation of traces for the libFuzzer targets (fuzz/README.md).
//
// A trace fuzzer input is trace text. The mutator parses it (or repairs it when it does not
// parse), changes its structure (events, engine sizes, connectors and roles, workers, faults,
// prompts and shared prefixes, store contents), brings the result back inside the fuzzing
// envelope with normalize(), and prints it. Every output is a trace validate_trace() accepts.
//
// Everything here is driven by kvsim's Prng, seeded from libFuzzer's seed, and depends only on
// (input, seed): the same call gives the same trace on every compiler. There is no libFuzzer
// dependency, so the library also builds with gcc and runs under the Catch2 tests; the byte-level
// mutation hook (LLVMFuzzerMutate in the fuzz target) is passed in as a callback.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/mutator/trace_cache.h"
#include "sim/common/prng.h"
#include "sim/trace/trace.h"

namespace kvsim::fuzz {

// The envelope normalize() keeps traces in: small enough that one run takes at most a few
// milliseconds under ASan, large enough for pressure, preemption, chunking and several requests.
namespace envelope {
inline constexpr int kMaxRequests = 6;
inline constexpr int kMaxEvents = 24;
inline constexpr int kMaxEventStep = 24;      // events happen in steps 0..24
inline constexpr int kMaxSegments = 10;
inline constexpr int kMaxSegmentLen = 96;
inline constexpr int kMaxPromptSegments = 4;
inline constexpr int kMaxStoreEntries = 4;
inline constexpr int kMaxMaxTokens = 34;       // two blocks of 16 tokens, one of 32, and a token more
inline constexpr int kMaxBlockSize = 32;
inline constexpr int kMaxNumBlocks = 800;     // room for max_model_len tokens at block_size 1
inline constexpr int kMaxBatchedTokens = 1024;
inline constexpr int kMaxRunning = 16;
inline constexpr int kMaxModelLen = 384;
inline constexpr int kMaxLongPrefill = 384;
// The requests' prefill chunks (prompt / per-step prefill budget) plus output tokens, summed: the
// budget and long_prefill_threshold are raised until the trace is within it (a 300-token prompt at
// one token per step is a slow run without a new idea).
inline constexpr int kMaxWork = 200;
inline constexpr int kMaxRanks = 4;
inline constexpr int kMaxDelay = 12;          // workers delays, stand_in load_delay
inline constexpr int kMaxFaultSteps = 12;
}  // namespace envelope

// What the trace target accepts from a raw input (a seed, a crash artifact, anything libFuzzer
// hands it): generous, so every corpus trace fits, but bounding the work of one execution.
// Inputs outside it are ignored (LLVMFuzzerTestOneInput returns 0).
namespace budget {
inline constexpr int kMaxSteps = 100'000;
inline constexpr std::size_t kMaxEvents = 512;
inline constexpr std::size_t kMaxSegments = 256;
inline constexpr std::size_t kMaxStoreEntries = 64;
inline constexpr int kMaxNumBlocks = 1 << 16;
inline constexpr int kMaxModelLen = 16384;
inline constexpr std::int64_t kMaxRequestTokens = 1 << 16;  // sum of prompt + max_tokens over requests
inline constexpr std::int64_t kMaxSegmentTokens = 1 << 16;  // sum of segment lengths
inline constexpr int kMaxRanks = 16;
inline constexpr int kMaxDelay = 1000;  // every worker delay, stand_in load_delay and fault steps
inline constexpr std::size_t kMaxInputBytes = 1 << 20;
// The target's full checker sweeps (RunOptions::sweep_period): every 16th step and after the last;
// the steps between are judged on what they touched. `kvsim run` sweeps a small pool every step.
inline constexpr int kSweepPeriod = 16;
}  // namespace budget

// One structural mutation. Each changes one part of the trace; normalize() repairs the rest.
enum class Mutation {
    add_request,           // a new arrive: existing or new segments, a shared prefix, random flags
    remove_event,          // any event (aborts and faults of a removed request go with it)
    move_event,            // an event to another step or position
    add_abort,             // abort an arrived request, somewhere after its arrival
    add_fault,             // a fault of a kind the connectors allow
    change_fault,          // kind, rank, steps or request of a fault
    change_max_tokens,     // a request's max_tokens (block-boundary values favoured)
    change_prompt,         // append, drop or replace a prompt segment
    share_prefix,          // make one request's prompt start with another's
    toggle_remote,         // remote_prefill / remote_decode of a request
    engine_size,           // num_blocks, block_size, max_batched_tokens, max_running, max_model_len, long_prefill_threshold
    engine_flags,          // chunked_prefill, prefix_caching, reserve_full_isl
    run_seed,              // run.seed (the worker delays' PRNG)
    add_connector,         // p2p, store or stand_in (replacing the others)
    remove_connector,      // any connector
    swap_connectors,       // MultiConnector children in the other order
    change_role,           // a connector's kv_role
    connector_option,      // store flags, stand_in load_delay
    workers,               // ranks and delay ranges
    segment_size,          // a segment's length (block-boundary values favoured)
    segment_tokens,        // explicit tokens: edit, copy another segment's prefix, or back to generated
    add_store_entry,       // the store holds a request's prompt prefix (or random segments)
    remove_store_entry,    // any store line
    change_store_entry,    // extend, shorten or replace a store prefix
    load_failure_policy,   // engine kv_load_failure_policy: unset (the variant's default) -> recompute -> fail -> unset
    async_scheduling,      // engine async_scheduling: unset (the variant's default) -> on -> off -> unset
};
inline constexpr int kMutationCount = static_cast<int>(Mutation::async_scheduling) + 1;

std::string_view to_string(Mutation mutation);
std::span<const Mutation> all_mutations();

// Makes any Trace valid and brings it inside the envelope, deterministically: clamps every value,
// drops what cannot be repaired (unknown segments, aborts and faults of requests that have not
// arrived, faults the connectors do not allow, connector duplicates), strips expect and check lines, sorts
// events by step, grows num_blocks so that each request fits the pool on its own (upstream refuses
// to start otherwise), raises the per-step prefill budget until the work is within kMaxWork,
// and sets run.max_steps to a generous bound on the run's length (so a
// liveness verdict means a hang, not a short step limit). Returns false only when the repaired
// trace still failed validate_trace and a minimal trace replaced it (a bug; the tests require true).
bool normalize(Trace& trace);

// Text -> a valid trace, never failing: the parsed trace when the text parses, otherwise every
// line that can be salvaged (lenient per-key parsing, unknown keys and bad values skipped), then
// normalize(). A trace with no request gets one, drawn from `seed`.
Trace repair(std::string_view text, std::uint64_t seed);
// repair() in its two parts: the text's trace (parsed or salvaged) normalized, which the seed
// does not change, and then, when that trace has no request, the request drawn from the seed.
Trace salvage(std::string_view text);
void give_request(Trace& trace, std::uint64_t seed);
// Whether the trace has an arrival (give_request leaves such a trace as it is).
bool has_request(const Trace& trace);

// One mutation in place (no normalize). false when it does not apply (nothing to remove, ...).
bool apply_mutation(Trace& trace, Mutation mutation, Prng& rng);

// 1..4 random mutations (at least one that applied), then normalize(). Returns what was applied.
std::vector<Mutation> mutate(Trace& trace, Prng& rng);

// A child of two traces: config parts from either parent, segments and store lines of both
// (renamed where they clash), events spliced at a cut (or merged by step), then normalize().
Trace cross_over(Trace a, const Trace& b, Prng& rng);

// The text API the fuzz target calls.
struct TextOptions {
    std::size_t max_size = 1 << 16;  // output at most this many bytes (libFuzzer's MaxSize)
    std::string variant;             // stamped into run.variant when non-empty (artifacts replay as is)
    // Byte-level mutation (LLVMFuzzerMutate): mutates data[0..size) in place, returns the new size
    // (<= max). When set, one call in kByteMutationOdds mutates the printed text with it and repairs.
    std::function<std::size_t(std::uint8_t* data, std::size_t size, std::size_t max)> byte_mutate;
    // When set, parents are repaired through it and the output is kept in it (the fuzz target's).
    TraceCache* cache = nullptr;
};
inline constexpr std::uint64_t kByteMutationOdds = 8;

// parse-or-repair, mutate, print; shrinks the trace until it fits max_size. Empty when not even a
// minimal trace fits.
std::string mutate_text(std::string_view input, std::uint64_t seed, const TextOptions& options);
std::string cross_over_text(std::string_view a, std::string_view b, std::uint64_t seed, const TextOptions& options);

// Whether the trace target runs this parsed trace: its work is within budget:: and every request
// fits the pool on its own. On false, *why says which rule.
bool within_budget(const Trace& trace, std::string* why = nullptr);

// The run-length bound normalize() writes into run.max_steps.
int step_bound(const Trace& trace);

// The steps the trace target runs an input for: its max_steps, but at most twice step_bound, so
// a raw byte mutation of max_steps (or a seed's roomy limit) does not spend thousands of steps on a
// hang that step_bound already proves.
int step_budget(const Trace& trace);

// The trace target's hang budget (RunOptions::stall_steps): a run that makes no progress for this
// many steps after its last event is stopped as a hang. Twice what one uninterrupted stretch of
// waiting can take: every request's prefill again, one chunk a step, and every delay the trace
// can impose, summed; never more than step_budget. A NEW hang is confirmed without it.
int stall_budget(const Trace& trace);

// The trace target's idle budget (RunOptions::idle_steps): a run whose requests compute nothing
// they had not computed before, and make no progress, for this many steps after its last event and
// once every fault has settled, is stopped as a hang. Twice every delay a worker can impose
// (store, load, pull and stand_in delays and store_delay faults, summed), plus the longest
// recomputation (one request's prompt and output tokens, one chunk a step, and 2 steps: a preempted
// request computes nothing new until it has recomputed them all), plus 32; never more than
// stall_budget. It stops a livelock (preemption, recomputation) that stall_budget lets run every
// request's prefill again. A NEW hang is confirmed without it.
int idle_budget(const Trace& trace);

// The three budgets above from one pass over the trace (the target needs all three per input).
struct SearchBudgets {
    int steps = 0;  // step_budget
    int stall = 0;  // stall_budget
    int idle = 0;   // idle_budget
};
SearchBudgets search_budgets(const Trace& trace);

}  // namespace kvsim::fuzz
