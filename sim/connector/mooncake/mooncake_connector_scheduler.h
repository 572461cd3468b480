#pragma once
// MooncakeConnector (P2P), scheduler side.
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py
// MooncakeConnectorScheduler @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
//
// Not modelled (no effect on a full-attention, single-group, non-Mamba engine):
// sliding-window clipping (get_sw_clipped_blocks is the identity without HMA), the Mamba
// N-1 prompt count and P-side truncation, prefill-side SWA replay checkpoints.
// kv_transfer_params are modelled by their two flags; "no params" / "no transfer_id" is
// both flags false (a request with params always carries the keys in kvsim).
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/connector/base.h"
#include "sim/connector/mooncake/mooncake_connector_metadata.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

class EventLog;

class MooncakeConnectorScheduler : public KVConnectorScheduler {
public:
    // MooncakeConnectorScheduler.__init__ @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: role flags by strict equality.
    // The variant selects the fix patches of the notify-only pulls (p2p_abort_pull, p2p_empty_pull).
    MooncakeConnectorScheduler(const ConnectorSpec& spec, EventLog& log, const Variant& variant = Variant{});

    std::string_view name() const override { return "p2p"; }

    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override;
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int num_external_tokens) override;
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) override;
    void update_connector_output(const KVConnectorOutput& output) override;
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override;

    bool is_kv_producer() const { return is_kv_producer_; }
    bool is_kv_consumer() const { return is_kv_consumer_; }

    // Pending state, for tests and checkers (upstream _reqs_need_recv / _reqs_need_send /
    // _reqs_not_processed; insertion-ordered like the Python dicts).
    const OrderedMap<GroupBlockIds>& reqs_need_recv() const { return reqs_need_recv_; }
    const OrderedMap<GroupBlockIds>& reqs_need_send() const { return reqs_need_send_; }
    const std::set<std::string>& reqs_not_processed() const { return reqs_not_processed_; }

private:
    // Queue a pull; `notify_scheduler` false = a cleanup pull the D worker must not report (#50565).
    void queue_pull(const std::string& req_id, GroupBlockIds blocks, bool notify_scheduler);

    ConnectorSpec spec_;
    EventLog& log_;
    Variant variant_;
    bool is_kv_producer_;
    bool is_kv_consumer_;
    OrderedMap<GroupBlockIds> reqs_need_recv_;
    OrderedMap<GroupBlockIds> reqs_need_send_;
    std::set<std::string> reqs_not_processed_;
    std::set<std::string> silent_pulls_;  // queued pulls with notify_scheduler=False
};

}  // namespace kvsim
