#pragma once
#include <memory>

#include "sim/connector/connector.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct ConnectorStack {
    std::unique_ptr<KVConnectorScheduler> scheduler;  // null when the trace has no connector
    std::unique_ptr<KVConnectorWorker> worker;
};

// Builds the connector stack a trace asks for. Precondition: the trace was validated.
ConnectorStack make_connector_stack(const Trace& trace, const Variant& variant);

}  // namespace kvsim
