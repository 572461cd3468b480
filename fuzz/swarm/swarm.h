#pragma once
// Swarm-style random traces for `kvsim explore` (fuzz/README.md, Exploring).
//
// Swarm testing (Groce et al., ISSTA 2012; TigerBeetle's VOPR): instead of one fixed mix of
// features, every seed first draws its own knobs (connector stack and roles, pool pressure,
// block size, chunking, prefix sharing, store contents, arrival pattern, abort and fault
// rates), then a small trace under those knobs. Some seeds starve the pool, some never abort,
// some flood one fault kind: each seed explores a different corner, instead of all of them
// averaging to the same middle.
//
// Every random choice comes from the run's Prng (sim/common/prng.h), never from a
// std::*_distribution, so a seed gives the same trace on every compiler and library:
// trace_for_seed(S, options) is the reproduction contract of `kvsim explore --seed S`.
//
// Every generated trace is valid (validate_trace accepts it; it round-trips through
// print_trace/parse_trace), is a configuration upstream accepts under every variant
// (sim/trace/config_rules.h: asynchronous store loads, a MultiConnector's own kv_role, a pool that holds
// one request of max_model_len tokens, a budget of at least max_num_seqs tokens), and follows the
// passable-trace rules of sim/trace/trace_builder.h; faults also fall in an early window, so a liveness
// phase without faults follows. A load, a P2P receive or a store job lands within its own step (delay 0,
// a transfer faster than a step) in about half the seeds.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/common/prng.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_builder.h"

namespace kvsim {

// The kv_role every generated connector gets: `any` draws one per connector.
enum class RoleChoice { any, kv_consumer, kv_both, kv_producer };
inline constexpr EnumNames<RoleChoice, 4> kRoleChoiceNames = {{
    {RoleChoice::any, "any"},
    {RoleChoice::kv_consumer, "kv_consumer"},
    {RoleChoice::kv_both, "kv_both"},
    {RoleChoice::kv_producer, "kv_producer"},
}};
std::string_view to_string(RoleChoice choice);
std::optional<RoleChoice> parse_role_choice(std::string_view text);

struct SwarmOptions {
    RoleChoice role = RoleChoice::any;
    // Written to the trace's run line (empty: none). It changes no draw: the same seed gives
    // the same trace under every variant, apart from that line.
    std::string variant;
};

enum class ArrivalPattern { burst, steady, random };
inline constexpr EnumNames<ArrivalPattern, 3> kArrivalPatternNames = {{
    {ArrivalPattern::burst, "burst"},
    {ArrivalPattern::steady, "steady"},
    {ArrivalPattern::random, "random"},
}};
std::string_view to_string(ArrivalPattern pattern);

// The per-seed knobs. Percentages are 0..100.
struct SwarmConfig {
    std::uint64_t run_seed = 1;  // the trace's `run seed=`; trace_for_seed sets it to the seed
    std::string variant;         // the trace's `run variant=` (may be empty)

    // Connectors.
    ConnectorStack stack = ConnectorStack::store;
    KvRole p2p_role = KvRole::kv_consumer;
    KvRole store_role = KvRole::kv_consumer;
    // The MultiConnector's own kv_role (a stack of two connectors): the top-level kv_transfer_config.
    KvRole multi_role = KvRole::kv_both;
    bool save_decode_cache = false;
    bool lookup_async = false;
    bool enable_lookup = true;

    // Worker.
    int ranks = 1;
    int store_delay_min = 1;
    int store_delay_max = 1;
    int load_delay_min = 1;
    int load_delay_max = 1;
    int pull_delay = 1;

    // Engine.
    int block_size = 16;
    // num_blocks relative to the requests' demand (num_blocks_for_demands): roomy fits everyone
    // at once, starved the largest request alone (preemption, allocation failure, admission stalls).
    PoolPressure pressure = PoolPressure::roomy;
    bool chunked_prefill = true;
    bool prefix_caching = true;
    bool reserve_full_isl = true;
    int max_batched_tokens = 2048;  // raised to max_model_len when chunked_prefill is off
    int long_prefill_threshold = 0;
    int max_running = 16;
    int model_len_slack = 256;  // max_model_len = longest prompt + 1 + slack (0: requests hit the length cap)

    // Requests.
    int num_requests = 1;
    int num_prefixes = 1;       // shared prompt segments p0..p{n-1}
    int max_prefix_blocks = 2;  // a shared prefix has 1..max_prefix_blocks full blocks (+ sometimes a partial one)
    int max_suffix_tokens = 8;  // each request's own segment q<i>: 1..max_suffix_tokens tokens
    int max_output_tokens = 8;
    int share_pct = 50;           // a prompt starts with a shared prefix
    int store_prefix_pct = 50;    // a shared prefix is in the store
    int store_prompt_pct = 0;     // a whole prompt (prefix + own segment) is in the store
    int remote_prefill_pct = 0;   // needs a p2p connector that is not kv_producer
    int remote_decode_pct = 0;    // needs a p2p connector that is kv_producer or kv_both
    ArrivalPattern arrival = ArrivalPattern::burst;
    int arrival_gap = 1;          // steady: the gap; random: the largest gap
    int abort_pct = 0;

    // Faults, only at steps below fault_window (then a liveness phase).
    int store_delay_pct = 0;     // per rank
    int store_fail_pct = 0;      // per rank
    int load_fail_pct = 0;       // per request
    int lookup_pending_pct = 0;  // per request
    int fault_window = 0;

    // The engine's kv_load_failure_policy; nullopt leaves it unstated (the variant's default). Drawn
    // after the trace, so the rest of a seed's trace does not depend on it.
    std::optional<LoadFailurePolicy> kv_load_failure_policy = std::nullopt;
    // The engine's async_scheduling, drawn last (after the policy) and always stated, so that a
    // seed's trace says its mode whatever the variant's default.
    std::optional<bool> async_scheduling = std::nullopt;

    bool has_p2p() const { return kvsim::has_p2p(stack); }
    bool has_store() const { return kvsim::has_store(stack); }
    bool operator==(const SwarmConfig&) const = default;
};

// Draws one seed's knobs.
SwarmConfig draw_swarm(Prng& prng, const SwarmOptions& options);
// Draws a trace under the knobs; validate_trace accepts it.
Trace generate_trace(Prng& prng, const SwarmConfig& config);
// The engine's kv_load_failure_policy: unstated (the release default) half the time, else
// recompute or fail.
std::optional<LoadFailurePolicy> draw_load_failure_policy(Prng& prng);
// The engine's async_scheduling: on half the time, else off (always stated).
bool draw_async_scheduling(Prng& prng);
// One Prng(seed): draw_swarm, generate_trace, draw_load_failure_policy, then draw_async_scheduling,
// with `run seed=<seed>`.
Trace trace_for_seed(std::uint64_t seed, const SwarmOptions& options);
// The same with its knobs, for a header comment.
struct SwarmCase {
    SwarmConfig config;
    Trace trace;
};
SwarmCase swarm_case_for_seed(std::uint64_t seed, const SwarmOptions& options);

// One line naming the knobs (no newline), e.g. for a `#` comment above a written trace.
std::string describe(const SwarmConfig& config);

}  // namespace kvsim
