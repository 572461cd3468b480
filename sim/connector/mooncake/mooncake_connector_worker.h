#pragma once
// MooncakeConnector (P2P), worker side, for all ranks at once.
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py
// MooncakeConnectorWorker @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
//
// The other engine of the P/D pair is not simulated; its timing is drawn instead:
// - Consumer (D) pulls: the prefill side answers `env.draw_load_delay()` steps after the
//   pull starts (one draw per pull, in metadata order, at execute time). All D ranks and
//   all paired P workers complete together (pull_tasks_count collapses to one answer).
// - Producer (P) sends: the decode side pulls `env.config.pull_delay` steps after the
//   send entry with blocks reaches the worker, reading all of P's blocks (upstream P sends
//   its LAST n blocks, n = D's block count; the D side's prefix hit is not modelled).
// Not modelled: VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (480 s) — neither P's expiry of a
// ready slot nobody pulls (there is always a puller here) nor D's wait for a slot that
// never becomes ready (there is no remote P whose request could be aborted); bootstrap
// and handshake failures; heterogeneous TP/PP fan-out; HMA failed_recving (single group:
// failures are reported as invalid block ids).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/connector/base.h"
#include "sim/connector/mooncake/mooncake_connector_metadata.h"
#include "sim/trace/trace.h"
#include "sim/environment/worker_env.h"

namespace kvsim {

struct MooncakeWorkerOptions {
    // Upstream reports a notify-only pull (no local blocks) in finished_recving once P
    // answers ok (process_pulling_result does not look at the blocks); only the failure
    // path (_handle_failed_recv) skips it. Default: upstream. false = the variant the
    // failure-path comment describes ("no D request is waiting on a load").
    bool report_empty_pulls = true;
};

class MooncakeConnectorWorker : public KVConnectorWorker {
public:
    // MooncakeConnectorWorker.__init__ @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: role flags by strict equality; the
    // receiver runs unless kv_producer, the sender unless kv_consumer.
    MooncakeConnectorWorker(const ConnectorSpec& spec, WorkerEnv& env, MooncakeWorkerOptions options = {});

    void bind_and_start(int step, const ConnectorMetadata* metadata) override;
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override;

    struct Pull {
        std::string req_id;
        GroupBlockIds local_block_ids;
        int done_step = 0;    // get_finished(step >= done_step) reports it
        bool failed = false;  // a load_fail fault was taken at start
        bool notify_scheduler = true;  // P2PPullMeta.notify_scheduler (#50565)
    };
    // reqs_need_send slot (SendBlockMeta), keyed by transfer id (= request id).
    struct SendSlot {
        std::string p_req_id;
        GroupBlockIds local_block_ids;
        bool ready = false;  // a send entry with blocks arrived (request_finished, length capped)
        int pull_step = 0;   // when the decode side pulls a ready slot
    };
    const std::vector<Pull>& pulls() const { return pulls_; }
    const std::map<std::string, SendSlot>& send_slots() const { return send_slots_; }

private:
    void start_load_kv(int step, const MooncakeConnectorMetadata& meta);
    void record_send_reqs(int step, const MooncakeConnectorMetadata& meta);
    // A `p2p` event (appended when the statement ends; dropped without a log).
    EventBuilder log(std::string format, const char* action, const std::string& req_id);
    void log_pull_result(const std::string& req_id, bool ok, bool notify_only, bool reported);

    ConnectorSpec spec_;
    WorkerEnv& env_;
    bool is_kv_producer_;
    bool is_kv_consumer_;
    MooncakeWorkerOptions options_;
    std::vector<Pull> pulls_;                     // in start order
    std::map<std::string, SendSlot> send_slots_;  // transfer id -> slot
};

}  // namespace kvsim
