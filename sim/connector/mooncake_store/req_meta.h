#pragma once
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py ReqMeta @ copy 57646622044
// (single full-attention group: no boundary-state offloads, token ids or CUDA events).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/connector/connector.h"
#include "sim/connector/mooncake_store/load_spec.h"
#include "sim/connector/mooncake_store/request_tracker.h"

namespace kvsim {

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

    // ReqMeta.from_request_tracker @ copy 57646622044. skip_save nullopt is upstream's None
    // (counts as False). Advances tracker.num_saved_tokens when it saves.
    static std::optional<ReqMeta> from_request_tracker(RequestTracker& tracker, int block_size,
                                                       const std::optional<LoadSpec>& load_spec,
                                                       std::optional<bool> skip_save,
                                                       std::vector<BlockHash> block_hashes);
};

}  // namespace kvsim
