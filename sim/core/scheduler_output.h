#pragma once
// vllm/v1/core/sched/output.py SchedulerOutput, NewRequestData, CachedRequestData,
// KVConnectorBlockState @ a9b169409e5f3a8fa67b462c064c4080e93b82b7 (the block state came with #51358)
#include <map>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/core/request.h"

namespace kvsim {

struct ConnectorMetadata;

struct NewRequestData {
    std::string req_id;
    std::vector<BlockId> block_ids;  // the whole block table (one group)
    int num_computed_tokens = 0;     // before this step's advance
};

// Columnar, one entry per scheduled running request, then resumed requests.
struct CachedRequestData {
    std::vector<std::string> req_ids;
    std::set<std::string> resumed_req_ids;
    // Blocks allocated this step (nullopt when none); the full table for resumed requests.
    std::vector<std::optional<std::vector<BlockId>>> new_block_ids;
    std::vector<int> num_computed_tokens;  // before this step's advance
    std::vector<int> num_output_tokens;

    std::size_t size() const { return req_ids.size(); }
};

// The core's current block tables, readable by the connector while it builds metadata. Upstream's
// dict holds copies; here each entry views the table in the KVCacheManager, which nothing changes
// between the snapshot (build_output) and build_connector_meta in the same schedule() call, after
// which the state is dropped, so the views read what copies would.
struct KVConnectorBlockState {
    OrderedMap<const std::vector<BlockId>*> block_ids;  // a dict upstream; only looked up here
    std::shared_ptr<const void> storage;  // owns the viewed tables when they are not the manager's

    const std::vector<BlockId>* get_block_ids(const std::string& req_id) const {
        const std::vector<BlockId>* const* table = block_ids.find(req_id);
        return table != nullptr ? *table : nullptr;
    }
};

struct SchedulerOutput {
    int step = 0;
    std::vector<NewRequestData> scheduled_new_reqs;
    CachedRequestData scheduled_cached_reqs;
    OrderedMap<int> num_scheduled_tokens;
    int total_num_scheduled_tokens = 0;
    std::set<std::string> finished_req_ids;
    std::set<std::string> preempted_req_ids;
    // Only present while the connector builds its metadata (cleared before dispatch).
    std::optional<KVConnectorBlockState> kv_connector_block_state;
    std::shared_ptr<const ConnectorMetadata> kv_connector_metadata;
    // AsyncScheduler: output placeholders of each scheduled request that has any, as the connector sees
    // them in build_connector_meta (before this step's own are added). Empty under synchronous scheduling.
    OrderedMap<int> num_output_placeholders;
    // #45357: the schedule() call that made this output; update_from_output advances the fence to it.
    std::int64_t sched_seq = 0;
};

// Empties the last snapshot for the next one, keeping its map's index. One binding per field, as below.
inline void clear_for_reuse(KVConnectorBlockState& state) {
    auto& [block_ids, storage] = state;
    block_ids.clear();
    storage.reset();
}

// Empties a processed output for the next schedule() call: every field as a new output has it, while
// its lists and maps keep the storage they allocated (a step then allocates none for them). One
// binding per field: a field added to SchedulerOutput or CachedRequestData stops this from
// compiling until it is emptied here too.
inline void clear_for_reuse(SchedulerOutput& out) {
    auto& [step, new_reqs, cached, num_scheduled_tokens, total_num_scheduled_tokens, finished_req_ids,
           preempted_req_ids, block_state, metadata, num_output_placeholders, sched_seq] = out;
    auto& [req_ids, resumed_req_ids, new_block_ids, num_computed_tokens, num_output_tokens] = cached;
    step = 0;
    new_reqs.clear();
    req_ids.clear();
    resumed_req_ids.clear();
    new_block_ids.clear();
    num_computed_tokens.clear();
    num_output_tokens.clear();
    num_scheduled_tokens.clear();
    total_num_scheduled_tokens = 0;
    finished_req_ids.clear();
    preempted_req_ids.clear();
    block_state.reset();
    metadata.reset();
    num_output_placeholders.clear();
    sched_seq = 0;
}

}  // namespace kvsim
