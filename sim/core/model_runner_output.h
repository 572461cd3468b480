#pragma once
// vllm/v1/outputs.py ModelRunnerOutput (the fields the scheduler reads)
#include <optional>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/connector/connector.h"
#include "sim/core/request.h"

namespace kvsim {

struct ModelRunnerOutput {
    // One entry per scheduled request; empty for a partial prefill.
    OrderedMap<std::vector<TokenId>> sampled_token_ids;
    std::optional<KVConnectorOutput> kv_connector_output;
};

}  // namespace kvsim
