#pragma once
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py @ a83dffb9ea007219cd877492e020ec6bee45c6a3: the store
// connector's data types (LoadSpec, RequestTracker, ReqMeta, MooncakeStoreConnectorMetadata), for a
// single full-attention group: no tail_key_boundaries, boundary-state offloads, token ids or CUDA events.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/common/event_log.h"
#include "sim/connector/base.h"

namespace kvsim {

struct LoadSpec {
    int vllm_cached_tokens = 0;    // the local prefix-cache hit when the lookup ran
    int kvpool_cached_tokens = 0;  // the store's hit
    bool can_load = false;         // set by update_state_after_alloc when this connector owns the load
    int token_len = 0;

    bool operator==(const LoadSpec&) const = default;
};

// Block ids are held by value: upstream aliases these lists with ReqMeta.block_ids and the
// _unfinished_requests entry; no modelled path observes that aliasing (see scheduler.h).
// Token ids (kept only with kv events on) are not modelled.
struct RequestTracker {
    std::string req_id;
    int token_len = 0;
    GroupBlockIds allocated_block_ids;  // empty outer vector = upstream's `()`
    int num_saved_tokens = 0;           // the save watermark
    bool has_pending_offload = false;
    int prefill_end_tokens = 0;

    // RequestTracker.reset @ a83dffb9ea007219cd877492e020ec6bee45c6a3
    void reset();
    // RequestTracker.update @ a83dffb9ea007219cd877492e020ec6bee45c6a3: throws UpstreamAssertion (ValueError) on a group-count mismatch.
    void update(GroupBlockSpan new_block_ids);
};

struct ReqMeta {
    std::string req_id;
    int token_len_chunk = 0;  // save end (block aligned), set even when not saving
    GroupBlockIds block_ids;
    std::vector<BlockHash> block_hashes;
    bool can_save = false;
    std::optional<LoadSpec> load_spec;  // only ever present with can_load
    int token_ids_start = 0;            // the watermark before this save
    int num_prompt_tokens = 0;          // tracker.prefill_end_tokens
    std::optional<std::int64_t> store_job_id;  // assigned by _reference_save_blocks (#52372)

    // ReqMeta.from_request_tracker @ a83dffb9ea007219cd877492e020ec6bee45c6a3. skip_save nullopt is upstream's None
    // (counts as False). Advances tracker.num_saved_tokens when it saves.
    static std::optional<ReqMeta> from_request_tracker(RequestTracker& tracker, int block_size,
                                                       const std::optional<LoadSpec>& load_spec,
                                                       std::optional<bool> skip_save,
                                                       const std::vector<BlockHash>& block_hashes);
};

// MooncakeStoreWorkerMetadata.completed_saves: store_job_id -> the number of ranks done with that job.
using CompletedSaves = std::map<std::int64_t, int>;

// aggregate_completed_saves for one job's count: a rank's finished job, without a one-entry map.
inline void aggregate_completed_save(CompletedSaves& into, std::int64_t store_job_id, int count) {
    into[store_job_id] += count;
}
// MooncakeStoreWorkerMetadata.aggregate @ a83dffb9ea007219cd877492e020ec6bee45c6a3: the engine merges each
// rank's metadata into one; a job's counts add up.
inline CompletedSaves& aggregate_completed_saves(CompletedSaves& into, const CompletedSaves& other) {
    for (const auto& [store_job_id, count] : other) aggregate_completed_save(into, store_job_id, count);
    return into;
}

// MooncakeStoreConnectorMetadata, without its unfinished_request_ids: upstream shares the scheduler's
// live set there, which no modelled worker path reads (MooncakeStoreScheduler::unfinished_request_ids
// keeps it for the step checks).
struct StoreMetadata final : ConnectorMetadata {
    std::vector<ReqMeta> requests;
    std::set<std::string> preempted_req_ids;

    // One `meta` event per request: "store save|load|noop REQ ...", block groups joined by "+"
    // ("()" for upstream's empty tuple).
    std::vector<LogEvent> log_events() const override;
};

}  // namespace kvsim
