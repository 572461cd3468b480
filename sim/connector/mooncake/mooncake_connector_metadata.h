#pragma once
// MooncakeConnector (P2P) metadata: what the scheduler side hands the worker each step.
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py
// MooncakeConnectorMetadata / PullReqMeta @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
//
// Simplifications (documented, not behavioural):
// - The transfer id is the request id (upstream: the proxy gives the P and the D request
//   the same kv_transfer_params["transfer_id"]; kvsim models one side per run).
// - One remote engine: upstream groups pulls by remote_engine_id
//   (reqs_to_recv[engine][req]); kvsim has a single prefill side, so the pulls are one
//   list in upstream's dict insertion order.
#include <set>
#include <string>
#include <vector>

#include "sim/connector/base.h"

namespace kvsim {

// PullReqMeta: D asks P to write into these local blocks. An empty outer vector is
// upstream's `()`: a notify-only pull (P releases its blocks, nothing is written).
// notify_scheduler (vllm-project/vllm#50565): false for a cleanup-only pull, whose answer the D
// worker does not report in finished_recving; upstream at the modelled commit reports every pull.
struct P2PPullMeta {
    std::string req_id;
    GroupBlockIds local_block_ids;
    bool notify_scheduler = true;
};

// reqs_to_send entry: P's blocks for the request. Empty = the pre-registration queued by
// update_state_after_alloc ("add an empty list to worker to create event").
struct P2PSendMeta {
    std::string req_id;
    GroupBlockIds block_ids;
};

// MooncakeConnectorMetadata @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
struct MooncakeConnectorMetadata final : ConnectorMetadata {
    std::vector<P2PPullMeta> reqs_to_recv;     // filled only when not kv_producer
    std::vector<P2PSendMeta> reqs_to_send;     // filled only when not kv_consumer
    std::set<std::string> reqs_not_processed;  // transfer ids P will never send (not kv_consumer)

    std::vector<LogEvent> log_events() const override;
};

// True when any group holds a block (upstream `any(len(g) > 0 for g in groups)`).
inline bool any_blocks(const GroupBlockIds& groups) {
    for (const auto& g : groups)
        if (!g.empty()) return true;
    return false;
}

// All groups concatenated, group order kept (single-group runs: group 0 as is).
inline std::vector<BlockId> flatten_blocks(const GroupBlockIds& groups) {
    std::vector<BlockId> out;
    for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
    return out;
}


}  // namespace kvsim
