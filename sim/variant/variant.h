#pragma once
// A variant = the upstream release or patch being modelled, as a set of behaviour
// flags. Code branches on flags, never on names (sim/README.md, Variants).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/enum_names.h"
#include "sim/variant/flag_reads.h"

namespace kvsim {

// BlockPool.free_blocks: where freed blocks re-enter the free queue.
enum class FreeOrder {
    append_all,        // classic: everything to the tail, in the order given
    fresh_head,        // #42656: unhashed -> head, hashed -> tail; caching off -> tail (#48017)
    fresh_head_lifo,   // #51482: as fresh_head, but caching off -> everything to the head
};

// Which requests the core snapshots into KVConnectorBlockState before
// build_connector_meta.
enum class SnapshotRule {
    none,             // no KVConnectorBlockState (pre-#51358)
    eager,            // #51358 (v0.29.0): new + cached-with-new-blocks (+ boundary ids)
    every_scheduled,  // #54853: every id in num_scheduled_tokens (+ boundary ids)
};

// MooncakeStoreScheduler._apply_current_save_block_ids on a save without a snapshot entry.
enum class StaleSave {
    tracker_ids,         // pre-#51358: no check, the tracker's append-only ids are used
    assert_missing,      // #51358: AssertionError, the engine dies
    drop_warn_rollback,  // #55066: warn once, roll the watermark back, drop the save
};

// Pending-load branch of MooncakeStoreScheduler.build_connector_meta.
enum class PendingLoadGuard { off, on /* #54643: skip a LoadSpec without can_load */ };
enum class PendingSkipSave { none, is_consumer /* the fix seed 000 rejected */ };

// What MultiConnector.update_state_after_alloc gives the children that did not win.
enum class MultiLoserBlocks { empty, real /* #46865 */ };

// How a store save keeps its blocks alive until the worker has read them.
enum class SaveBlockRefs { delay_free, store_job_pins /* #52372 */ };

// KVTransferConfig.kv_load_failure_policy: what the scheduler does with a request whose KV load
// reported invalid blocks. The trace may state it (engine line); otherwise the release's default
// (Variant::load_failure_policy_default) applies.
enum class LoadFailurePolicy { recompute /* #26813 */, fail /* #26813; the default from #34896 */ };
inline constexpr EnumNames<LoadFailurePolicy, 2> kLoadFailurePolicyNames = {{
    {LoadFailurePolicy::recompute, "recompute"},
    {LoadFailurePolicy::fail, "fail"},
}};
std::string_view to_string(LoadFailurePolicy policy);
std::optional<LoadFailurePolicy> parse_load_failure_policy(std::string_view text);

// The fixes of kvsim's own findings (corpus/findings/): each flag's first value is upstream's
// behaviour at the newest release, the second the fix patch.
// MooncakeConnector's cleanup pull for a request finished before allocation: reported to the
// scheduler in finished_recving, or silent (#50565, open: notify_scheduler=False).
enum class P2PAbortPull { reported, silent };
// A notify-only pull queued by update_state_after_alloc with no external tokens: reported, or
// reported only while the request awaits this connector's KV (NIXL's rule, #56640).
enum class P2PEmptyPull { reported, only_when_loading };
// A fully failed async load (nothing valid): the request stays in _inflight_prefills, or is discarded.
enum class FailedLoadInflight { kept, discarded };
// Waiting phase: an async load behind a skipped request that holds no blocks is admitted, or
// deferred for the step (#57841, open).
enum class AsyncLoadBehindBlockless { admitted, deferred };
// Running phase: a victim whose preemption frees nothing because store jobs pin its blocks is
// preempted anyway, or stops the allocation retry (#49675's guard, extended to store-job pins).
enum class PinnedVictim { preempted, stops_retry };
// Running phase: a request that the allocation retry reaches as its own victim is preempted, or waits
// for the step's store jobs when blocks only their pins hold would cover what it lacks (kvsim fix).
enum class PinnedSelfVictim { preempted, waits_for_pins };
// Waiting phase: a request whose async load failed with nothing valid (recompute policy) and whose
// blocks were freed stays where it was in skipped_waiting, or re-enters waiting at the front, behind
// every skipped request that still holds blocks (#57841's invariant, which its limits leave open
// for the recompute policy).
enum class BlocklessFailedLoad { stays_skipped, requeued_waiting };
// Async scheduling, recompute policy: a request rewound by a failed sync load keeps the output
// placeholders of the steps in flight (issue #45138), or they are rolled back: the frames of steps in
// flight other than the processed one are discarded (#45430's rule, closed unmerged), or all but one of
// them whether or not the processed output carries the request (#49252, open).
enum class FailedLoadPlaceholders { kept, rolled_back, rolled_back_but_one };
// Scheduler._update_waiting_for_remote_kv, failed branch: a request whose invalid blocks another request of the
// same scan marked keeps its whole count, the full prompt after a full-prompt load (upstream), or gives back the
// last token as the success branch does, so it can sample (kvsim fix).
enum class FailedLoadFullPrompt { kept, capped };
// failed_load_placeholders=rolled_back: a running request rewound with every token still counted computed (a
// sharer whose invalid blocks an earlier request marked keeps its count before the processed step) has had its
// sampled token and its placeholders dropped, so it has nothing left to schedule (the proposal), or gives back
// its last token to compute again, as after a full-prompt hit (kvsim fix).
enum class RollbackFullPrompt { stranded, capped };

// SchedulerConfig.async_scheduling when the trace does not state it: off, or on as vllm/config/vllm.py
// VllmConfig.__post_init__ resolves None where nothing is incompatible (#27614; every modelled release).
enum class AsyncSchedulingDefault { off, on };
// Scheduler._free_request_blocks: a freed or preempted request's blocks return to the pool at once, or,
// with more than one batch in flight and a KV consumer, once the fence step's output is processed (#45357).
enum class DeferredBlockFree { immediate, fenced };
// Which connector stacks get #45357's fenced frees: those with a KV consumer (kv_consumer or kv_both), as
// upstream keys it on KVTransferConfig.is_kv_consumer, or also a kv_producer stack whose MooncakeStoreConnector
// looks prompts up and loads them (kvsim fix for the finding inflight_write_producer_store_load).
enum class DeferredFreeScope { kv_consumer, any_loader };
// Running phase: a victim whose block free is fenced is preempted anyway (the retry gains nothing), or
// stops the allocation retry (#49675, issue #49674).
enum class FencedVictim { preempted, stops_retry };
// Waiting phase: requests parked in WAITING_FOR_REMOTE_KVS count toward nothing (every release), or toward
// max_num_seqs and the step's token budget, and in-flight loads cap later async loads (#42568, open).
enum class AsyncLoadAccounting { uncounted, counted };
// Waiting phase: a request that cannot be admitted (its allocation fails, or the #42568 request limit) stops the
// scan (every release), or is skipped for the step while a queued request holds blocks, so a finished load behind
// it is still promoted (#45406, closed; as read at a branch commit of upstream's scheduler).
enum class BlockedHead { stops_scan, skipped_for_holders };
// Async scheduling: the output in flight of a request preempted meanwhile. Its placeholders stay and the frame,
// when processed, is delivered and consumes them (before #48245); or the preemption zeroes the placeholders and
// marks the tokens in flight stale: their frames are delivered without touching the reset counters, and the
// request is not resumed before they drained (#48245); or also dropped, not delivered, when the connector
// stack requires KV delivery, that is when a connector's role produces KV (#50297: requires_kv_delivery).
enum class PreemptedOutput { placeholders_kept, stale_delivered, stale_dropped_for_producers };

// MooncakeStoreConnector's synchronous loads (load_async=off). Upstream's MooncakeStoreWorker asserts
// load_async on every step (get_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06, start_load_kv @
// 01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103): the configuration rule store_load_async rejects such a
// trace (sim/trace/config_rules.h). A published downstream hotfix (Unintendedz/DeepSeek-v4-Flash-DSpark-
// 2x-DGX-Spark patches/hotfix-dsv4-mooncake-eagle-lookup.py @ 1f42f2a8673978542f29d1c3639d7c0d88bfb74d)
// loads before the forward instead, and raises RuntimeError when a block fails to load.
enum class StoreSyncLoad { asserts, hotfix_loads_before_forward };
// The KV cache check at engine start (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory @
// 003df2961dd8830c317a61f9745ccd557da9fa06): the pool, num_gpu_blocks_override included (#41069), holds
// one request of max_model_len tokens; from #47272 without counting the null block.
enum class KvCacheCheck { max_model_len, max_model_len_and_null_block };

struct Variant {
    // Reads a flag where a decision of the model depends on it, noting the read (the run's FlagReads).
    template <auto Member>
    auto flag() const;

    std::string name = {};
    FlagReads* reads = nullptr;  // the running engine's; null outside a run. Not a flag.
    FreeOrder free_order = FreeOrder::fresh_head_lifo;
    SnapshotRule snapshot_rule = SnapshotRule::every_scheduled;
    StaleSave stale_save = StaleSave::assert_missing;
    PendingLoadGuard pending_load_guard = PendingLoadGuard::on;
    PendingSkipSave pending_skip_save = PendingSkipSave::none;
    MultiLoserBlocks multi_loser_blocks = MultiLoserBlocks::real;
    SaveBlockRefs save_block_refs = SaveBlockRefs::store_job_pins;
    LoadFailurePolicy load_failure_policy_default = LoadFailurePolicy::fail;
    P2PAbortPull p2p_abort_pull = P2PAbortPull::reported;
    P2PEmptyPull p2p_empty_pull = P2PEmptyPull::reported;
    FailedLoadInflight failed_load_inflight = FailedLoadInflight::kept;
    AsyncLoadBehindBlockless async_load_behind_blockless = AsyncLoadBehindBlockless::admitted;
    PinnedVictim pinned_victim = PinnedVictim::preempted;
    PinnedSelfVictim pinned_self_victim = PinnedSelfVictim::preempted;
    BlocklessFailedLoad blockless_failed_load = BlocklessFailedLoad::stays_skipped;
    FailedLoadPlaceholders failed_load_placeholders = FailedLoadPlaceholders::kept;
    FailedLoadFullPrompt failed_load_full_prompt = FailedLoadFullPrompt::kept;
    RollbackFullPrompt rollback_full_prompt = RollbackFullPrompt::stranded;
    AsyncSchedulingDefault async_scheduling_default = AsyncSchedulingDefault::on;
    DeferredBlockFree deferred_block_free = DeferredBlockFree::fenced;
    DeferredFreeScope deferred_free_scope = DeferredFreeScope::kv_consumer;
    FencedVictim fenced_victim = FencedVictim::stops_retry;
    AsyncLoadAccounting async_load_accounting = AsyncLoadAccounting::uncounted;
    BlockedHead blocked_head = BlockedHead::stops_scan;
    PreemptedOutput preempted_output = PreemptedOutput::stale_dropped_for_producers;
    StoreSyncLoad store_sync_load = StoreSyncLoad::asserts;
    KvCacheCheck kv_cache_check = KvCacheCheck::max_model_len_and_null_block;
};

// Each flag's bit in FlagReads: one per field above, in their order (variant_flag_bit checks the rows agree).
template <auto Member>
struct FlagBit;  // no bit: not a flag
#define KVSIM_FLAG_BIT(field, bit) \
    template <>                    \
    struct FlagBit<&Variant::field> { static constexpr int value = bit; }
KVSIM_FLAG_BIT(free_order, 0);
KVSIM_FLAG_BIT(snapshot_rule, 1);
KVSIM_FLAG_BIT(stale_save, 2);
KVSIM_FLAG_BIT(pending_load_guard, 3);
KVSIM_FLAG_BIT(pending_skip_save, 4);
KVSIM_FLAG_BIT(multi_loser_blocks, 5);
KVSIM_FLAG_BIT(save_block_refs, 6);
KVSIM_FLAG_BIT(load_failure_policy_default, 7);
KVSIM_FLAG_BIT(p2p_abort_pull, 8);
KVSIM_FLAG_BIT(p2p_empty_pull, 9);
KVSIM_FLAG_BIT(failed_load_inflight, 10);
KVSIM_FLAG_BIT(async_load_behind_blockless, 11);
KVSIM_FLAG_BIT(pinned_victim, 12);
KVSIM_FLAG_BIT(pinned_self_victim, 13);
KVSIM_FLAG_BIT(blockless_failed_load, 14);
KVSIM_FLAG_BIT(failed_load_placeholders, 15);
KVSIM_FLAG_BIT(failed_load_full_prompt, 16);
KVSIM_FLAG_BIT(rollback_full_prompt, 17);
KVSIM_FLAG_BIT(async_scheduling_default, 18);
KVSIM_FLAG_BIT(deferred_block_free, 19);
KVSIM_FLAG_BIT(deferred_free_scope, 20);
KVSIM_FLAG_BIT(fenced_victim, 21);
KVSIM_FLAG_BIT(async_load_accounting, 22);
KVSIM_FLAG_BIT(blocked_head, 23);
KVSIM_FLAG_BIT(preempted_output, 24);
KVSIM_FLAG_BIT(store_sync_load, 25);
KVSIM_FLAG_BIT(kv_cache_check, 26);
#undef KVSIM_FLAG_BIT

template <auto Member>
auto Variant::flag() const {
    if (reads != nullptr) reads->note(FlagBit<Member>::value);
    return this->*Member;
}

// What is known of a preset: whether it runs every property suite cleanly, or carries a
// defect kvsim reproduces.
enum class PresetTag { clean, known_broken };
inline constexpr EnumNames<PresetTag, 2> kPresetTagNames = {{
    {PresetTag::clean, "clean"},
    {PresetTag::known_broken, "known_broken"},
}};
std::string_view to_string(PresetTag tag);

struct VariantPreset {
    std::string_view name;
    std::string_view description;
    PresetTag tag;
    bool is_default = false;  // what `kvsim explore` and the fuzz target run when given none
};

struct VariantPatch {
    std::string_view name;  // used after '+', e.g. "pr55066"
    std::string_view description;
};

// Resolves "preset[+patch...]". On failure returns nullopt and sets *error to a
// one-line reason naming the unknown part.
std::optional<Variant> resolve_variant(std::string_view name, std::string* error);
// resolve_variant for names that must be valid (tests, generators): throws std::invalid_argument.
Variant require_variant(std::string_view name);

const std::vector<VariantPreset>& variant_presets();
const std::vector<VariantPatch>& variant_patches();
// The presets with `tag`, in table order.
std::vector<std::string> presets_with(PresetTag tag);
// The preset tools run when given no variant.
std::string_view default_variant();

// One row per flag: the flag name, and its values with the PR that brought each.
struct FlagDescription {
    std::string_view flag;
    std::string values;  // "a | b (#PR) | c (#PR)"
    std::vector<std::string_view> value_names;  // {"a", "b", "c"}
};
const std::vector<FlagDescription>& variant_flags();
std::vector<std::string> variant_flag_values(const Variant& v);  // same order as variant_flags()
// The FlagReads bits of the flags whose values differ between `a` and `b`.
std::uint32_t differing_flag_bits(const Variant& a, const Variant& b);
// Every flag's FlagReads bit (for a check that the bit table and the flag rows agree), in row order.
std::vector<int> variant_flag_bits();
// The name of `flag`'s value in `v` (throws std::logic_error for an unknown flag).
std::string_view variant_flag_value(const Variant& v, std::string_view flag);
// Sets `flag` to the value named `value`; false (v unchanged) when either is unknown.
bool set_variant_flag(Variant& v, std::string_view flag, std::string_view value);
// Applies the flag settings of the patch named `patch` (without its '+'); false (v unchanged) when there
// is no such patch. The name is left as it is.
bool apply_variant_patch(Variant& v, std::string_view patch);

// `kvsim variants`: presets x flags table.
std::string variants_table();

}  // namespace kvsim
