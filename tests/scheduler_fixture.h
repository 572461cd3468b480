#pragma once
// Drives a Scheduler by hand: schedule, sample, update — one engine step at a time.
#include <memory>
#include <string>
#include <vector>

#include "sim/connector/stand_in_connector.h"
#include "sim/core/sched/scheduler.h"
#include "sim/engine/engine.h"
#include "sim/common/event_log.h"
#include "sim/variant/variant.h"

namespace kvsim::testing {

inline std::vector<TokenId> tokens(int n, int base = 1000) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) out.push_back(base + i);
    return out;
}

// One engine step by hand: schedule, sample one token per completed prefill, let `worker`
// (if any) execute the step and report, else feed `kv` back, then update_from_output.
inline SchedulerOutput step_engine(Scheduler& scheduler, EventLog& log, int step, KVConnectorWorker* worker = nullptr,
                                   std::optional<KVConnectorOutput> kv = std::nullopt) {
    log.set_step(step);
    SchedulerOutput out = scheduler.schedule(step);
    ModelRunnerOutput mro;
    for (const auto& [id, n] : out.num_scheduled_tokens) {
        auto& sampled = mro.sampled_token_ids[id];
        const auto* slot = scheduler.requests().find(id);
        if (slot != nullptr && (*slot)->num_computed_tokens >= (*slot)->num_tokens())
            sampled.push_back(sampled_token(id, (*slot)->num_tokens()));
    }
    if (worker != nullptr) {
        worker->execute(step, out);
        kv = worker->get_finished(step, out.finished_req_ids);
    }
    mro.kv_connector_output = std::move(kv);
    scheduler.update_from_output(out, mro);
    return out;
}

struct SchedulerHarness {
    explicit SchedulerHarness(EngineConfig cfg, KVConnectorScheduler* connector = nullptr,
                              const std::string& variant = "v0.30.0")
        : config(cfg), scheduler(cfg, require_variant(variant), connector, log) {}

    // Distinct token ranges per request unless `base` is given, so prompts share no prefix by accident.
    void add(const std::string& id, int prompt_len, int max_tokens, bool remote_prefill = false, int base = -1) {
        if (base < 0) base = 1000 * static_cast<int>(++added);
        KvTransferParams params;
        params.do_remote_prefill = remote_prefill;
        scheduler.add_request(
            std::make_unique<Request>(id, tokens(prompt_len, base), max_tokens, config.block_size, step, params));
    }

    const Request& req(const std::string& id) const { return *scheduler.requests().at(id); }
    bool alive(const std::string& id) const { return scheduler.requests().contains(id); }
    std::vector<BlockId> blocks(const std::string& id) const { return scheduler.kv_cache_manager().get_block_ids(id); }

    // One step: schedule, sample one token per completed prefill, feed `kv` back.
    SchedulerOutput run_step(std::optional<KVConnectorOutput> kv = std::nullopt) {
        return step_engine(scheduler, log, step++, nullptr, std::move(kv));
    }

    EngineConfig config;
    EventLog log;
    Scheduler scheduler;
    int step = 0;
    std::size_t added = 0;
};

inline std::vector<std::string> new_ids(const SchedulerOutput& out) {
    std::vector<std::string> ids;
    for (const auto& nr : out.scheduled_new_reqs) ids.push_back(nr.req_id);
    return ids;
}

}  // namespace kvsim::testing
