#pragma once
// The scheduler side of MooncakeStoreConnector:
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/scheduler.py MooncakeStoreScheduler
// @ a83dffb9ea007219cd877492e020ec6bee45c6a3 (after v0.29.0; its pending-load branch already carries #54643),
// with the variant flags selecting older or patched behaviour:
//   stale_save        tracker_ids (pre-#51358: no _apply_current_save_block_ids),
//                     assert_missing (#51358), drop_warn_rollback (#55066)
//   pending_load_guard / pending_skip_save   the pending-load branch (#54643 / seed 000's rejected fix)
//   save_block_refs   delay_free (pre-#52372, @ 003df2961dd8830c317a61f9745ccd557da9fa06: request_finished delays the free) or
//                     store_job_pins (#52372, @ a83dffb9ea007219cd877492e020ec6bee45c6a3: _reference_save_blocks + release per rank)
//
// Scope: one full-attention KV-cache group (scheduler block size == hash block size ==
// engine.block_size, select_transfer_block_ids is the identity). Not modelled: Mamba groups
// and boundary-state offloads, finish-time partial tails, partial hash hits, kv events and
// token ids, tail key boundaries, reset_cache/reset_store.
//
// Deviation kept on purpose: block-id lists are values, not aliased Python lists (the tracker,
// its ReqMeta and the _unfinished_requests entry share lists upstream). Aliasing only matters
// when a later RequestTracker.update appends to a list a still-queued ReqMeta holds; the appended
// ids lie past that job's token range, so no modelled read changes.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/common/first_repeat.h"
#include "sim/common/ordered_map.h"
#include "sim/connector/base.h"
#include "sim/environment/kv_store.h"
#include "sim/connector/mooncake/store/data.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

class BlockPool;
class EventLog;
class FaultSchedule;

class MooncakeStoreScheduler : public KVConnectorScheduler {
public:
    // MooncakeStoreScheduler.__init__ @ a83dffb9ea007219cd877492e020ec6bee45c6a3. num_workers = parallel_config.world_size.
    MooncakeStoreScheduler(const ConnectorSpec& spec, const EngineConfig& engine, const Variant& variant,
                           int num_workers, KvStore& store, FaultSchedule& faults, EventLog& log);

    std::string_view name() const override { return "store"; }
    // MooncakeStoreScheduler.get_num_new_matched_tokens @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override;
    // MooncakeStoreScheduler.update_state_after_alloc @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int num_external_tokens) override;
    // MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) override;
    // MooncakeStoreScheduler.update_connector_output @ a83dffb9ea007219cd877492e020ec6bee45c6a3 (store_job_pins only)
    void update_connector_output(const KVConnectorOutput& output) override;
    // delay_free: MooncakeStoreScheduler.request_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06 (pre-#52372);
    // store_job_pins: MooncakeStoreConnector.request_finished -> (False, None) (#52372; no scheduler hook @ a83dffb9ea007219cd877492e020ec6bee45c6a3)
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override;
    // MooncakeStoreScheduler.has_pending_push_work @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    bool has_pending_push_work() const override { return !pinned_saves_.empty(); }
    // MooncakeStoreScheduler.bind_gpu_block_pool @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    void bind_gpu_block_pool(BlockPool* pool) override { pool_ = pool; }
    void append_pinned_blocks(std::vector<BlockId>& out) const override;

    struct UnfinishedEntry {
        const Request* request = nullptr;
        GroupBlockIds block_ids;  // `()` unless this connector owns a load
    };
    struct PinnedSave {
        std::string req_id;  // the job's request; upstream keys pins by job id only (read by step checks)
        std::vector<BlockId> block_ids;
        int remaining = 0;  // ranks yet to report
    };

    // Read-only views of the connector's state (tests, checkers).
    const std::map<std::string, LoadSpec>& load_specs() const { return load_specs_; }
    const RequestTracker* tracker(const std::string& req_id) const;
    const UnfinishedEntry* unfinished_entry(const std::string& req_id) const { return unfinished_requests_.find(req_id); }
    const std::set<std::string>& unfinished_request_ids() const { return unfinished_request_ids_; }
    const std::map<std::int64_t, PinnedSave>& pinned_saves() const { return pinned_saves_; }
    std::int64_t next_store_job_id() const { return next_store_job_id_; }

private:
    // Direct state access for the unit tests (defined in tests/), as upstream's tests poke the scheduler's dicts.
    friend struct StoreSchedulerTestAccess;

    // The parts of build_connector_meta, in upstream's order.
    void forget_finished_and_preempted(const SchedulerOutput& output);
    void add_new_requests(StoreMetadata& meta, const SchedulerOutput& output);
    void add_cached_requests(StoreMetadata& meta, const SchedulerOutput& output);
    void add_resumed_request(StoreMetadata& meta, const SchedulerOutput& output, const std::string& req_id,
                             GroupBlockSpan new_block_ids);
    void add_running_request(StoreMetadata& meta, const SchedulerOutput& output, std::size_t i,
                             std::optional<GroupBlockSpan> new_block_ids);
    void add_pending_load_requests(StoreMetadata& meta, const SchedulerOutput& output);
    // MooncakeStoreScheduler._apply_current_save_block_ids @ a83dffb9ea007219cd877492e020ec6bee45c6a3 (+ #55066 per stale_save)
    void apply_current_save_block_ids(StoreMetadata& meta, const SchedulerOutput& output);
    // MooncakeStoreScheduler._reference_save_blocks @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    void reference_save_blocks(StoreMetadata& meta);

    ConnectorSpec spec_;
    Variant variant_;
    int block_size_;
    int num_workers_;
    KvStore& store_;
    FaultSchedule& faults_;
    EventLog& log_;
    BlockPool* pool_ = nullptr;

    std::map<std::string, LoadSpec> load_specs_;
    OrderedMap<RequestTracker> request_trackers_;  // looked up, never iterated
    OrderedMap<UnfinishedEntry> unfinished_requests_;  // dict insertion order drives the pending branch
    std::set<std::string> unfinished_request_ids_;
    std::map<std::string, int> pending_lookups_;  // LookupKeyClient.futures: the hit computed at submission
    std::int64_t next_store_job_id_ = 0;
    std::map<std::int64_t, PinnedSave> pinned_saves_;
    RepeatCheck pin_repeats_;  // reference_save_blocks: each block once per job
    std::set<std::string> warned_stale_saves_;  // logger.warning_once keys
};

}  // namespace kvsim
