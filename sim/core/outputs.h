#pragma once
// vllm/v1/outputs.py ModelRunnerOutput and KVConnectorOutput (the fields the scheduler reads)
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/core/request.h"

namespace kvsim {

// vllm/v1/outputs.py KVConnectorOutput (the fields the modelled connectors use)
struct KVConnectorOutput {
    std::set<std::string> finished_sending;
    std::set<std::string> finished_recving;
    std::set<BlockId> invalid_block_ids;
    // MooncakeStoreWorkerMetadata.completed_saves: store_job_id -> rank reports this step (summed over ranks)
    std::map<std::int64_t, int> completed_store_jobs;

    bool empty() const {
        return finished_sending.empty() && finished_recving.empty() && invalid_block_ids.empty() &&
               completed_store_jobs.empty();
    }
};

struct ModelRunnerOutput {
    // One entry per scheduled request; empty for a partial prefill.
    OrderedMap<std::vector<TokenId>> sampled_token_ids;
    std::optional<KVConnectorOutput> kv_connector_output;
};

// Empties a processed output for the next step's execute_model, keeping the storage its map allocated.
// One binding per field: a field added to ModelRunnerOutput stops this from compiling until it is
// emptied here too.
inline void clear_for_reuse(ModelRunnerOutput& out) {
    auto& [sampled_token_ids, kv_connector_output] = out;
    sampled_token_ids.clear();
    kv_connector_output.reset();
}

}  // namespace kvsim
