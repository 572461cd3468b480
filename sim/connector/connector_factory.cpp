#include "sim/connector/connector_factory.h"

#include <stdexcept>

#include "sim/connector/stand_in_connector.h"

namespace kvsim {

ConnectorStack make_connector_stack(const Trace& trace, const Variant& /*variant*/) {
    ConnectorStack stack;
    if (trace.connectors.empty()) return stack;
    if (trace.connectors.size() > 1) throw std::invalid_argument("MultiConnector is not modelled yet");
    const ConnectorSpec& spec = trace.connectors.front();
    if (spec.kind != "stand_in") throw std::invalid_argument("unknown connector kind " + spec.kind);
    stack.scheduler = std::make_unique<StandInConnectorScheduler>(spec);
    stack.worker = std::make_unique<StandInConnectorWorker>(spec);
    return stack;
}

}  // namespace kvsim
