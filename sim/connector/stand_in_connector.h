#pragma once
// A stand-in connector until the Mooncake connectors land: a request with
// remote_prefill=on loads its whole uncached prompt asynchronously, and the load
// completes `load_delay` steps after it starts. It follows the D-side shape of
// MooncakeConnector (kv_consumer): always async, one transfer per request.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/connector/base.h"
#include "sim/trace/trace.h"

namespace kvsim {

struct StandInMetadata final : ConnectorMetadata {
    std::vector<std::pair<std::string, std::vector<BlockId>>> loads;  // request -> blocks to fill
    std::vector<LogEvent> log_events() const override;
};

class StandInConnectorScheduler : public KVConnectorScheduler {
public:
    explicit StandInConnectorScheduler(const ConnectorSpec& spec) : spec_(spec) {}
    std::string_view name() const override { return "stand_in"; }
    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override;
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int num_external_tokens) override;
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) override;
    void update_connector_output(const KVConnectorOutput& /*output*/) override {}
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override;

private:
    ConnectorSpec spec_;
    std::vector<std::pair<std::string, std::vector<BlockId>>> pending_loads_;
};

class StandInConnectorWorker : public KVConnectorWorker {
public:
    explicit StandInConnectorWorker(const ConnectorSpec& spec) : spec_(spec) {}
    void bind_and_start(int step, const ConnectorMetadata* metadata) override;
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override { return !inflight_.empty(); }

private:
    ConnectorSpec spec_;
    std::map<std::string, int> inflight_;  // request -> step whose output reports it done
};

}  // namespace kvsim
