#pragma once
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py RequestTracker @ copy 57646622044
// Block ids are held by value: upstream aliases these lists with ReqMeta.block_ids and the
// _unfinished_requests entry; no modelled path observes that aliasing (see store_scheduler.h).
// Token ids (kept only with kv events on) are not modelled.
#include <string>

#include "sim/connector/connector.h"

namespace kvsim {

struct RequestTracker {
    std::string req_id;
    int token_len = 0;
    GroupBlockIds allocated_block_ids;  // empty outer vector = upstream's `()`
    int num_saved_tokens = 0;           // the save watermark
    bool has_pending_offload = false;
    int prefill_end_tokens = 0;

    // RequestTracker.reset @ copy 57646622044
    void reset();
    // RequestTracker.update @ copy 57646622044: throws UpstreamAssertion (ValueError) on a group-count mismatch.
    void update(const GroupBlockIds& new_block_ids);
};

}  // namespace kvsim
