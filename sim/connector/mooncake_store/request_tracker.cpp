#include "sim/connector/mooncake_store/request_tracker.h"

#include <fmt/format.h>

#include "sim/common/upstream_assertion.h"

namespace kvsim {

void RequestTracker::reset() {
    token_len = 0;
    allocated_block_ids.clear();
    num_saved_tokens = 0;
    has_pending_offload = false;
    prefill_end_tokens = 0;
}

void RequestTracker::update(const GroupBlockIds& new_block_ids) {
    if (new_block_ids.size() != allocated_block_ids.size())
        throw UpstreamAssertion(
            "store_tracker_group_count_mismatch",
            "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py RequestTracker.update",
            fmt::format("ValueError: Group count mismatch: tracker has {} groups, update has {}",
                        allocated_block_ids.size(), new_block_ids.size()));
    for (std::size_t g = 0; g < new_block_ids.size(); ++g)
        allocated_block_ids[g].insert(allocated_block_ids[g].end(), new_block_ids[g].begin(), new_block_ids[g].end());
}

}  // namespace kvsim
