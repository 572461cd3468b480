#pragma once
// The trace: everything that determines one run (DESIGN §1, §6).
// Text form: see trace_schema.cpp (the key table) and `kvsim format`.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kvsim {

inline constexpr int kTraceFormatVersion = 1;

// Hard limits: every number in a trace is bounded (TigerBeetle style).
namespace limits {
inline constexpr int kMaxBlockSize = 1024;
inline constexpr int kMaxBlocks = 1 << 20;
inline constexpr int kMaxModelLen = 1 << 20;
inline constexpr int kMaxSteps = 1'000'000;
inline constexpr int kMaxEvents = 100'000;
inline constexpr int kMaxSegmentLen = 1 << 16;
inline constexpr int kMaxSegments = 4096;
inline constexpr int kMaxIdLen = 64;
inline constexpr int kMaxDelay = 10'000;
}  // namespace limits

struct EngineConfig {
    int block_size = 16;
    int num_blocks = 64;  // includes the null block 0
    int max_batched_tokens = 2048;
    int max_running = 16;  // max_num_seqs
    int max_model_len = 4096;
    bool chunked_prefill = true;
    bool prefix_caching = true;
    int long_prefill_threshold = 0;  // 0 = off
    bool reserve_full_isl = true;    // scheduler_reserve_full_isl: admission needs room for the whole sequence

    bool operator==(const EngineConfig&) const = default;
};

struct RunConfig {
    std::uint64_t seed = 1;
    int max_steps = 1000;
    std::string variant;  // empty = none given; the command line may supply one

    bool operator==(const RunConfig&) const = default;
};

enum class KvRole { kv_consumer, kv_producer, kv_both };

// One connector line. Several lines form a MultiConnector, children in file order.
struct ConnectorSpec {
    std::string kind;  // "stand_in" for now (connector issue adds p2p, store)
    KvRole role = KvRole::kv_consumer;
    int load_delay = 1;  // stand_in: steps from load start to finished_recving

    bool operator==(const ConnectorSpec&) const = default;
};

struct Segment {
    std::string name;
    std::vector<std::int32_t> tokens;
    bool generated = true;  // printed as len=N (tokens derived from the name) vs tokens=...

    bool operator==(const Segment&) const = default;
};

enum class Verdict { pass, violation, crash, liveness, nondeterminism };

struct Expectation {
    std::string variant;
    Verdict verdict = Verdict::pass;
    std::string signature;  // optional; empty = any signature

    bool operator==(const Expectation&) const = default;
};

struct ArriveEvent {
    std::string request_id;
    std::vector<std::string> prompt;  // segment names, concatenated in order
    int max_tokens = 1;
    bool remote_prefill = false;  // kv_transfer_params do_remote_prefill

    bool operator==(const ArriveEvent&) const = default;
};

struct AbortEvent {
    std::string request_id;

    bool operator==(const AbortEvent&) const = default;
};

using EventBody = std::variant<ArriveEvent, AbortEvent>;

struct Event {
    int step = 0;  // applied before schedule() of that step
    EventBody body;
    int line = 0;  // source line, 0 when built in memory; not part of equality

    bool operator==(const Event& o) const { return step == o.step && body == o.body; }
};

struct Trace {
    int version = kTraceFormatVersion;
    EngineConfig engine;
    RunConfig run;
    std::vector<ConnectorSpec> connectors;
    std::vector<Segment> segments;
    std::vector<Expectation> expectations;
    std::vector<Event> events;

    bool operator==(const Trace&) const = default;

    const Segment* find_segment(std::string_view name) const;
    std::vector<std::int32_t> prompt_tokens(const ArriveEvent& arrive) const;
};

std::string_view to_string(KvRole role);
std::string_view to_string(Verdict verdict);
std::optional<KvRole> parse_role(std::string_view text);
std::optional<Verdict> parse_verdict(std::string_view text);

// Tokens of a generated segment: derived from its name, never from the run's PRNG,
// so two traces sharing a segment name share its tokens.
std::vector<std::int32_t> generated_segment_tokens(std::string_view name, int length);

}  // namespace kvsim
