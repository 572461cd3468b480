#include "sim/engine/connector_factory.h"

#include <stdexcept>

#include "sim/connector/mock/mock_connector.h"
#include "sim/connector/mooncake/mooncake_connector_scheduler.h"
#include "sim/connector/mooncake/mooncake_connector_worker.h"
#include "sim/connector/mooncake/store/scheduler.h"
#include "sim/connector/mooncake/store/worker.h"
#include "sim/connector/multi_connector.h"
#include "sim/connector/stand_in_connector.h"

namespace kvsim {
namespace {

ConnectorStack make_one(const ConnectorSpec& spec, const ConnectorContext& ctx) {
    ConnectorStack stack;
    const EngineConfig& engine = ctx.trace->engine;
    if (spec.kind == "stand_in") {
        stack.scheduler = std::make_unique<StandInConnectorScheduler>(spec);
        stack.worker = std::make_unique<StandInConnectorWorker>(spec);
    } else if (spec.kind == "mock") {
        stack.scheduler = std::make_unique<MockConnectorScheduler>(spec);
        stack.worker = std::make_unique<MockConnectorWorker>(*ctx.worker_env, *ctx.scripted);
    } else if (spec.kind == "p2p") {
        stack.scheduler = std::make_unique<MooncakeConnectorScheduler>(spec, *ctx.log, *ctx.variant);
        stack.worker = std::make_unique<MooncakeConnectorWorker>(spec, *ctx.worker_env);
    } else if (spec.kind == "store") {
        stack.scheduler = std::make_unique<MooncakeStoreScheduler>(spec, engine, *ctx.variant, ctx.trace->workers.ranks,
                                                                   *ctx.store, *ctx.faults, *ctx.log);
        auto worker = std::make_unique<MooncakeStoreWorker>(spec, engine, *ctx.variant, *ctx.worker_env, *ctx.store);
        worker->script_reports(ctx.scripted);
        stack.worker = std::move(worker);
    } else {
        throw std::invalid_argument("unknown connector kind " + spec.kind);
    }
    return stack;
}

}  // namespace

ConnectorStack make_connector_stack(const ConnectorContext& ctx) {
    const auto& specs = ctx.trace->connectors;
    if (specs.empty()) return {};
    // A `multi` line is upstream's kv_connector="MultiConnector": it wraps even a single child, as
    // MultiConnector.__init__ takes any list of connectors (multi_connector.py @
    // 00f4240ee6458263d76cf51ca7901ce1350bb4d1).
    if (specs.size() == 1 && !ctx.trace->multi) return make_one(specs.front(), ctx);
    std::vector<std::unique_ptr<KVConnectorScheduler>> schedulers;
    std::vector<std::unique_ptr<KVConnectorWorker>> workers;
    for (const auto& spec : specs) {
        ConnectorStack child = make_one(spec, ctx);
        schedulers.push_back(std::move(child.scheduler));
        workers.push_back(std::move(child.worker));
    }
    ConnectorStack stack;
    stack.scheduler = std::make_unique<MultiConnectorScheduler>(std::move(schedulers), *ctx.variant);
    stack.worker = std::make_unique<MultiConnectorWorker>(std::move(workers), *ctx.variant);
    return stack;
}

}  // namespace kvsim
