#pragma once
// kvsim's mock connector, after upstream's test connector: a fixed matched-token count, sync or
// async, answering "not decided yet" for the first `defer` lookups of each request.
// tests/v1/kv_connector/unit/utils.py MockKVConnector @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc
// Its worker side is kvsim's own (upstream's tests hand-write the worker's reports): an async load
// finishes after a drawn load delay, unless the trace scripts the request's receive (`report`).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/connector/base.h"
#include "sim/environment/scripted_reports.h"
#include "sim/environment/worker_env.h"
#include "sim/trace/trace.h"

namespace kvsim {

// MockKVConnectorMetadata: `requests` names the new and resumed requests of the step.
struct MockMetadata final : ConnectorMetadata {
    std::vector<std::string> requests;
    std::vector<std::string> async_loads;  // kvsim: async loads that start this step
    std::vector<LogEvent> log_events() const override;
};

class MockConnectorScheduler : public KVConnectorScheduler {
public:
    explicit MockConnectorScheduler(const ConnectorSpec& spec) : spec_(spec) {}
    std::string_view name() const override { return "mock"; }
    // MockKVConnector.get_num_new_matched_tokens @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc
    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override;
    // MockKVConnector.update_state_after_alloc @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc (upstream: nothing;
    // kvsim records an async load for its worker)
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int num_external_tokens) override;
    // MockKVConnector.build_connector_meta @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) override;
    void update_connector_output(const KVConnectorOutput& /*output*/) override {}
    // KVConnectorBase_V1.request_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06: free at once
    FinishResult request_finished(Request& /*request*/, const std::vector<BlockId>& /*block_ids*/) override {
        return {.delay_free_blocks = false};
    }

private:
    ConnectorSpec spec_;
    std::map<std::string, int> defers_left_;  // _defers_left: a defaultdict, never cleared
    std::vector<std::string> pending_async_loads_;
};

class MockConnectorWorker : public KVConnectorWorker {
public:
    MockConnectorWorker(WorkerEnv& env, const ScriptedReports& scripted) : env_(env), scripted_(scripted) {}
    void bind_and_start(int step, const ConnectorMetadata* metadata) override;
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override { return !inflight_.empty(); }

private:
    WorkerEnv& env_;
    const ScriptedReports& scripted_;
    std::map<std::string, int> inflight_;  // request -> step whose output reports it done
};

}  // namespace kvsim
