#pragma once
#include <memory>

#include "sim/connector/base.h"
#include "sim/environment/kv_store.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"
#include "sim/environment/fault_schedule.h"
#include "sim/environment/scripted_reports.h"
#include "sim/environment/worker_env.h"

namespace kvsim {

class EventLog;

// What connector models are built with; everything outlives the connectors.
struct ConnectorContext {
    const Trace* trace = nullptr;
    const Variant* variant = nullptr;
    KvStore* store = nullptr;
    FaultSchedule* faults = nullptr;
    WorkerEnv* worker_env = nullptr;
    EventLog* log = nullptr;
    const ScriptedReports* scripted = nullptr;
};

struct ConnectorStack {
    std::unique_ptr<KVConnectorScheduler> scheduler;  // null when the trace has no connector
    std::unique_ptr<KVConnectorWorker> worker;
};

// Builds the connector stack a trace asks for: one connector, or a MultiConnector over
// the trace's connector lines in order. Precondition: the trace was validated.
ConnectorStack make_connector_stack(const ConnectorContext& context);

}  // namespace kvsim
