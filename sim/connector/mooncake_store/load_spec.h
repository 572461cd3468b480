#pragma once
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py LoadSpec @ copy 57646622044
// (single full-attention group: no tail_key_boundaries).
namespace kvsim {

struct LoadSpec {
    int vllm_cached_tokens = 0;    // the local prefix-cache hit when the lookup ran
    int kvpool_cached_tokens = 0;  // the store's hit
    bool can_load = false;         // set by update_state_after_alloc when this connector owns the load
    int token_len = 0;

    bool operator==(const LoadSpec&) const = default;
};

}  // namespace kvsim
