#pragma once
// The engine loop of one run: events -> schedule() -> worker -> update_from_output.
// vllm/v1/engine/core.py EngineCore.step, and EngineCore.step_with_batch_queue under async scheduling
// (two batches in flight) @ ac3cb2e2eca80290181abb9365d572af6d287473
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/circular_buffer.hpp>

#include "sim/common/prng.h"
#include "sim/engine/connector_factory.h"
#include "sim/environment/kv_store.h"
#include "sim/core/sched/scheduler.h"
#include "sim/common/event_log.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"
#include "sim/environment/fault_schedule.h"
#include "sim/environment/scripted_reports.h"
#include "sim/environment/worker_env.h"

namespace kvsim {

class Engine {
public:
    Engine(const Trace& trace, const Variant& variant);
    Engine(const Engine&) = delete;  // its components hold pointers into it
    Engine& operator=(const Engine&) = delete;

    // Judges every worker block access as it happens (null: nobody watches).
    void set_observer(WorkerObserver* observer) { env_.observer = observer; }

    // Called after schedule() (and build_connector_meta) of every step, before the worker runs:
    // a reader of the state there (the step checks' at=schedule). It must not change the run.
    void set_schedule_probe(std::function<void(const SchedulerOutput&)> probe) { schedule_probe_ = std::move(probe); }

    // Runs step `step`: applies its events, then one schedule/execute/update round.
    // Throws UpstreamAssertion when the modelled engine dies.
    void run_step(int step);

    // SchedulerConfig.async_scheduling as resolved: the trace's key, else the variant's default.
    bool async_scheduling() const { return async_scheduling_; }
    // Batches dispatched whose output is not processed yet (async scheduling only).
    std::size_t batches_in_flight() const { return batch_queue_.size(); }

    // No request object alive, nothing in flight on the worker, no push work pending.
    bool quiet() const;
    // The connector still has work: a worker busy with transfers or store jobs, or pushes pending.
    bool connector_busy() const;
    bool events_exhausted() const { return next_event_ >= trace_.events.size(); }
    // Step of the next unapplied event (precondition: !events_exhausted()).
    int next_event_step() const { return trace_.events[next_event_].step; }
    // The faults applied so far, armed, fired or in effect.
    const FaultSchedule& faults() const { return faults_; }

    const Trace& trace() const { return trace_; }
    const Variant& variant() const { return variant_; }
    // The FlagReads bits of the flags the run's decisions have read so far.
    std::uint32_t flags_read() const { return reads_.bits(); }
    const Scheduler& scheduler() const { return *scheduler_; }
    const KVConnectorScheduler* connector() const { return connectors_.scheduler.get(); }
    const KVConnectorWorker* connector_worker() const { return connectors_.worker.get(); }
    const KvStore& kv_store() const { return store_; }
    EventLog& log() { return log_; }
    const EventLog& log() const { return log_; }
    int last_step() const { return last_step_; }
    // The connector metadata build_connector_meta emitted in the last step (null: none), for checkers
    // that judge a step's jobs against the state at its end.
    const ConnectorMetadata* last_connector_metadata() const { return last_connector_metadata_.get(); }

private:
    // A dispatched batch: the scheduler output and what the worker will report for it.
    struct InFlightBatch {
        SchedulerOutput output;
        ModelRunnerOutput runner_output;
    };
    void step_sync(int step);
    void report_forward_writes(const SchedulerOutput& output);
    void step_with_batch_queue(int step);
    void apply_events(int step);
    void apply_arrive(int step, const ArriveEvent& arrive);
    void log_fault(const FaultEvent& fault);
    void apply_reset_prefix_cache();
    ModelRunnerOutput execute_model(int step, const SchedulerOutput& output);
    void recycle(SchedulerOutput&& output, ModelRunnerOutput&& runner_output);
    void sample_stops(ModelRunnerOutput& result);
    void add_scripted_reports(int step, KVConnectorOutput& kv);
    void seed_store();

    const Trace& trace_;
    SegmentIndex segments_;
    FlagReads reads_;
    Variant variant_;  // reads point at reads_, in every component's copy too
    EventLog log_;
    Prng prng_;
    FaultSchedule faults_;
    ScriptedReports scripted_;
    KvStore store_;
    WorkerEnv env_;
    ConnectorStack connectors_;
    std::unique_ptr<Scheduler> scheduler_;
    bool async_scheduling_ = false;
    // newest at the front, as upstream's appendleft/pop; a fixed ring (batch_queue_size entries), so a step
    // allocates no queue node
    boost::circular_buffer<InFlightBatch> batch_queue_;
    std::size_t next_event_ = 0;
    int last_step_ = -1;
    std::vector<std::string> stops_;  // requests that sample EOS in this step's output
    std::vector<BlockId> forward_written_;  // report_forward_writes' buffer, kept for its capacity
    ModelRunnerOutput spare_runner_output_;  // the last processed one, filled again by execute_model
    std::shared_ptr<const ConnectorMetadata> last_connector_metadata_;
    std::function<void(const SchedulerOutput&)> schedule_probe_;
};

// The token the modelled model samples at `position` of a request: a pure function,
// so outputs never depend on the PRNG stream or on scheduling.
TokenId sampled_token(const std::string& request_id, int position);

}  // namespace kvsim
