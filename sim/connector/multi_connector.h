#pragma once
// MultiConnector: children in config order; the first child with a match loads, every
// child sees every request, a request's blocks stay until the last delaying child is done.
// vllm/distributed/kv_transfer/kv_connector/v1/multi_connector.py MultiConnector
// @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1; multi_loser_blocks=empty selects the older
// a4a2a8ee6926f64110185dcf028df78326563436 (`blocks.new_empty()`; real blocks: #46865).
//
// Not modelled: kv_transfer_params merging (kvsim's FinishResult carries none), stats,
// events, handshake metadata, prefix-replay checkpoints, per-child worker metadata (the
// store child's completed saves travel in KVConnectorOutput.completed_store_jobs, which
// every child sees whole).
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/connector/base.h"
#include "sim/variant/variant.h"

namespace kvsim {

// MultiKVConnectorMetadata @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
struct MultiKVConnectorMetadata final : ConnectorMetadata {
    std::vector<std::shared_ptr<const ConnectorMetadata>> metadata;  // one per child, positional
    std::map<std::string, int> extra_async_saves;                    // empty = upstream None

    std::vector<LogEvent> log_events() const override;
};

class MultiConnectorScheduler : public KVConnectorScheduler {
public:
    MultiConnectorScheduler(std::vector<std::unique_ptr<KVConnectorScheduler>> children, const Variant& variant);

    std::string_view name() const override { return "multi"; }

    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override;
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int num_external_tokens) override;
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) override;
    void update_connector_output(const KVConnectorOutput& output) override;
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override;
    bool has_pending_push_work() const override;
    void bind_gpu_block_pool(BlockPool* pool) override;
    void append_pinned_blocks(std::vector<BlockId>& out) const override;

    std::size_t num_children() const { return children_.size(); }
    KVConnectorScheduler& child(std::size_t i) { return *children_.at(i); }
    const KVConnectorScheduler& child(std::size_t i) const { return *children_.at(i); }
    // _requests_to_connector / _extra_async_saves (scheduler side), for tests and checkers.
    const std::map<std::string, int>& requests_to_connector() const { return requests_to_connector_; }
    const std::map<std::string, int>& extra_async_saves() const { return extra_async_saves_; }

private:
    std::vector<std::unique_ptr<KVConnectorScheduler>> children_;
    Variant variant_;
    std::map<std::string, int> requests_to_connector_;
    std::map<std::string, int> extra_async_saves_;
};

class MultiConnectorWorker : public KVConnectorWorker {
public:
    // The variant is taken for symmetry with the scheduler side; the worker aggregation is
    // the same at both commits for the outputs kvsim models, so no flag is read.
    MultiConnectorWorker(std::vector<std::unique_ptr<KVConnectorWorker>> children, const Variant& variant);

    void bind_and_start(int step, const ConnectorMetadata* metadata) override;
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override;

    std::size_t num_children() const { return children_.size(); }
    KVConnectorWorker& child(std::size_t i) { return *children_.at(i); }
    // _extra_async_saves (worker side).
    const std::map<std::string, int>& extra_async_saves() const { return extra_async_saves_; }

private:
    std::vector<std::unique_ptr<KVConnectorWorker>> children_;
    std::map<std::string, int> extra_async_saves_;
};

}  // namespace kvsim
