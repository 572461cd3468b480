#include "sim/engine/engine.h"

#include <fmt/format.h>

#include <span>

#include "sim/common/model_check.h"
#include "sim/common/stable_hash.h"
#include "sim/core/sched/async_scheduler.h"
#include "sim/trace/scheduling_mode.h"
#include "sim/trace/trace_schema.h"

namespace kvsim {

namespace {
// EngineCore.__init__: batch_queue_size = max_concurrent_batches, 2 under async scheduling.
constexpr std::size_t kBatchQueueSize = 2;
constexpr ModelCheck model_check{.component = "engine model"};
}  // namespace

TokenId sampled_token(const std::string& request_id, int position) {
    const std::uint64_t h = hash_combine(fnv1a(request_id), static_cast<std::uint64_t>(position));
    return static_cast<TokenId>(1 + h % 50000);
}

Engine::Engine(const Trace& trace, const Variant& variant)
    : trace_(trace),
      segments_(trace),
      variant_(variant),
      prng_(trace.run.seed),
      scripted_(trace),
      batch_queue_(kBatchQueueSize) {
    variant_.reads = &reads_;
    env_.config = trace.workers;
    env_.prng = &prng_;
    env_.faults = &faults_;
    env_.log = &log_;
    seed_store();
    ConnectorContext context;
    context.trace = &trace_;
    context.variant = &variant_;
    context.store = &store_;
    context.faults = &faults_;
    context.worker_env = &env_;
    context.log = &log_;
    context.scripted = &scripted_;
    connectors_ = make_connector_stack(context);
    async_scheduling_ = resolved_async_scheduling(trace.engine, variant_);
    SchedulerOptions options;
    options.max_concurrent_batches = async_scheduling_ ? static_cast<int>(kBatchQueueSize) : 1;
    // Scheduler.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06 reads the top-level kv_transfer_config
    // (defer_block_free: is_kv_consumer) and the connector's requires_kv_delivery, which MultiConnector
    // answers for any child (multi_connector.py @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1).
    const std::optional<KvRole> top = top_level_role(trace);
    options.kv_consumer = top.has_value() && is_kv_consumer(*top);
    for (const ConnectorSpec& spec : trace.connectors) {
        options.kv_producer = options.kv_producer || is_kv_producer(spec.role);
        options.kv_loader = options.kv_loader || is_kv_consumer(spec.role) || (spec.kind == "store" && spec.enable_lookup);
    }
    // SchedulerConfig.get_scheduler_cls @ 1f8758d584e8f599219d75adf658e182ed809a43
    if (async_scheduling_)
        scheduler_ = std::make_unique<AsyncScheduler>(trace.engine, variant_, connectors_.scheduler.get(), log_, options);
    else
        scheduler_ = std::make_unique<Scheduler>(trace.engine, variant_, connectors_.scheduler.get(), log_, options);
}

// The prefill side wrote these prompts' full blocks to the store before the run.
void Engine::seed_store() {
    const int bs = trace_.engine.block_size;
    for (const auto& entry : trace_.store) {
        const auto tokens = segments_.concat(entry.prefix);
        BlockHash parent = kNoneHash;
        for (std::size_t start = 0; start + static_cast<std::size_t>(bs) <= tokens.size(); start += static_cast<std::size_t>(bs)) {
            parent = hash_block_tokens(parent, std::span<const TokenId>(tokens).subspan(start, static_cast<std::size_t>(bs)));
            store_.put(parent);
        }
    }
}

void Engine::apply_events(int step) {
    while (next_event_ < trace_.events.size() && trace_.events[next_event_].step <= step) {
        const Event& event = trace_.events[next_event_++];
        if (const auto* arrive = std::get_if<ArriveEvent>(&event.body)) {
            apply_arrive(step, *arrive);
        } else if (const auto* abort = std::get_if<AbortEvent>(&event.body)) {
            scheduler_->finish_requests({abort->request_id}, RequestStatus::finished_aborted);
        } else if (const auto* fault = std::get_if<FaultEvent>(&event.body)) {
            log_fault(*fault);
            faults_.apply(*fault);
        } else if (const auto* stop = std::get_if<StopEvent>(&event.body)) {
            stops_.push_back(stop->request_id);
        } else if (std::holds_alternative<ResetPrefixCacheEvent>(event.body)) {
            apply_reset_prefix_cache();
        }  // a ReportEvent joins the step's worker output (add_scripted_reports)
    }
}

// "{kind} KEY={KEY}...": only the keys the fault's kind takes, as the trace schema says (a
// load_fail names its request, a store_fail its rank).
void Engine::log_fault(const FaultEvent& fault) {
    const std::string_view kind = to_string(fault.kind);
    const auto applies = [&](std::string_view key) {
        for (const Row<FaultEvent>& row : fault_schema().rows)
            if (row.spec.name == key) return key_applies(row.spec, kind);
        return false;
    };
    std::string format = "{kind}";
    for (std::string_view key : {"rank", "steps", "request"})
        if (applies(key)) format += fmt::format(" {0}={{{0}}}", key);
    EventBuilder event = log_.event(EventCategory::fault, format);
    event.status("kind", kind);
    if (applies("rank")) event.integer("rank", fault.rank);
    if (applies("steps")) event.integer("steps", fault.steps);
    if (applies("request")) event.request(fault.request_id);
}

// An id still alive (a stopped or aborted request whose blocks are held) is not reused: the
// arrival is skipped.
void Engine::apply_arrive(int step, const ArriveEvent& arrive) {
    if (scheduler_->requests().contains(arrive.request_id)) {
        log_.event(EventCategory::arrive, "{request} skipped (id in use)").request(arrive.request_id).flag("skipped", true);
        return;
    }
    KvTransferParams params;
    params.do_remote_prefill = arrive.remote_prefill;
    params.do_remote_decode = arrive.remote_decode;
    if (arrive.external >= 0) params.external_tokens = arrive.external;
    scheduler_->add_request(std::make_unique<Request>(arrive.request_id, segments_.concat(arrive.prompt),
                                                      arrive.max_tokens, trace_.engine.block_size, step, params));
}

void Engine::apply_reset_prefix_cache() {
    const bool ok = scheduler_->reset_prefix_cache();
    log_.event(EventCategory::reset, ok ? "reset_prefix_cache ok" : "reset_prefix_cache failed (blocks in use)")
        .flag("ok", ok);
}

// The model runner samples EOS for each request a `stop` event names, when it samples at all.
void Engine::sample_stops(ModelRunnerOutput& result) {
    for (const std::string& id : stops_) {
        auto* sampled = result.sampled_token_ids.find(id);
        const bool samples = sampled != nullptr && !sampled->empty();
        if (samples) sampled->back() = kEosTokenId;
        log_.event(EventCategory::worker, samples ? "stop {request} (EOS)" : "stop {request} ignored (samples nothing)")
            .request(id)
            .flag("eos", samples);
    }
    stops_.clear();
}

// The trace's `report` events of this step, with block-table indexes resolved to block ids.
void Engine::add_scripted_reports(int step, KVConnectorOutput& kv) {
    const KVCacheManager& manager = scheduler_->kv_cache_manager();
    for (const ReportEvent* report : scripted_.at(step)) {
        const std::string& id = report->request_id;
        const std::vector<BlockId>& table = manager.get_block_ids(id);
        std::vector<BlockId> invalid;
        switch (report->kind) {
            case ReportKind::finished_recving: kv.finished_recving.insert(id); break;
            case ReportKind::finished_sending: kv.finished_sending.insert(id); break;
            case ReportKind::failed_recving:
                kv.finished_recving.insert(id);
                for (BlockId b : table)
                    if (!manager.block_pool().block(b).hash) invalid.push_back(b);
                break;
            case ReportKind::invalid_blocks:
                for (const std::int32_t i : report->index)
                    if (static_cast<std::size_t>(i) < table.size()) invalid.push_back(table[static_cast<std::size_t>(i)]);
                break;
            case ReportKind::store_done: break;  // the store worker completed the copy (release_scripted_copies)
        }
        kv.invalid_block_ids.insert(invalid.begin(), invalid.end());
        log_.event(EventCategory::worker, "report {kind} {request} invalid={invalid}")
            .status("kind", to_string(report->kind))
            .request(id)
            .blocks("invalid", invalid);
    }
}

// vllm/v1/worker/gpu_model_runner.py GPUModelRunner.execute_model: one sampled token per
// request whose prompt is complete after this step; partial prefills sample nothing.
ModelRunnerOutput Engine::execute_model(int step, const SchedulerOutput& output) {
    ModelRunnerOutput result = std::move(spare_runner_output_);
    clear_for_reuse(result);
    result.sampled_token_ids.reserve(output.num_scheduled_tokens.size());
    report_forward_writes(output);
    for (const auto& [id, n] : output.num_scheduled_tokens) {
        const auto* slot = scheduler_->requests().find(id);
        auto& sampled = result.sampled_token_ids[id];
        if (slot == nullptr) continue;
        const Request& req = **slot;
        if (!req.is_prefill_chunk) sampled.push_back(sampled_token(id, req.num_computed_tokens));
    }
    sample_stops(result);
    if (connectors_.worker) {
        connectors_.worker->execute(step, output);
        KVConnectorOutput kv = connectors_.worker->get_finished(step, output.finished_req_ids);
        add_scripted_reports(step, kv);
        if (!kv.finished_recving.empty())
            log_.event(EventCategory::worker, "finished_recving={finished_recving}")
                .requests("finished_recving", kv.finished_recving);
        if (!kv.finished_sending.empty())
            log_.event(EventCategory::worker, "finished_sending={finished_sending}")
                .requests("finished_sending", kv.finished_sending);
        result.kv_connector_output = std::move(kv);
    }
    return result;
}

// The forward pass writes the KV of each scheduled request's new tokens into the blocks that hold them.
void Engine::report_forward_writes(const SchedulerOutput& output) {
    if (env_.observer == nullptr) return;
    const int bs = trace_.engine.block_size;
    for (const auto& [id, n] : output.num_scheduled_tokens) {
        const auto* slot = scheduler_->requests().find(id);
        if (slot == nullptr || n <= 0) continue;
        const int end = (*slot)->num_computed_tokens;
        const std::vector<BlockId>& table = scheduler_->kv_cache_manager().get_block_ids(id);
        forward_written_.clear();
        for (int b = (end - n) / bs; b <= (end - 1) / bs && b < static_cast<int>(table.size()); ++b)
            if (table[static_cast<std::size_t>(b)] != kNullBlockId) forward_written_.push_back(table[static_cast<std::size_t>(b)]);
        env_.observer->forward_dispatched(output.sched_seq, id, forward_written_);
    }
}

void Engine::run_step(int step) {
    last_step_ = step;
    log_.set_step(step);
    faults_.set_step(step);
    scheduler_->clear_transitions();
    apply_events(step);
    if (async_scheduling_) step_with_batch_queue(step);
    else step_sync(step);
}

// vllm/v1/engine/core.py EngineCore.step @ ac3cb2e2eca80290181abb9365d572af6d287473
void Engine::step_sync(int step) {
    SchedulerOutput output = scheduler_->schedule(step);
    last_connector_metadata_ = output.kv_connector_metadata;
    if (schedule_probe_) schedule_probe_(output);
    ModelRunnerOutput runner_output = execute_model(step, output);
    if (env_.observer != nullptr) env_.observer->forward_completed(output.sched_seq);
    scheduler_->update_from_output(output, runner_output);
    recycle(std::move(output), std::move(runner_output));
}

// The processed outputs go back to be filled again (Scheduler::recycle), so a step reuses their storage.
void Engine::recycle(SchedulerOutput&& output, ModelRunnerOutput&& runner_output) {
    scheduler_->recycle(std::move(output));
    spare_runner_output_ = std::move(runner_output);
}

// vllm/v1/engine/core.py EngineCore.step_with_batch_queue @ ac3cb2e2eca80290181abb9365d572af6d287473: schedule
// and dispatch a batch while the queue has room, and process the oldest batch's output only when the queue
// is full or nothing was scheduled. The model's GPU never finishes a batch early (`done()` is false).
void Engine::step_with_batch_queue(int step) {
    last_connector_metadata_.reset();
    // Scheduler.has_requests @ 003df2961dd8830c317a61f9745ccd557da9fa06 (finished ids still to send count). As in
    // step_sync, a step also runs while only the connector has work (store jobs still pinning blocks, pushes
    // pending, a scripted worker report due in this step's output): its worker is polled through execute_model.
    const bool worker_reports = !scripted_.at(step).empty();
    if (scheduler_->has_requests() || scheduler_->has_finished_requests() || connector_busy() || worker_reports) {
        SchedulerOutput output = scheduler_->schedule(step);
        last_connector_metadata_ = output.kv_connector_metadata;
        if (schedule_probe_) schedule_probe_(output);
        const bool model_executed = output.total_num_scheduled_tokens > 0;
        ModelRunnerOutput runner_output = execute_model(step, output);
        model_check(!batch_queue_.full(), "a batch dispatched while the batch queue is full");
        batch_queue_.push_front({std::move(output), std::move(runner_output)});
        if (model_executed && batch_queue_.size() < kBatchQueueSize) return;
    } else if (batch_queue_.empty()) {
        return;
    }
    InFlightBatch oldest = std::move(batch_queue_.back());
    batch_queue_.pop_back();
    log_.event(EventCategory::schedule, "process output of step {of}").integer("of", oldest.output.step);
    if (env_.observer != nullptr) env_.observer->forward_completed(oldest.output.sched_seq);
    scheduler_->update_from_output(oldest.output, oldest.runner_output);
    recycle(std::move(oldest.output), std::move(oldest.runner_output));
}

bool Engine::connector_busy() const {
    if (connectors_.worker && connectors_.worker->busy()) return true;
    return connectors_.scheduler && connectors_.scheduler->has_pending_push_work();
}

bool Engine::quiet() const {
    if (!batch_queue_.empty()) return false;
    if (scheduler_->has_requests()) return false;
    return !connector_busy();
}

}  // namespace kvsim
