// The key tables of trace format v1 and the value codec every table row goes through.
#include "sim/trace/trace_schema.h"

#include "sim/common/escape.h"
#include "sim/trace/config_rules.h"
#include "sim/trace/trace_budget.h"
#include "sim/trace/trace_builder.h"

#include "sim/variant/variant.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

namespace kvsim {
namespace {

// ---- binding a row to a struct member -------------------------------------------------

template <class M>
struct MemberTraits;
template <class T, class F>
struct MemberTraits<F T::*> {
    using Owner = T;
};
template <auto M>
using OwnerOf = typename MemberTraits<decltype(M)>::Owner;

template <class V>  // Value or ValueView
std::uint64_t as_u64(const V& v) {
    if (const auto* u = std::get_if<std::uint64_t>(&v)) return *u;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<std::uint64_t>(*i);
    return 0;
}

ValueView to_view(int v) { return std::int64_t{v}; }
ValueView to_view(std::int64_t v) { return v; }
ValueView to_view(std::uint64_t v) { return v; }
ValueView to_view(bool v) { return v; }
ValueView to_view(std::optional<bool> v) { return v.value_or(false); }
ValueView to_view(const std::string& v) { return std::string_view(v); }
ValueView to_view(const std::vector<std::string>& v) { return std::span<const std::string>(v); }
ValueView to_view(KvRole v) { return to_string(v); }
ValueView to_view(Verdict v) { return to_string(v); }
ValueView to_view(FaultKind v) { return to_string(v); }
// An unstated policy reads as "" (the printer omits it, `kvsim format` says "optional").
ValueView to_view(const std::optional<LoadFailurePolicy>& v) { return v ? to_string(*v) : std::string_view(); }
ValueView to_view(ReportKind v) { return to_string(v); }
ValueView to_view(const std::vector<std::int32_t>& v) { return std::span<const std::int32_t>(v); }

// A parsed value as the checks read it.
ValueView view_of(const Value& value) {
    return std::visit([](const auto& v) { return to_view(v); }, value);
}

void from_value(Value&& v, int& out) { out = static_cast<int>(as_u64(v)); }
void from_value(Value&& v, std::uint64_t& out) { out = as_u64(v); }
void from_value(Value&& v, bool& out) { out = std::get<bool>(v); }
void from_value(Value&& v, std::optional<bool>& out) { out = std::get<bool>(v); }
void from_value(Value&& v, std::string& out) { out = std::move(std::get<std::string>(v)); }
void from_value(Value&& v, std::vector<std::string>& out) { out = std::move(std::get<std::vector<std::string>>(v)); }
void from_value(Value&& v, KvRole& out) { out = parse_role(std::get<std::string>(v)).value_or(KvRole::kv_consumer); }
void from_value(Value&& v, Verdict& out) { out = parse_verdict(std::get<std::string>(v)).value_or(Verdict::pass); }
void from_value(Value&& v, std::optional<LoadFailurePolicy>& out) {
    out = parse_load_failure_policy(std::get<std::string>(v));
}
void from_value(Value&& v, ReportKind& out) {
    out = parse_report_kind(std::get<std::string>(v)).value_or(ReportKind::finished_recving);
}
void from_value(Value&& v, std::vector<std::int32_t>& out) { out = std::move(std::get<std::vector<std::int32_t>>(v)); }
void from_value(Value&& v, FaultKind& out) {
    out = parse_fault_kind(std::get<std::string>(v)).value_or(FaultKind::store_delay);
}

template <auto M>
ValueView get_member(const OwnerOf<M>& t) {
    return to_view(t.*M);
}
template <auto M>
void set_member(OwnerOf<M>& t, Value&& v) {
    from_value(std::move(v), t.*M);
}
template <auto M>
constexpr Row<OwnerOf<M>> bind(KeySpec spec, bool (*present)(const OwnerOf<M>&) = nullptr) {
    return {.spec = spec, .get = &get_member<M>, .set = &set_member<M>, .present = present};
}

// ---- the tables -------------------------------------------------------------------------

using VT = ValueType;
using SG = SettingGroup;

// Where upstream sets the defaults the key rows name (upstream_settings.h).
constexpr std::string_view kCacheConfig = "vllm/config/cache.py CacheConfig @ 002f10e0cfa1373a19a0d2756598a34b700d20e5";
constexpr std::string_view kKvCacheUtils =
    "vllm/v1/core/kv_cache_utils.py get_kv_cache_configs @ 003df2961dd8830c317a61f9745ccd557da9fa06 (the GPU memory "
    "left, unless num_gpu_blocks_override)";
constexpr std::string_view kSchedulerConfig =
    "vllm/config/scheduler.py SchedulerConfig @ 01230b40128e570a58e54e75f7e55c4d5cd9246d";
constexpr std::string_view kScheduler =
    "vllm/v1/core/sched/scheduler.py Scheduler.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06 "
    "(SchedulerConfig.scheduler_reserve_full_isl)";
constexpr std::string_view kVllmConfig =
    "vllm/config/vllm.py VllmConfig.__post_init__ @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164";
constexpr std::string_view kStoreScheduler =
    "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/scheduler.py MooncakeStoreScheduler.__init__ @ "
    "01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103";

std::string_view release_load_failure_policy(const Variant& v) { return to_string(v.load_failure_policy_default); }
std::string_view release_async_scheduling(const Variant& v) {
    return v.async_scheduling_default == AsyncSchedulingDefault::on ? "on" : "off";
}
constexpr std::uint64_t kInt32Max = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

constexpr auto kRoleChoices = enum_names(kKvRoleNames);
constexpr auto kVerdictChoices = enum_names(kVerdictNames);
constexpr std::string_view kConnectorKinds[] = {kConnectorStandIn, kConnectorP2p, kConnectorStore, kConnectorMock};
constexpr auto kFaultKinds = enum_names(kFaultKindNames);
constexpr auto kLoadFailurePolicies = enum_names(kLoadFailurePolicyNames);
// Which kinds a key applies to (KeySpec::kinds).
constexpr std::string_view kOnlyStandIn[] = {kConnectorStandIn};
constexpr std::string_view kOnlyStore[] = {kConnectorStore};
constexpr std::string_view kOnlyMock[] = {kConnectorMock};
constexpr auto kReportKinds = enum_names(kReportKindNames);
constexpr std::string_view kOnlyInvalidBlocks[] = {"invalid_blocks"};
constexpr std::string_view kOnlyStoreDone[] = {"store_done"};
// The fault kinds a key applies to: those `applies` holds for (the trace builder's fault rules).
template <bool (*Applies)(FaultKind)>
constexpr auto fault_kinds_where() {
    constexpr std::size_t n = [] {
        std::size_t count = 0;
        for (const auto& row : kFaultKindNames) count += Applies(row.value) ? 1 : 0;
        return count;
    }();
    std::array<std::string_view, n> out{};
    std::size_t i = 0;
    for (const auto& row : kFaultKindNames)
        if (Applies(row.value)) out[i++] = row.name;
    return out;
}
constexpr auto kRankFaults = fault_kinds_where<fault_names_rank>();
constexpr auto kStepsFaults = fault_kinds_where<fault_has_steps>();
constexpr auto kRequestFaults = fault_kinds_where<fault_names_request>();

// vllm/config: cache_config.block_size, num_gpu_blocks, scheduler_config.*
constexpr Row<EngineConfig> kEngineRows[] = {
    bind<&EngineConfig::block_size>({.name = "block_size", .type = VT::integer, .min = 1,
        .max = limits::kMaxBlockSize, .required = true, .help = "tokens per KV block", .group = SG::sizing,
        .upstream = "16", .upstream_source = kCacheConfig}),
    bind<&EngineConfig::num_blocks>({.name = "num_blocks", .type = VT::integer, .min = 2,
        .max = limits::kMaxBlocks, .required = true, .help = "KV blocks in the pool, including the null block 0",
        .group = SG::sizing, .upstream_source = kKvCacheUtils}),
    bind<&EngineConfig::max_batched_tokens>({.name = "max_batched_tokens", .type = VT::integer, .min = 1,
        .max = limits::kMaxModelLen, .help = "token budget of one step (max_num_batched_tokens)", .group = SG::sizing,
        .upstream = "2048", .upstream_source = kSchedulerConfig}),
    bind<&EngineConfig::max_running>({.name = "max_running", .type = VT::integer, .min = 1,
        .max = limits::kMaxEvents, .help = "running requests at most (max_num_seqs)", .group = SG::sizing,
        .upstream = "128", .upstream_source = kSchedulerConfig}),
    bind<&EngineConfig::max_model_len>({.name = "max_model_len", .type = VT::integer, .min = 2,
        .max = limits::kMaxModelLen, .required = true,
        .help = "prompt plus output tokens of one request at most; the pool must hold one such request "
                "(rule kv_cache_holds_max_model_len)",
        .group = SG::sizing, .upstream_source = kSchedulerConfig}),
    bind<&EngineConfig::chunked_prefill>({.name = "chunked_prefill", .type = VT::boolean,
        .help = "split long prefills over steps; off requires max_batched_tokens >= max_model_len",
        .group = SG::setting, .upstream = "on", .upstream_source = kSchedulerConfig}),
    bind<&EngineConfig::prefix_caching>({.name = "prefix_caching", .type = VT::boolean,
        .help = "reuse cached full blocks with equal token prefixes", .group = SG::setting, .upstream = "on",
        .upstream_source = kCacheConfig}),
    bind<&EngineConfig::long_prefill_threshold>({.name = "long_prefill_threshold", .type = VT::integer,
        .min = 0, .max = limits::kMaxModelLen, .help = "cap on one request's prefill tokens per step; 0 = off",
        .group = SG::setting, .upstream = "0", .upstream_source = kSchedulerConfig}),
    bind<&EngineConfig::reserve_full_isl>({.name = "reserve_full_isl", .type = VT::boolean,
        .help = "scheduler_reserve_full_isl: admit only when the whole sequence fits", .group = SG::setting,
        .upstream = "on", .upstream_source = kScheduler}),
    // KVTransferConfig.kv_load_failure_policy: one per engine, whatever the connector stack.
    bind<&EngineConfig::kv_load_failure_policy>({.name = "kv_load_failure_policy", .type = VT::choice,
        .help = "KVTransferConfig.kv_load_failure_policy: a request whose KV load fails ends FINISHED_ERROR (fail) "
                "or recomputes from its valid prefix (recompute); unset = the variant's "
                "load_failure_policy_default (fail in every release kvsim models)",
        .choices = kLoadFailurePolicies, .group = SG::setting, .upstream_source = "#34896",
        .upstream_for = &release_load_failure_policy},
        +[](const EngineConfig& e) { return e.kv_load_failure_policy.has_value(); }),
    bind<&EngineConfig::async_scheduling>({.name = "async_scheduling", .type = VT::boolean,
        .help = "SchedulerConfig.async_scheduling: schedule step N+1 before step N's output is processed; "
                "unset = the variant's async_scheduling_default (on in every release kvsim models)",
        .optional = true, .group = SG::setting, .upstream_source = kVllmConfig, .upstream_for = &release_async_scheduling},
        +[](const EngineConfig& e) { return e.async_scheduling.has_value(); }),
};

constexpr Row<RunConfig> kRunRows[] = {
    bind<&RunConfig::seed>({.name = "seed", .type = VT::integer, .min = 0, .max = kU64Max,
        .help = "seed of the run's one PRNG"}),
    bind<&RunConfig::max_steps>({.name = "max_steps", .type = VT::integer, .min = 1, .max = limits::kMaxSteps,
        .help = "step limit; every event step must be below it"}),
    bind<&RunConfig::variant>({.name = "variant", .type = VT::variant, .max = kMaxVariantNameLen,
        .help = "upstream variant to model, e.g. v0.29.0 or v0.29.0+pr55066 (see `kvsim variants`)"},
        +[](const RunConfig& r) { return !r.variant.empty(); }),
};

constexpr Row<ConnectorSpec> kConnectorRows[] = {
    bind<&ConnectorSpec::kind>({.name = "kind", .type = VT::choice, .required = true, .positional = true,
        .help = "connector implementation: stand_in (async load after load_delay steps), p2p (MooncakeConnector), "
                "store (MooncakeStoreConnector), mock (upstream's test MockKVConnector)",
        .choices = kConnectorKinds}),
    bind<&ConnectorSpec::role>({.name = "role", .type = VT::choice, .required = true,
        .help = "kv_role of this connector", .choices = kRoleChoices}),
    bind<&ConnectorSpec::load_delay>({.name = "load_delay", .type = VT::integer, .min = 0,
        .max = limits::kMaxDelay, .help = "steps from load start to finished_recving", .kinds = kOnlyStandIn}),
    // MooncakeStoreConnector kv_connector_extra_config
    bind<&ConnectorSpec::load_async>({.name = "load_async", .type = VT::boolean,
        .help = "loads complete asynchronously, reported through finished_recving; off is refused upstream "
                "(rule store_load_async)",
        .kinds = kOnlyStore, .group = SG::setting, .upstream = "on", .upstream_source = kStoreScheduler}),
    bind<&ConnectorSpec::lookup_async>({.name = "lookup_async", .type = VT::boolean,
        .help = "the store lookup may answer in a later step (the request waits)",
        .kinds = kOnlyStore, .group = SG::setting, .upstream = "off", .upstream_source = kStoreScheduler}),
    bind<&ConnectorSpec::enable_lookup>({.name = "enable_lookup", .type = VT::boolean,
        .help = "ask the store how many prompt tokens it already holds", .kinds = kOnlyStore, .group = SG::setting,
        .upstream = "on", .upstream_source = kStoreScheduler}),
    bind<&ConnectorSpec::save_decode_cache>({.name = "save_decode_cache", .type = VT::boolean,
        .help = "also save blocks filled while decoding", .kinds = kOnlyStore, .group = SG::setting,
        .upstream = "off", .upstream_source = kStoreScheduler}),
    // tests/v1/kv_connector/unit/utils.py MockKVConfig. Its matched tokens and defers script the scenario,
    // as store prefixes and faults do (no setting); its load mode is the test double's behaviour.
    bind<&ConnectorSpec::matched>({.name = "matched", .type = VT::integer, .min = 0, .max = limits::kMaxModelLen,
        .help = "matched_tokens: external tokens get_num_new_matched_tokens answers", .kinds = kOnlyMock}),
    bind<&ConnectorSpec::is_async>({.name = "async", .type = VT::boolean,
        .help = "is_async: the matched tokens load asynchronously (the request waits for finished_recving)",
        .kinds = kOnlyMock, .group = SG::test_double}),
    bind<&ConnectorSpec::defer>({.name = "defer", .type = VT::integer, .min = 0, .max = limits::kMaxDelay,
        .help = "num_defers_before_matching: \"not decided yet\" answers per request before matching",
        .kinds = kOnlyMock}),
};

constexpr Row<MultiConnectorSpec> kMultiRows[] = {
    bind<&MultiConnectorSpec::role>({.name = "role", .type = VT::choice, .required = true,
        .help = "the MultiConnector's own kv_role (its top-level kv_transfer_config); each connector line keeps "
                "its own",
        .choices = kRoleChoices}),
};

constexpr Row<WorkerConfig> kWorkersRows[] = {
    bind<&WorkerConfig::ranks>({.name = "ranks", .type = VT::integer, .min = 1,
        .max = static_cast<std::uint64_t>(kMaxRanks), .help = "worker ranks (tensor parallel size)", .group = SG::environment}),
    bind<&WorkerConfig::store_delay_min>({.name = "store_delay_min", .type = VT::integer, .min = 0,
        .max = limits::kMaxDelay, .help = "fewest steps from a store job's start to one rank's report", .group = SG::environment}),
    bind<&WorkerConfig::store_delay_max>({.name = "store_delay_max", .type = VT::integer, .min = 0,
        .max = limits::kMaxDelay, .help = "most steps from a store job's start to one rank's report",
        .not_below = "store_delay_min", .group = SG::environment}),
    bind<&WorkerConfig::load_delay_min>({.name = "load_delay_min", .type = VT::integer, .min = 0,
        .max = limits::kMaxDelay, .help = "fewest steps from a load's start to its completion", .group = SG::environment}),
    bind<&WorkerConfig::load_delay_max>({.name = "load_delay_max", .type = VT::integer, .min = 0,
        .max = limits::kMaxDelay, .help = "most steps from a load's start to its completion",
        .not_below = "load_delay_min", .group = SG::environment}),
    bind<&WorkerConfig::pull_delay>({.name = "pull_delay", .type = VT::integer, .min = 0, .max = limits::kMaxDelay,
        .help = "p2p kv_producer: steps from a finished request to the decode side's pull", .group = SG::environment}),
};

constexpr Row<StoreEntry> kStoreRows[] = {
    bind<&StoreEntry::prefix>({.name = "prefix", .type = VT::name_list, .max = limits::kMaxIdLen, .max_items = 256,
        .required = true, .help = "segments concatenated into a token sequence whose full blocks the store holds"}),
};

constexpr Row<Segment> kSegmentRows[] = {
    bind<&Segment::name>({.name = "name", .type = VT::identifier, .max = limits::kMaxIdLen, .required = true,
        .positional = true, .help = "segment name, unique in the trace"}),
    {.spec = {.name = "len", .type = VT::integer, .min = 1, .max = limits::kMaxSegmentLen, .one_of = "content",
              .help = "generated tokens, derived from the segment name only"},
     .get = +[](const Segment& s) -> ValueView { return static_cast<std::uint64_t>(s.length()); },
     .set = +[](Segment& s, Value&& v) {  // derived once the trace is within its budget (trace_budget.h)
         s.tokens.clear();
         s.pending_len = static_cast<std::int32_t>(as_u64(v));
         s.generated = true;
     },
     .present = +[](const Segment& s) { return s.generated; }},
    {.spec = {.name = "tokens", .type = VT::token_list, .min = 0, .max = kInt32Max,
              .max_items = static_cast<std::size_t>(limits::kMaxSegmentLen), .one_of = "content",
              .help = "explicit token ids"},
     .get = +[](const Segment& s) -> ValueView { return std::span<const std::int32_t>(s.tokens); },
     .set = +[](Segment& s, Value&& v) {
         s.tokens = std::move(std::get<std::vector<std::int32_t>>(v));
         s.pending_len = 0;
         s.generated = false;
     },
     .present = +[](const Segment& s) { return !s.generated; }},
};

constexpr Row<Expectation> kExpectRows[] = {
    bind<&Expectation::variant>({.name = "variant", .type = VT::variant, .max = kMaxVariantNameLen,
        .required = true, .positional = true, .help = "variant the expectation is about; once per variant"}),
    bind<&Expectation::verdict>({.name = "verdict", .type = VT::choice, .required = true, .positional = true,
        .help = "verdict the run must end with", .choices = kVerdictChoices}),
    bind<&Expectation::signature>({.name = "signature", .type = VT::text, .max = kMaxSignatureLen,
        .help = "finding signature the run must report; absent = any"},
        +[](const Expectation& e) { return !e.signature.empty(); }),
    bind<&Expectation::causes>({.name = "causes", .type = VT::name_list, .max = limits::kMaxIdLen, .max_items = 16,
        .help = "registry entries the failure is known as, in the order the classifier removes them (a+b); "
                "absent = not checked"},
        +[](const Expectation& e) { return !e.causes.empty(); }),
};

constexpr Row<ArriveEvent> kArriveRows[] = {
    bind<&ArriveEvent::request_id>({.name = "id", .type = VT::identifier, .max = limits::kMaxIdLen,
        .required = true, .positional = true, .help = "request id, unique in the trace"}),
    bind<&ArriveEvent::prompt>({.name = "prompt", .type = VT::name_list, .max = limits::kMaxIdLen,
        .max_items = 256, .required = true, .help = "segments concatenated into the prompt"}),
    bind<&ArriveEvent::max_tokens>({.name = "max_tokens", .type = VT::integer, .min = 1,
        .max = limits::kMaxModelLen, .required = true, .help = "output tokens before the request stops"}),
    bind<&ArriveEvent::remote_prefill>({.name = "remote_prefill", .type = VT::boolean,
        .help = "kv_transfer_params do_remote_prefill: load the prompt's KV through the connector"},
        +[](const ArriveEvent& e) { return e.remote_prefill; }),  // printed only when on
    bind<&ArriveEvent::remote_decode>({.name = "remote_decode", .type = VT::boolean,
        .help = "kv_transfer_params do_remote_decode: send the KV to a decode engine when the request finishes"},
        +[](const ArriveEvent& e) { return e.remote_decode; }),  // printed only when on
    bind<&ArriveEvent::external>({.name = "external", .type = VT::integer, .min = 0, .max = limits::kMaxModelLen,
        .help = "mock connector: this request's matched tokens; absent (-1) = the connector's matched"},
        +[](const ArriveEvent& e) { return e.external >= 0; }),  // printed only when set
};

constexpr Row<AbortEvent> kAbortRows[] = {
    bind<&AbortEvent::request_id>({.name = "id", .type = VT::identifier, .max = limits::kMaxIdLen,
        .required = true, .positional = true, .help = "request to abort; must arrive on an earlier line"}),
};

constexpr Row<FaultEvent> kFaultRows[] = {
    bind<&FaultEvent::kind>({.name = "kind", .type = VT::choice, .required = true, .positional = true,
        .help = "store_delay: later store jobs on rank take steps longer; store_fail: the next store job on "
                "rank writes nothing; load_fail: the request's load fails; lookup_pending: the request's store "
                "lookup stays pending for steps",
        .choices = kFaultKinds}),
    bind<&FaultEvent::rank>({.name = "rank", .type = VT::integer, .min = 0,
        .max = static_cast<std::uint64_t>(kMaxRanks - 1), .required = true,
        .help = "worker rank; below workers.ranks", .kinds = kRankFaults}),
    bind<&FaultEvent::steps>({.name = "steps", .type = VT::integer, .min = 1, .max = limits::kMaxDelay,
        .required = true, .help = "extra steps (store_delay) or pending steps (lookup_pending)",
        .kinds = kStepsFaults}),
    bind<&FaultEvent::request_id>({.name = "request", .type = VT::identifier, .max = limits::kMaxIdLen,
        .required = true, .help = "request id; must arrive on an earlier line", .kinds = kRequestFaults}),
};

constexpr Row<ReportEvent> kReportRows[] = {
    bind<&ReportEvent::kind>({.name = "kind", .type = VT::choice, .required = true, .positional = true,
        .help = "finished_recving: the load finished; finished_sending: the blocks may be freed; failed_recving: "
                "the load finished and its blocks without a hash are invalid; invalid_blocks: the blocks at index "
                "are invalid; store_done: rank's copy of the request's oldest unreported store job completes",
        .choices = kReportKinds}),
    bind<&ReportEvent::request_id>({.name = "id", .type = VT::identifier, .max = limits::kMaxIdLen,
        .required = true, .positional = true, .help = "request reported on; must arrive on an earlier line"}),
    bind<&ReportEvent::index>({.name = "index", .type = VT::token_list, .min = 0,
        .max = static_cast<std::uint64_t>(limits::kMaxBlocks - 1), .max_items = 4096, .required = true,
        .help = "positions in the request's block table", .kinds = kOnlyInvalidBlocks}),
    bind<&ReportEvent::rank>({.name = "rank", .type = VT::integer, .min = 0,
        .max = static_cast<std::uint64_t>(kMaxRanks - 1), .required = true,
        .help = "worker rank; below workers.ranks", .kinds = kOnlyStoreDone}),
};

constexpr Row<StopEvent> kStopRows[] = {
    bind<&StopEvent::request_id>({.name = "id", .type = VT::identifier, .max = limits::kMaxIdLen,
        .required = true, .positional = true, .help = "request that samples EOS; must arrive on an earlier line"}),
};

// "@STEP": the step an event applies before schedule() of; also below run.max_steps.
constexpr KeySpec kStep{.name = "step", .type = VT::integer, .min = 0,
                        .max = static_cast<std::uint64_t>(limits::kMaxSteps - 1),
                        .help = "engine step the event is applied at, before schedule()"};

constexpr LineSchema<EngineConfig> kEngine{.keyword = "engine",
                                           .field_prefix = "engine",
                                           .help = "engine configuration; exactly once",
                                           .rows = kEngineRows};
constexpr LineSchema<RunConfig> kRun{
    .keyword = "run", .field_prefix = "run", .help = "run parameters; at most once", .rows = kRunRows};
constexpr LineSchema<ConnectorSpec> kConnector{
    .keyword = "connector",
    .field_prefix = "connector",
    .help = "one connector; p2p and store lines together form a MultiConnector, children in file order",
    .rows = kConnectorRows,
    .kind_key = "kind"};
constexpr LineSchema<MultiConnectorSpec> kMulti{
    .keyword = "multi",
    .field_prefix = "multi",
    .help = "the connector lines form a MultiConnector with this top-level config; at most once, required "
            "with two or more connector lines",
    .rows = kMultiRows};
constexpr LineSchema<WorkerConfig> kWorkers{.keyword = "workers",
                                            .field_prefix = "workers",
                                            .help = "worker ranks and completion delays; at most once",
                                            .rows = kWorkersRows};
constexpr LineSchema<StoreEntry> kStore{.keyword = "store",
                                        .field_prefix = "store",
                                        .help = "the external KV store holds the full blocks of this token sequence",
                                        .rows = kStoreRows};
constexpr LineSchema<Segment> kSegment{.keyword = "segment",
                                       .field_prefix = "segment",
                                       .help = "a named run of prompt tokens",
                                       .rows = kSegmentRows};
constexpr LineSchema<Expectation> kExpect{.keyword = "expect",
                                          .field_prefix = "expect",
                                          .help = "the verdict a variant must give",
                                          .rows = kExpectRows};
constexpr LineSchema<ArriveEvent> kArrive{.keyword = "arrive",
                                          .field_prefix = "event",
                                          .help = "a request arrives before schedule() of STEP",
                                          .rows = kArriveRows};
constexpr LineSchema<AbortEvent> kAbort{.keyword = "abort",
                                        .field_prefix = "event",
                                        .help = "a request is aborted before schedule() of STEP",
                                        .rows = kAbortRows};
constexpr LineSchema<FaultEvent> kFault{.keyword = "fault",
                                        .field_prefix = "event",
                                        .help = "a worker or store fault, injected before schedule() of STEP",
                                        .rows = kFaultRows,
                                        .kind_key = "kind"};
constexpr LineSchema<ReportEvent> kReport{.keyword = "report",
                                          .field_prefix = "event",
                                          .help = "a worker report in this step's output, instead of a drawn delay",
                                          .rows = kReportRows,
                                          .kind_key = "kind"};
constexpr LineSchema<StopEvent> kStop{.keyword = "stop",
                                      .field_prefix = "event",
                                      .help = "the request samples EOS in this step's output (FINISHED_STOPPED)",
                                      .rows = kStopRows};
constexpr LineSchema<ResetPrefixCacheEvent> kResetPrefixCache{
    .keyword = "reset_prefix_cache",
    .field_prefix = "event",
    .help = "Scheduler.reset_prefix_cache() before schedule() of STEP; fails while any block is in use",
    .rows = {}};

// ---- value checks -------------------------------------------------------------------------

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

bool all_of(std::string_view s, bool (*pred)(char)) {
    for (char c : s)
        if (!pred(c)) return false;
    return true;
}

std::string join(std::span<const std::string_view> items, std::string_view sep) {
    std::string out;
    for (std::string_view s : items) {
        if (!out.empty()) out += sep;
        out += s;
    }
    return out;
}

std::optional<std::string> check_integer(const KeySpec& spec, const ValueView& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v); i && *i < 0)
        return fmt::format("value {} below minimum {}", *i, spec.min);
    const std::uint64_t u = as_u64(v);
    if (u < spec.min) return fmt::format("value {} below minimum {}", u, spec.min);
    if (u > spec.max) return fmt::format("value {} above maximum {}", u, spec.max);
    return std::nullopt;
}

std::optional<std::string> check_identifier(const KeySpec& spec, std::string_view s) {
    if (s.empty() || s.size() > spec.max || !all_of(s, is_name_char))
        return fmt::format("expected a name of 1 to {} characters from [A-Za-z0-9_.-], got {}", spec.max, quote(s));
    return std::nullopt;
}

std::optional<std::string> check_variant(const KeySpec& spec, std::string_view s) {
    if (s.empty() || s.size() > spec.max || !all_of(s, [](char c) { return is_name_char(c) || c == '+'; }))
        return fmt::format("expected a variant name such as v0.30.0 or v0.29.0+pr55066, got {}", quote(s));
    std::string error;
    if (!resolve_variant(s, &error)) return error;
    return std::nullopt;
}

std::optional<std::string> check_text(const KeySpec& spec, std::string_view s) {
    if (s.empty() || s.size() > spec.max || !all_of(s, [](char c) { return c > ' ' && c < 0x7f; }))
        return fmt::format("expected 1 to {} printable characters without spaces, got {}", spec.max, quote(s));
    return std::nullopt;
}

template <class List>
std::optional<std::string> check_count(const KeySpec& spec, const List& items) {
    if (items.empty()) return std::string("empty list");
    if (items.size() > spec.max_items)
        return fmt::format("{} elements, more than the maximum {}", items.size(), spec.max_items);
    return std::nullopt;
}

// Digits only, no sign, no leading zeros; overflow is reported as out of range.
std::optional<Value> parse_integer(const KeySpec& spec, std::string_view text, std::string* error) {
    if (text.empty() || !all_of(text, [](char c) { return c >= '0' && c <= '9'; })) {
        *error = fmt::format("expected a decimal integer, got {}", quote(text));
        return std::nullopt;
    }
    if (text.size() > 1 && text[0] == '0') {
        *error = fmt::format("expected a decimal integer without leading zeros, got {}", quote(text));
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (char c : text) {
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (kU64Max - digit) / 10) {
            const std::string shown = text.size() > 40 ? std::string(text.substr(0, 40)) + "..." : std::string(text);
            *error = fmt::format("value {} above maximum {}", shown, spec.max);
            return std::nullopt;
        }
        value = value * 10 + digit;
    }
    return Value{value};
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t pos = text.find(sep, start);
        parts.push_back(text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) return parts;
        start = pos + 1;
    }
}

std::optional<Value> parse_syntax(const KeySpec& spec, std::string_view text, std::string* error) {
    switch (spec.type) {
        case VT::integer: return parse_integer(spec, text, error);
        case VT::boolean:
            if (text == "on") return Value{true};
            if (text == "off") return Value{false};
            *error = fmt::format("expected on or off, got {}", quote(text));
            return std::nullopt;
        case VT::choice:
        case VT::identifier:
        case VT::variant:
        case VT::text: return Value{std::string(text)};
        case VT::token_list: {
            const auto parts = split(text, ',');
            if (parts.size() > spec.max_items) {
                *error = fmt::format("{} elements, more than the maximum {}", parts.size(), spec.max_items);
                return std::nullopt;
            }
            std::vector<std::int32_t> tokens;
            for (std::size_t i = 0; i < parts.size(); ++i) {
                std::string element_error;
                const auto v = parse_integer(spec, parts[i], &element_error);
                if (!v) {
                    *error = fmt::format("element {}: {}", i + 1, element_error);
                    return std::nullopt;
                }
                if (auto bad = check_integer(spec, view_of(*v))) {
                    *error = fmt::format("element {}: {}", i + 1, *bad);
                    return std::nullopt;
                }
                tokens.push_back(static_cast<std::int32_t>(as_u64(*v)));
            }
            return Value{std::move(tokens)};
        }
        case VT::name_list: {
            std::vector<std::string> names;
            for (std::string_view part : split(text, '+')) names.emplace_back(part);
            return Value{std::move(names)};
        }
    }
    *error = "unknown value type";
    return std::nullopt;
}

std::string_view type_text(const KeySpec& spec, std::string& scratch) {
    switch (spec.type) {
        case VT::integer: return "N";
        case VT::boolean: return "on|off";
        case VT::choice: return scratch = join(spec.choices, "|");
        case VT::identifier: return "NAME";
        case VT::variant: return "VARIANT";
        case VT::text: return "TEXT";
        case VT::token_list: return "T,T,...";
        case VT::name_list: return "SEG+SEG...";
    }
    return "?";
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    return out;
}

template <class T>
void describe(const LineSchema<T>& schema, bool event, std::string& out) {
    std::string head = event ? fmt::format("@STEP {}", schema.keyword) : std::string(schema.keyword);
    bool has_keys = false;
    for (const Row<T>& row : schema.rows) {
        has_keys = has_keys || !row.spec.positional;
        if (row.spec.positional) head += " " + upper(row.spec.name);
    }
    out += fmt::format("{}{}\n    {}\n", head, has_keys ? " KEY=VALUE..." : "", schema.help);
    const T defaults{};
    for (const Row<T>& row : schema.rows) {
        const KeySpec& k = row.spec;
        std::string scratch;
        std::string left = k.positional ? fmt::format("{} ({})", k.name, type_text(k, scratch))
                                         : fmt::format("{}={}", k.name, type_text(k, scratch));
        std::string rule = k.kinds.empty() ? std::string() : fmt::format("{} only: ", join(k.kinds, ", "));
        if (k.positional) rule += "positional";
        else if (k.required) rule += "required";
        else if (k.optional) rule += "optional";
        else if (!k.one_of.empty()) {
            std::vector<std::string_view> group;
            for (const Row<T>& other : schema.rows)
                if (other.spec.one_of == k.one_of) group.push_back(other.spec.name);
            rule += fmt::format("exactly one of {}", join(group, ", "));
        } else {
            const ValueView d = row.get(defaults);
            const auto* text = std::get_if<std::string_view>(&d);
            rule += text && text->empty() ? std::string("optional") : fmt::format("default {}", format_value(k, d));
        }
        if (k.type == VT::integer) rule += fmt::format("; {}..{}", k.min, k.max);
        if (!k.not_below.empty()) rule += fmt::format("; >= {}", k.not_below);
        if (k.type == VT::token_list) rule += fmt::format("; 1..{} ids in {}..{}", k.max_items, k.min, k.max);
        out += fmt::format("    {:<28} {}. {}\n", left, rule, k.help);
    }
}

}  // namespace

const LineSchema<EngineConfig>& engine_schema() { return kEngine; }
const LineSchema<RunConfig>& run_schema() { return kRun; }
const LineSchema<ConnectorSpec>& connector_schema() { return kConnector; }
const LineSchema<MultiConnectorSpec>& multi_schema() { return kMulti; }
const LineSchema<Segment>& segment_schema() { return kSegment; }
const LineSchema<Expectation>& expect_schema() { return kExpect; }
const LineSchema<ArriveEvent>& arrive_schema() { return kArrive; }
const LineSchema<AbortEvent>& abort_schema() { return kAbort; }
const LineSchema<FaultEvent>& fault_schema() { return kFault; }
const LineSchema<ReportEvent>& report_schema() { return kReport; }
const LineSchema<StopEvent>& stop_schema() { return kStop; }
const LineSchema<ResetPrefixCacheEvent>& reset_prefix_cache_schema() { return kResetPrefixCache; }
const LineSchema<WorkerConfig>& workers_schema() { return kWorkers; }
const LineSchema<StoreEntry>& store_schema() { return kStore; }

const KeySpec& event_step_spec() { return kStep; }

std::vector<std::string_view> event_kinds() {
    return {kArrive.keyword, kAbort.keyword, kFault.keyword, kReport.keyword, kStop.keyword, kResetPrefixCache.keyword};
}

bool key_applies(const KeySpec& spec, std::string_view kind) {
    if (spec.kinds.empty()) return true;
    for (std::string_view k : spec.kinds)
        if (k == kind) return true;
    return false;
}

std::string kinds_only_message(std::string_view keyword, const KeySpec& spec) {
    return fmt::format("applies to {} kind{} {} only", keyword, spec.kinds.size() == 1 ? "" : "s",
                       join(spec.kinds, ", "));
}

std::optional<Value> parse_value(const KeySpec& spec, std::string_view text, std::string* error) {
    if (text.empty()) {
        *error = "empty value";
        return std::nullopt;
    }
    auto value = parse_syntax(spec, text, error);
    if (!value) return std::nullopt;
    if (auto bad = check_value(spec, view_of(*value))) {
        *error = std::move(*bad);
        return std::nullopt;
    }
    return value;
}

bool same_value(const ValueView& a, const ValueView& b) {
    if (a.index() != b.index()) return false;
    return std::visit(
        [&](const auto& x) {
            using V = std::decay_t<decltype(x)>;
            const V& y = std::get<V>(b);
            if constexpr (std::is_same_v<V, std::span<const std::int32_t>> || std::is_same_v<V, std::span<const std::string>>)
                return std::equal(x.begin(), x.end(), y.begin(), y.end());
            else return x == y;
        },
        a);
}

std::optional<std::string> check_value(const KeySpec& spec, const ValueView& value) {
    switch (spec.type) {
        case VT::integer: return check_integer(spec, value);
        case VT::boolean: return std::nullopt;
        case VT::choice: {
            const auto s = std::get<std::string_view>(value);
            for (std::string_view c : spec.choices)
                if (c == s) return std::nullopt;
            return fmt::format("expected one of {}, got {}", join(spec.choices, ", "), quote(s));
        }
        case VT::identifier: return check_identifier(spec, std::get<std::string_view>(value));
        case VT::variant: return check_variant(spec, std::get<std::string_view>(value));
        case VT::text: return check_text(spec, std::get<std::string_view>(value));
        case VT::token_list: {
            const auto tokens = std::get<std::span<const std::int32_t>>(value);
            if (auto bad = check_count(spec, tokens)) return bad;
            for (std::size_t i = 0; i < tokens.size(); ++i)
                if (auto bad = check_integer(spec, ValueView{std::int64_t{tokens[i]}}))
                    return fmt::format("element {}: {}", i + 1, *bad);
            return std::nullopt;
        }
        case VT::name_list: {
            const auto names = std::get<std::span<const std::string>>(value);
            if (auto bad = check_count(spec, names)) return bad;
            for (std::size_t i = 0; i < names.size(); ++i)
                if (auto bad = check_identifier(spec, names[i])) return fmt::format("element {}: {}", i + 1, *bad);
            return std::nullopt;
        }
    }
    return std::string("unknown value type");
}

// Appends in place (no temporary string per value): the fuzz mutator prints every trace it makes.
void append_value(std::string& out, const KeySpec& spec, const ValueView& value) {
    auto to = std::back_inserter(out);
    switch (spec.type) {
        case VT::integer:
            if (const auto* i = std::get_if<std::int64_t>(&value)) fmt::format_to(to, FMT_COMPILE("{}"), *i);
            else fmt::format_to(to, FMT_COMPILE("{}"), as_u64(value));
            return;
        case VT::boolean: out += std::get<bool>(value) ? "on" : "off"; return;
        case VT::choice:
        case VT::identifier:
        case VT::variant:
        case VT::text: out += std::get<std::string_view>(value); return;
        case VT::token_list:
            fmt::format_to(to, FMT_COMPILE("{}"), fmt::join(std::get<std::span<const std::int32_t>>(value), ","));
            return;
        case VT::name_list:
            fmt::format_to(to, FMT_COMPILE("{}"), fmt::join(std::get<std::span<const std::string>>(value), "+"));
            return;
    }
    out += '?';
}

std::string format_value(const KeySpec& spec, const ValueView& value) {
    std::string out;
    append_value(out, spec, value);
    return out;
}

std::string quote(std::string_view text) {
    constexpr std::size_t kShown = 40;
    std::string out = "'";
    for (std::size_t i = 0; i < text.size() && i < kShown; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (is_printable_ascii(c) && c != '\\' && c != '\'') out += static_cast<char>(c);
        else append_escaped_byte(out, c);
    }
    out += text.size() > kShown ? "'..." : "'";
    return out;
}

std::string format_help() {
    std::string out = fmt::format(
        "kvsim trace format, version {0}\n\n"
        "Line oriented text. Tokens are separated by spaces or tabs; a '#' at the start of a line or\n"
        "after whitespace starts a comment; blank lines are ignored; one trailing CR is tolerated; a\n"
        "line is at most {1} bytes and holds no control characters. Each line is a keyword, its\n"
        "positional arguments, then KEY=VALUE arguments in any order, each key at most once.\n"
        "Integers are plain decimal digits (no sign, no leading zeros); booleans are on|off; names\n"
        "use [A-Za-z0-9_.-]. Lines may come in any order after the header; events keep file order.\n\n"
        "{2} {0}\n    header: the first non-blank, non-comment line\n",
        kTraceFormatVersion, kMaxLineBytes, kTraceMagic);
    describe(kEngine, false, out);
    describe(kRun, false, out);
    describe(kMulti, false, out);
    describe(kConnector, false, out);
    describe(kWorkers, false, out);
    describe(kSegment, false, out);
    describe(kStore, false, out);
    describe(kExpect, false, out);
    describe(kArrive, true, out);
    describe(kAbort, true, out);
    describe(kFault, true, out);
    describe(kReport, true, out);
    describe(kStop, true, out);
    describe(kResetPrefixCache, true, out);
    out += check_format_help();
    out += fmt::format(
        "\nA key marked \"KIND only\" is an error on a line of another kind.\n"
        "Connectors: at most one of each kind; stand_in stands alone, p2p, store and mock may combine\n"
        "into a MultiConnector (children in file order), whose `multi` line gives its own kv_role.\n"
        "Events: STEP is 0..{} and below run.max_steps; steps never decrease in file order.\n"
        "A prompt has 1 to max_model_len-1 tokens, a store prefix 1 to max_model_len; every segment\n"
        "they name must be defined. remote_prefill=on needs a p2p or stand_in connector,\n"
        "remote_decode=on a p2p connector with role kv_producer or kv_both (not both on one request).\n"
        "store lines and store_delay, store_fail, lookup_pending faults need a store connector;\n"
        "load_fail needs any connector. A fault's rank is below workers.ranks.\n"
        "report needs a connector, external a mock connector; report, stop and abort name a request\n"
        "that arrives on an earlier line. An arrive may reuse the id of a request stopped or aborted\n"
        "on an earlier line (the run skips it while the old request is still alive).\n"
        "Limits: {} segments, {} store lines, {} events, {} expect lines.\n",
        limits::kMaxSteps - 1, limits::kMaxSegments, kMaxStoreEntries, limits::kMaxEvents, kMaxExpectations);
    out += budget_help();
    out += config_rules_help();
    return out;
}

}  // namespace kvsim
