#pragma once
// The trace: everything that determines one run (sim/trace/README.md).
// Text form: see trace_schema.cpp (the key table) and `kvsim format`.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/common/enum_names.h"
#include "sim/trace/step_check.h"
#include "sim/variant/variant.h"

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
    int max_model_len = 1008;  // what the default pool holds: (num_blocks - 1) * block_size
    bool chunked_prefill = true;
    bool prefix_caching = true;
    int long_prefill_threshold = 0;  // 0 = off
    bool reserve_full_isl = true;    // scheduler_reserve_full_isl: admission needs room for the whole sequence
    // KVTransferConfig.kv_load_failure_policy; nullopt = the variant's release default.
    std::optional<LoadFailurePolicy> kv_load_failure_policy = std::nullopt;
    std::optional<bool> async_scheduling;  // SchedulerConfig.async_scheduling; nullopt = the variant's default

    bool operator==(const EngineConfig&) const = default;
};

struct RunConfig {
    std::uint64_t seed = 1;
    int max_steps = 1000;
    std::string variant;  // empty = none given; the command line may supply one

    bool operator==(const RunConfig&) const = default;
};

enum class KvRole { kv_consumer, kv_producer, kv_both };

// One connector line. Several lines form a MultiConnector, children in file order (its own
// kv_transfer_config is the `multi` line: MultiConnectorSpec).
// kind: stand_in | p2p (MooncakeConnector) | store (MooncakeStoreConnector) | mock.
struct ConnectorSpec {
    std::string kind;
    KvRole role = KvRole::kv_consumer;
    int load_delay = 1;  // stand_in only: steps from load start to finished_recving
    // store only: MooncakeStoreConnector kv_connector_extra_config
    bool load_async = true;
    bool lookup_async = false;
    bool enable_lookup = true;
    bool save_decode_cache = false;
    // mock only: upstream's test MockKVConnector (MockKVConfig)
    int matched = 0;        // matched_tokens: what get_num_new_matched_tokens answers
    bool is_async = false;  // is_async: the matched tokens load asynchronously
    int defer = 0;          // num_defers_before_matching: "not decided yet" answers per request first

    bool operator==(const ConnectorSpec&) const = default;
};

// The MultiConnector's own kv_transfer_config: the top-level kv_role, which the scheduler reads
// (Scheduler.__init__'s defer_block_free: kv_transfer_config.is_kv_consumer) while each child reads
// its own (multi_connector.py _get_connector_classes_and_configs builds one KVTransferConfig per
// child) @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1.
struct MultiConnectorSpec {
    KvRole role = KvRole::kv_consumer;

    bool operator==(const MultiConnectorSpec&) const = default;
};

// The worker side: tensor-parallel ranks and the delay ranges completions draw from
// (the run's PRNG picks each delay uniformly in [min, max]).
struct WorkerConfig {
    int ranks = 1;
    int store_delay_min = 1;  // steps from a store job's start to one rank's report
    int store_delay_max = 1;
    int load_delay_min = 1;   // steps from a load's start to its completion
    int load_delay_max = 1;
    int pull_delay = 1;       // p2p kv_producer: steps from a finished request to the decode side's pull

    bool operator==(const WorkerConfig&) const = default;
};

// The external KV store holds every full block of this token sequence (as written by
// a prefill engine earlier).
struct StoreEntry {
    std::vector<std::string> prefix;  // segment names, concatenated

    bool operator==(const StoreEntry&) const = default;
};

struct Segment {
    std::string name;
    std::vector<std::int32_t> tokens;
    bool generated = true;  // printed as len=N (tokens derived from the name) vs tokens=...
    // The parser's len=N, held until the trace is within its budget (sim/trace/trace_budget.h) and
    // derive_segment_tokens() derives the tokens; 0 once they are (and in every trace built in memory).
    std::int32_t pending_len = 0;

    std::size_t length() const { return tokens.size() + static_cast<std::size_t>(pending_len); }

    bool operator==(const Segment&) const = default;
};

// rejected: upstream refuses the configuration (sim/trace/config_rules.h); the trace never runs.
enum class Verdict { pass, violation, crash, liveness, nondeterminism, mismatch, rejected };

struct Expectation {
    std::string variant;
    Verdict verdict = Verdict::pass;
    std::string signature;  // optional; empty = any signature
    // optional: the registry's causes of the failure, in the order the classifier removes them (a known
    // finding's cause set, properties/findings/classify.h); empty = not stated
    std::vector<std::string> causes;

    bool operator==(const Expectation&) const = default;
};

struct ArriveEvent {
    std::string request_id;
    std::vector<std::string> prompt;  // segment names, concatenated in order
    int max_tokens = 1;
    bool remote_prefill = false;  // kv_transfer_params do_remote_prefill (decode side loads the prompt)
    bool remote_decode = false;   // kv_transfer_params do_remote_decode (prefill side sends on finish)
    int external = -1;            // mock connector: this request's matched tokens; -1 = the connector's `matched`

    bool operator==(const ArriveEvent&) const = default;
};

struct AbortEvent {
    std::string request_id;

    bool operator==(const AbortEvent&) const = default;
};

enum class FaultKind {
    store_delay,     // store jobs started on `rank` from now on take `steps` longer
    store_fail,      // the next store job on `rank` fails: it reports, but writes nothing to the store
    load_fail,       // the load of `request` fails: its blocks come back invalid
    lookup_pending,  // the store lookup for `request` stays pending for `steps` steps
};

struct FaultEvent {
    FaultKind kind = FaultKind::store_delay;
    int rank = 0;            // store_delay, store_fail
    int steps = 0;           // store_delay, lookup_pending
    std::string request_id = {};  // load_fail, lookup_pending

    bool operator==(const FaultEvent&) const = default;
};

// A worker report scripted by the trace instead of drawn from delays (upstream's tests build
// these with create_model_runner_output): merged into the step's KVConnectorOutput.
enum class ReportKind {
    finished_recving,  // the request's load finished
    finished_sending,  // the request's blocks were sent (or saved) and may be freed
    failed_recving,    // finished_recving, and every block of its table without a hash comes back invalid
    invalid_blocks,    // the blocks at `index` of the request's block table come back invalid
    store_done,        // `rank`'s copy of the request's oldest unreported store job completes
};

struct ReportEvent {
    ReportKind kind = ReportKind::finished_recving;
    std::string request_id;
    std::vector<std::int32_t> index = {};  // invalid_blocks: positions in the request's block table
    int rank = 0;                          // store_done: the worker rank that reports

    bool operator==(const ReportEvent&) const = default;
};

// The request samples EOS in this step's output (check_stop: FINISHED_STOPPED).
struct StopEvent {
    std::string request_id;

    bool operator==(const StopEvent&) const = default;
};

// Scheduler.reset_prefix_cache(): fails while any block is in use.
struct ResetPrefixCacheEvent {
    bool operator==(const ResetPrefixCacheEvent&) const = default;
};

using EventBody = std::variant<ArriveEvent, AbortEvent, FaultEvent, ReportEvent, StopEvent, ResetPrefixCacheEvent>;

// The request an event names (null: none, e.g. a rank fault or reset_prefix_cache).
const std::string* event_request_id(const EventBody& body);
std::string* event_request_id(EventBody& body);

struct Event {
    int step = 0;  // applied before schedule() of that step
    EventBody body;
    int line = 0;  // source line, 0 when built in memory; not part of equality

    bool operator==(const Event& o) const { return step == o.step && body == o.body; }
};

// Source lines of a parsed trace's non-event lines (events and checks carry their own line), so that
// what judges the trace later (validate_trace, the configuration rules) names the line. 0 = unknown (a
// trace built in memory). Never part of a trace's equality: the same trace may be written differently.
struct TraceLines {
    int header = 0;
    int engine = 0;
    int run = 0;
    int multi = 0;
    int workers = 0;
    std::vector<int> connectors;
    std::vector<int> segments;
    std::vector<int> store;
    std::vector<int> expectations;

    bool operator==(const TraceLines&) const { return true; }
};

struct Trace {
    int version = kTraceFormatVersion;
    EngineConfig engine;
    RunConfig run;
    std::optional<MultiConnectorSpec> multi;  // the `multi` line: connectors form a MultiConnector
    std::vector<ConnectorSpec> connectors;
    WorkerConfig workers;
    std::vector<StoreEntry> store;
    std::vector<Segment> segments;
    std::vector<Expectation> expectations;
    std::vector<Event> events;
    std::vector<StepCheck> checks;  // `@STEP check` lines, in file order; never seen by the engine
    TraceLines lines;                // where the parser read each line (all 0 for a trace built in memory)

    bool operator==(const Trace&) const = default;

    const Segment* find_segment(std::string_view name) const;
    std::vector<std::int32_t> prompt_tokens(const ArriveEvent& arrive) const;
    std::vector<std::int32_t> concat_segments(const std::vector<std::string>& names) const;
};

// A trace's segments by name, for a reader that looks up many prompts (the engine: one per
// arrival); Trace::find_segment walks the list. The trace must outlive it, unchanged.
class SegmentIndex {
public:
    explicit SegmentIndex(const Trace& trace);
    std::vector<std::int32_t> concat(const std::vector<std::string>& names) const;

private:
    std::map<std::string_view, const Segment*> by_name_;  // the first of a name, as find_segment
};

inline constexpr EnumNames<KvRole, 3> kKvRoleNames = {{
    {KvRole::kv_consumer, "kv_consumer"},
    {KvRole::kv_producer, "kv_producer"},
    {KvRole::kv_both, "kv_both"},
}};
inline constexpr EnumNames<Verdict, 7> kVerdictNames = {{
    {Verdict::pass, "pass"},
    {Verdict::violation, "violation"},
    {Verdict::crash, "crash"},
    {Verdict::liveness, "liveness"},
    {Verdict::nondeterminism, "nondeterminism"},
    {Verdict::mismatch, "mismatch"},  // a step check read another value than it states
    {Verdict::rejected, "rejected"},  // a configuration rule of upstream refuses the trace
}};
inline constexpr EnumNames<FaultKind, 4> kFaultKindNames = {{
    {FaultKind::store_delay, "store_delay"},
    {FaultKind::store_fail, "store_fail"},
    {FaultKind::load_fail, "load_fail"},
    {FaultKind::lookup_pending, "lookup_pending"},
}};

inline constexpr EnumNames<ReportKind, 5> kReportKindNames = {{
    {ReportKind::finished_recving, "finished_recving"},
    {ReportKind::finished_sending, "finished_sending"},
    {ReportKind::failed_recving, "failed_recving"},
    {ReportKind::invalid_blocks, "invalid_blocks"},
    {ReportKind::store_done, "store_done"},
}};

std::string_view to_string(KvRole role);
// KVTransferConfig.is_kv_consumer / is_kv_producer (vllm/config/kv_transfer.py @
// 9dc4946457fb6963f05e08b04382013a745cad8a): kv_both is both.
bool is_kv_consumer(KvRole role);
bool is_kv_producer(KvRole role);
// The kv_role of the engine's top-level kv_transfer_config: the multi line's, or the one connector's.
// None without a connector, or for several connector lines without a multi line (upstream refuses a
// KVTransferConfig without kv_role: sim/trace/config_rules.h).
std::optional<KvRole> top_level_role(const Trace& trace);
std::string_view to_string(ReportKind kind);
std::optional<ReportKind> parse_report_kind(std::string_view text);
std::string_view to_string(Verdict verdict);
std::string_view to_string(FaultKind kind);
std::optional<FaultKind> parse_fault_kind(std::string_view text);
std::optional<KvRole> parse_role(std::string_view text);
std::optional<Verdict> parse_verdict(std::string_view text);

// Tokens of a generated segment: derived from its name, never from the run's PRNG,
// so two traces sharing a segment name share its tokens.
std::vector<std::int32_t> generated_segment_tokens(std::string_view name, int length);
// A parsed segment's pending len=N turned into its tokens (nothing when none is pending).
void derive_segment_tokens(Segment& segment);

}  // namespace kvsim
