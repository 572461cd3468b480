#include "sim/core/sched/scheduler.h"

#include <algorithm>
#include <stdexcept>

#include "sim/common/model_check.h"
#include "sim/common/upstream_assertion.h"
#include "sim/common/event_log.h"

namespace kvsim {
namespace {

constexpr const char* kSchedulerPy = "vllm/v1/core/sched/scheduler.py";

constexpr ModelCheck model_check{.component = "scheduler model"};

int cdiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

struct Scheduler::StepState {
    int step = 0;
    int token_budget = 0;
    std::vector<std::string> scheduled_new;
    std::vector<std::string> scheduled_resumed;
    std::vector<std::string> scheduled_running;
    std::vector<std::string> preempted;
    OrderedMap<std::vector<BlockId>> req_to_new_blocks;  // delta for running, full table for admitted
    OrderedMap<int> num_scheduled_tokens;

    // The state of a new schedule() call; the lists keep what they allocated before.
    void restart(int step_index, int budget) {
        step = step_index;
        token_budget = budget;
        scheduled_new.clear();
        scheduled_resumed.clear();
        scheduled_running.clear();
        preempted.clear();
        req_to_new_blocks.clear();
        num_scheduled_tokens.clear();
    }
};

Scheduler::Scheduler(const EngineConfig& config, const Variant& variant, KVConnectorScheduler* connector,
                     EventLog& log, SchedulerOptions options)
    : config_(config),
      variant_(variant),
      connector_(connector),
      log_(log),
      kv_cache_manager_(static_cast<std::uint32_t>(config.num_blocks), config.block_size, config.max_model_len,
                        config.prefix_caching, variant.flag<&Variant::free_order>()),
      // Scheduler.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06: recompute_kv_load_failures
      recompute_kv_load_failures_((config.kv_load_failure_policy ? *config.kv_load_failure_policy
                                                                  : variant.flag<&Variant::load_failure_policy_default>()) ==
                                  LoadFailurePolicy::recompute),
      // Scheduler.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06; KVConnectorBase_V1.requires_kv_delivery
      // (is_kv_producer) and MultiConnector's (any of its connectors) at the same commit
      requires_kv_delivery_(connector != nullptr && options.kv_producer) {
    if (connector_ != nullptr) connector_->bind_gpu_block_pool(&kv_cache_manager_.block_pool());
    // Scheduler.__init__ after vllm-project/vllm#45357: defer only with overlapping batches and a KV consumer.
    // A KV consumer is also a loader, so the scope flag decides only for a loader that consumes nothing.
    const bool fenced_stack =
        options.kv_consumer ||
        (options.kv_loader && variant_.flag<&Variant::deferred_free_scope>() == DeferredFreeScope::any_loader);
    may_defer_block_free_ = options.max_concurrent_batches > 1 && connector_ != nullptr && fenced_stack;
}

Scheduler::~Scheduler() = default;

Request& Scheduler::request(const std::string& id) {
    auto* slot = requests_.find(id);
    model_check(slot != nullptr && *slot != nullptr, "unknown request id");
    return **slot;
}

void Scheduler::set_status(Request& req, RequestStatus status) {
    transitions_.push_back(
        {.req_id = req.id(), .from = req.status, .to = status, .num_computed_tokens = req.num_computed_tokens});
    req.status = status;
}

void Scheduler::add_request(std::unique_ptr<Request> req) {
    model_check(!requests_.contains(req->id()), "duplicate request id");
    const std::string id = req->id();
    const bool remote_prefill = req->kv_transfer_params.do_remote_prefill;
    log_.event(EventCategory::arrive, remote_prefill ? "{request} prompt={prompt} max_tokens={max_tokens} remote_prefill"
                                                     : "{request} prompt={prompt} max_tokens={max_tokens}")
        .request(id)
        .integer("prompt", req->num_prompt_tokens())
        .integer("max_tokens", req->max_tokens())
        .flag("remote_prefill", remote_prefill);
    transitions_.push_back(
        {.req_id = id, .from = std::nullopt, .to = req->status, .num_computed_tokens = req->num_computed_tokens});
    waiting_.push_back(id);  // no blocked status at arrival in this model
    requests_[id] = std::move(req);
}

// Scheduler._select_waiting_queue_for_scheduling @ 003df2961dd8830c317a61f9745ccd557da9fa06 (FCFS: skipped first)
std::deque<std::string>& Scheduler::select_waiting_queue() {
    return !skipped_waiting_.empty() ? skipped_waiting_ : waiting_;
}

SchedulerOutput Scheduler::schedule(int step) {
    if (!step_state_) step_state_ = std::make_unique<StepState>();
    StepState& st = *step_state_;
    st.restart(step, config_.max_batched_tokens);
    st.req_to_new_blocks.reserve(running_.size());
    st.num_scheduled_tokens.reserve(running_.size());

    schedule_running(st);
    if (st.preempted.empty()) schedule_waiting(st);

    int total = 0;
    for (const auto& [id, n] : st.num_scheduled_tokens) total += n;
    model_check(total <= config_.max_batched_tokens, "scheduled more tokens than the budget");
    model_check(st.token_budget >= 0, "negative token budget");
    model_check(static_cast<int>(running_.size()) <= config_.max_running, "running exceeds max_running");

    SchedulerOutput out = std::move(spare_output_);
    clear_for_reuse(out);
    out.step = step;
    out.sched_seq = ++sched_step_seq_;
    out.total_num_scheduled_tokens = total;
    build_output(st, out);

    if (connector_ != nullptr) {
        out.kv_connector_metadata = connector_->build_connector_meta(out);
        if (out.kv_connector_metadata && log_.wants(EventCategory::meta))
            for (LogEvent& event : out.kv_connector_metadata->log_events()) log_.append(std::move(event));
    }
    if (out.kv_connector_block_state) spare_block_state_ = std::move(*out.kv_connector_block_state);
    out.kv_connector_block_state.reset();  // workers never see it
    update_after_schedule(out);
    return out;
}

// Scheduler.schedule, running phase @ 003df2961dd8830c317a61f9745ccd557da9fa06
void Scheduler::schedule_running(StepState& st) {
    std::size_t index = 0;
    while (index < running_.size() && st.token_budget > 0) {
        Request& req = request(running_[index]);
        const int num_new = num_new_running_tokens(req, st.token_budget);
        if (num_new <= 0) {  // skip, not break: FCFS is deliberately not strict here
            ++index;
            continue;
        }
        std::optional<std::vector<BlockId>> new_blocks;
        while (true) {
            new_blocks = kv_cache_manager_.allocate_slots(req, num_new);
            if (new_blocks) break;
            // FCFS victim: the last running request.
            const std::string victim_id = running_.back();
            if (victim_frees_nothing_for_pins(victim_id)) break;  // stop the retry (new_blocks stays empty)
            if (self_victim_waits_for_pins(req, victim_id, num_new)) break;
            // vllm-project/vllm#49675: a victim whose free is fenced would free nothing now.
            if (should_defer_block_free(request(victim_id)) &&
                variant_.flag<&Variant::fenced_victim>() == FencedVictim::stops_retry)
                break;
            running_.pop_back();
            Request& victim = request(victim_id);
            preempt_request(victim);
            st.preempted.push_back(victim_id);
            if (victim_id == req.id()) break;
        }
        if (!new_blocks) break;  // the request preempted itself
        st.scheduled_running.push_back(req.id());
        if (!new_blocks->empty()) log_alloc(req.id(), *new_blocks);
        st.req_to_new_blocks[req.id()] = std::move(*new_blocks);
        st.num_scheduled_tokens[req.id()] = num_new;
        st.token_budget -= num_new;
        ++index;
    }
}

// Scheduler.schedule, running phase @ b4622cf924bc72504aed99e486062d6633fde39e: the tokens a running request
// wants, output placeholders included; 0 when async scheduling already reached max_tokens.
int Scheduler::num_new_running_tokens(const Request& req, int token_budget) const {
    if (req.num_output_placeholders > 0 &&
        req.num_computed_tokens + 2 - req.num_output_placeholders >= req.num_prompt_tokens() + req.max_tokens())
        return 0;
    int num_new = req.num_tokens() + req.num_output_placeholders - req.num_computed_tokens;
    if (config_.long_prefill_threshold > 0 && num_new > config_.long_prefill_threshold)
        num_new = config_.long_prefill_threshold;
    num_new = std::min(num_new, token_budget);
    return std::min(num_new, config_.max_model_len - 1 - req.num_computed_tokens);
}

// The guard of vllm-project/vllm#49675 (stop the allocation retry when the policy-selected victim's free is
// fenced), extended by pinned_victim=stops_retry to store-job pins: every block of the victim stays
// referenced after its free, and store jobs pin some of them.
bool Scheduler::victim_frees_nothing_for_pins(const std::string& victim_id) const {
    if (connector_ == nullptr || variant_.flag<&Variant::pinned_victim>() != PinnedVictim::stops_retry) return false;
    const std::vector<BlockId> pinned = connector_->pinned_blocks();
    const BlockPool& pool = kv_cache_manager_.block_pool();
    bool any_pinned = false;
    for (BlockId b : kv_cache_manager_.get_block_ids(victim_id)) {
        if (b == kNullBlockId) continue;
        if (pool.block(b).ref_cnt <= 1) return false;  // the free would return this block
        any_pinned = any_pinned || std::find(pinned.begin(), pinned.end(), b) != pinned.end();
    }
    return any_pinned;
}

// pinned_self_victim=waits_for_pins (kvsim fix): once the retry reaches the request itself, preempting it
// throws away its computed tokens, while blocks that only store-job pins hold return to the pool when
// their jobs report. When those would cover what the allocation lacks, the request skips the step.
bool Scheduler::self_victim_waits_for_pins(const Request& req, const std::string& victim_id, int num_new) const {
    if (connector_ == nullptr || victim_id != req.id()) return false;
    if (variant_.flag<&Variant::pinned_self_victim>() != PinnedSelfVictim::waits_for_pins) return false;
    const int wanted = kv_cache_manager_.num_blocks_to_allocate(req.id(), req.num_computed_tokens + num_new, {});
    const int lacking = wanted - static_cast<int>(kv_cache_manager_.block_pool().num_free_blocks());
    const int returning = blocks_held_only_by_pins();
    return returning > 0 && returning >= lacking;
}

// Blocks whose every reference is a store job's pin (a block two jobs pin counts once).
int Scheduler::blocks_held_only_by_pins() const {
    std::vector<BlockId> pinned = connector_->pinned_blocks();
    std::sort(pinned.begin(), pinned.end());
    const BlockPool& pool = kv_cache_manager_.block_pool();
    int count = 0;
    for (auto at = pinned.begin(); at != pinned.end();) {
        const auto last = std::upper_bound(at, pinned.end(), *at);
        if (*at != kNullBlockId && pool.block(*at).ref_cnt == last - at) ++count;
        at = last;
    }
    return count;
}

// Scheduler._preempt_request @ 003df2961dd8830c317a61f9745ccd557da9fa06 (the connector is not told here)
void Scheduler::preempt_request(Request& req) {
    if (req.status != RequestStatus::running)
        throw UpstreamAssertion("preempt_not_running", std::string(kSchedulerPy) + " Scheduler._preempt_request",
                                "Only running requests can be preempted", req.id());
    const auto blocks = kv_cache_manager_.get_block_ids(req.id());
    free_request_blocks(req);
    inflight_prefills_.erase(req.id());
    set_status(req, RequestStatus::preempted);
    req.num_computed_tokens = 0;
    mark_output_in_flight_stale(req);
    req.num_preemptions += 1;
    waiting_.push_front(req.id());
    reset_preempted_req_ids_.insert(req.id());
    log_.event(EventCategory::preempt, "{request} freed={blocks}").request(req.id()).blocks("blocks", blocks);
}

// Scheduler._preempt_request @ 003df2961dd8830c317a61f9745ccd557da9fa06, its async part (#48245; the drop from
// #50297, the KV-pressure preemption passing requires_kv_delivery): the tokens in flight become stale.
void Scheduler::mark_output_in_flight_stale(Request& req) {
    const PreemptedOutput rule = variant_.flag<&Variant::preempted_output>();
    if (rule == PreemptedOutput::placeholders_kept) return;
    const bool drop = rule == PreemptedOutput::stale_dropped_for_producers && requires_kv_delivery_;
    req.drop_stale_output = drop || (req.drop_stale_output && req.num_stale_output_tokens > 0);
    req.num_stale_output_tokens = req.num_in_flight_tokens;
    req.num_output_placeholders = 0;
}

// Scheduler.update_from_output @ 003df2961dd8830c317a61f9745ccd557da9fa06, the head of its per-request loop: the
// step's tokens leave flight and drain a stale share in lockstep. True when this output is stale.
bool Scheduler::drain_output_in_flight(Request& req, int num_scheduled) {
    req.num_in_flight_tokens -= num_scheduled;
    model_check(req.num_in_flight_tokens >= 0, "a step's tokens left flight twice");
    if (req.num_stale_output_tokens == 0) return false;
    req.num_stale_output_tokens -= num_scheduled;
    if (req.num_stale_output_tokens < 0)
        throw UpstreamAssertion("negative_stale_output_tokens", std::string(kSchedulerPy) + " Scheduler.update_from_output",
                                "assert request.num_stale_output_tokens >= 0 (" + req.id() + ")", req.id());
    return true;
}

// Scheduler._try_promote_blocked_waiting_request @ 003df2961dd8830c317a61f9745ccd557da9fa06
bool Scheduler::try_promote_blocked_waiting_request(Request& req) {
    model_check(req.status == RequestStatus::waiting_for_remote_kvs, "only remote-KV waits are modelled");
    if (!finished_recving_kv_req_ids_.contains(req.id())) return false;
    update_waiting_for_remote_kv(req);
    release_remote_kv_load(req.id());
    set_status(req, req.num_preemptions > 0 ? RequestStatus::preempted : RequestStatus::waiting);
    log_.event(EventCategory::promote, "{request} computed={computed} status={status}")
        .request(req.id())
        .integer("computed", req.num_computed_tokens)
        .status("status", to_string(req.status));
    return true;
}

// Scheduler._update_waiting_for_remote_kv @ 003df2961dd8830c317a61f9745ccd557da9fa06
void Scheduler::update_waiting_for_remote_kv(Request& req) {
    model_check(connector_ != nullptr, "remote KV wait without a connector");
    if (failed_recving_kv_req_ids_.erase(req.id()) > 0) {
        // The load failed: keep the valid prefix (already rewound), or start over.
        if (req.num_computed_tokens > 0) {
            kv_cache_manager_.cache_blocks(req, req.num_computed_tokens);
            // failed_load_full_prompt=capped (kvsim's fix): the success branch's full-prompt rule, which upstream's
            // failed branch lacks; a sharer whose invalid blocks another request marked keeps its whole count.
            if (req.num_computed_tokens == req.num_tokens() &&
                variant_.flag<&Variant::failed_load_full_prompt>() == FailedLoadFullPrompt::capped)
                req.num_computed_tokens = req.num_tokens() - 1;
        } else {
            kv_cache_manager_.free(req);
            // failed_load_inflight=discarded (kvsim's fix): with no blocks left, the request must not
            // reserve its own whole demand when it is admitted as an async load again.
            if (variant_.flag<&Variant::failed_load_inflight>() == FailedLoadInflight::discarded)
                inflight_prefills_.erase(req.id());
        }
    } else {
        kv_cache_manager_.cache_blocks(req, req.num_computed_tokens);
        if (req.num_computed_tokens == req.num_tokens()) req.num_computed_tokens = req.num_tokens() - 1;
    }
    finished_recving_kv_req_ids_.erase(req.id());
}

// blockless_failed_load=requeued_waiting (kvsim's fix; vllm-project/vllm#57841 names the recompute policy among its
// limits): a promoted request whose failed load freed every block would head skipped_waiting holding none, ahead
// of parked loads that hold blocks; it re-enters waiting at the front instead, as a preempted request does.
bool Scheduler::requeue_blockless_failed_load(std::deque<std::string>& queue, const Request& req) {
    if (&queue != &skipped_waiting_ || kv_cache_manager_.has_blocks(req.id()) ||
        variant_.flag<&Variant::blockless_failed_load>() != BlocklessFailedLoad::requeued_waiting)
        return false;
    queue.pop_front();
    waiting_.push_front(req.id());
    return true;
}

// Scheduler._inflight_prefill_reserved_blocks @ 003df2961dd8830c317a61f9745ccd557da9fa06
int Scheduler::inflight_prefill_reserved_blocks() const {
    int reserved = 0;
    for (const auto& id : inflight_prefills_) {
        const auto* slot = requests_.find(id);
        if (slot == nullptr) continue;
        const Request& req = **slot;
        const int needed = cdiv(std::min(req.num_tokens(), config_.max_model_len), config_.block_size);
        const int held = static_cast<int>(kv_cache_manager_.get_block_ids(id).size());
        reserved += std::max(needed - held, 0);
    }
    return reserved;
}

KVCacheBlocks Scheduler::blocks_of(const std::string& req_id) const {
    KVCacheBlocks blocks = KVCacheBlocks::empty(1);
    const auto& pool = kv_cache_manager_.block_pool();
    const std::vector<BlockId>& ids = kv_cache_manager_.get_block_ids(req_id);
    blocks.block_ids[0].reserve(ids.size());
    for (BlockId id : ids) {
        blocks.block_ids[0].push_back(id);
        if (!pool.block(id).hash) blocks.unhashed_block_ids[0].push_back(id);
    }
    return blocks;
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06: the prefix this request already has,
// locally (prefix cache) and externally (the connector); nullopt while the connector's lookup is pending.
std::optional<Scheduler::WaitingMatch> Scheduler::match_waiting_prefix(Request& req) {
    WaitingMatch m;
    if (req.num_computed_tokens != 0) {
        m.num_computed = req.num_computed_tokens;
        return m;
    }
    const ComputedBlocks local = kv_cache_manager_.get_computed_blocks(req);
    m.hits = local.blocks;
    m.num_local = local.num_tokens;
    if (connector_ != nullptr) {
        // Full-attention hits are whole blocks, so the block-aligned part of the local hit
        // is all of it and the sub-block tail reconciliation never applies.
        const MatchResult match = connector_->get_num_new_matched_tokens(req, m.num_local);
        if (!match.num_tokens) {
            log_.event(EventCategory::lookup, "{request} pending").request(req.id()).flag("pending", true);
            return std::nullopt;
        }
        m.num_external = *match.num_tokens;
        m.load_async = match.load_async;
        if (m.num_external > 0)
            log_.event(EventCategory::lookup, m.load_async ? "{request} local={local} external={external} async"
                                                           : "{request} local={local} external={external}")
                .request(req.id())
                .integer("local", m.num_local)
                .integer("external", m.num_external)
                .flag("async", m.load_async);
    }
    m.num_computed = m.num_local + m.num_external;
    model_check(m.num_computed <= req.num_tokens(), "computed tokens exceed the request");
    return m;
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06: the tokens to compute this step (none
// for an async load); nullopt when the whole prompt must fit and does not (stop the phase).
std::optional<int> Scheduler::num_new_waiting_tokens(const Request& req, const WaitingMatch& m,
                                                     const StepState& st) const {
    if (m.load_async) {
        if (m.num_external <= 0)
            throw UpstreamAssertion("async_load_without_tokens", std::string(kSchedulerPy) + " Scheduler.schedule",
                                    "assert num_external_computed_tokens > 0");
        return 0;
    }
    int num_new = req.num_tokens() - m.num_computed;
    if (config_.long_prefill_threshold > 0 && num_new > config_.long_prefill_threshold)
        num_new = config_.long_prefill_threshold;
    if (!config_.chunked_prefill && num_new > st.token_budget) return std::nullopt;
    num_new = std::min(num_new, st.token_budget);
    if (num_new <= 0)
        throw UpstreamAssertion("no_new_tokens", std::string(kSchedulerPy) + " Scheduler.schedule",
                                "assert num_new_tokens > 0");
    return num_new;
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06: an async load parks the request in
// WAITING_FOR_REMOTE_KVS, skipped this step.
void Scheduler::park_for_remote_kvs(StepState& st, Request& req, const WaitingMatch& m) {
    set_status(req, RequestStatus::waiting_for_remote_kvs);
    req.num_computed_tokens = m.num_computed;
    inflight_prefills_.insert(req.id());
    // vllm-project/vllm#42568: the load counts toward the request limit and the token budget until promoted.
    remote_kv_loading_tokens_[req.id()] = m.num_external;
    num_remote_kv_loading_tokens_ += m.num_external;
    if (counts_async_loads()) st.token_budget -= m.num_external;
    log_.event(EventCategory::park, "{request} blocks={blocks} local={local} external={external}")
        .request(req.id())
        .blocks("blocks", kv_cache_manager_.get_block_ids(req.id()))
        .integer("local", m.num_local)
        .integer("external", m.num_external);
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06: the request joins running.
void Scheduler::admit_waiting(StepState& st, Request& req, const WaitingMatch& m, int num_new,
                              const std::vector<BlockId>& new_blocks) {
    running_.push_back(req.id());
    if (req.status == RequestStatus::waiting)
        st.scheduled_new.push_back(req.id());
    else if (req.status == RequestStatus::preempted)
        st.scheduled_resumed.push_back(req.id());
    else
        throw UpstreamAssertion("invalid_request_status", std::string(kSchedulerPy) + " Scheduler.schedule",
                                "RuntimeError: Invalid request status: " + std::string(to_string(req.status)),
                                req.id());
    st.req_to_new_blocks[req.id()] = kv_cache_manager_.get_block_ids(req.id());
    st.num_scheduled_tokens[req.id()] = num_new;
    st.token_budget -= num_new;
    set_status(req, RequestStatus::running);
    req.num_computed_tokens = m.num_computed;
    if (m.num_computed + num_new < req.num_tokens()) inflight_prefills_.insert(req.id());
    if (!new_blocks.empty()) log_alloc(req.id(), new_blocks);
}

void Scheduler::log_alloc(const std::string& req_id, const std::vector<BlockId>& new_blocks) {
    log_.event(EventCategory::alloc, "{request} +{blocks}").request(req_id).blocks("blocks", new_blocks);
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06: the running requests reach
// max_num_seqs. vllm-project/vllm#42568 (async_load_accounting=counted): parked async loads count too, except for
// a load being promoted (already counted); FCFS stops the scan there.
bool Scheduler::at_request_limit(bool was_waiting_for_remote_kvs) const {
    if (!counts_async_loads()) return static_cast<int>(running_.size()) >= config_.max_running;
    if (was_waiting_for_remote_kvs) return false;
    return static_cast<int>(running_.size() + remote_kv_loading_tokens_.size()) >= config_.max_running;
}

// Scheduler.schedule, waiting phase @ 0e26f5b67094f05b9993ea9b42f2e99eb962c654 (vllm-project/vllm#42568): an async
// load takes whole blocks of what is left of the step's token budget and of max_num_batched_tokens after the loads
// in flight; with none left it falls back to computing the prompt (the request stays preemptable).
void Scheduler::clamp_async_load_to_budget(WaitingMatch& m, int token_budget) const {
    int budget = std::min(token_budget, std::max(0, config_.max_batched_tokens - num_remote_kv_loading_tokens_));
    budget = budget / config_.block_size * config_.block_size;
    if (m.num_external > budget) m.num_external = budget;
    if (m.num_external == 0) m.load_async = false;
    m.num_computed = m.num_local + m.num_external;
}

// The bookkeeping of vllm-project/vllm#42568 for a parked load that is promoted or finished.
void Scheduler::release_remote_kv_load(const std::string& req_id) {
    const auto it = remote_kv_loading_tokens_.find(req_id);
    if (it == remote_kv_loading_tokens_.end()) return;
    num_remote_kv_loading_tokens_ -= it->second;
    remote_kv_loading_tokens_.erase(it);
}

// Scheduler.schedule, waiting phase @ 0e26f5b67094f05b9993ea9b42f2e99eb962c654 (vllm-project/vllm#45406,
// blocked_head=skipped_for_holders): a request that cannot be admitted is skipped, not the end of the scan, while
// a request in waiting or skipped_waiting (the head included) holds blocks.
bool Scheduler::skips_blocked_head() const {
    if (variant_.flag<&Variant::blocked_head>() != BlockedHead::skipped_for_holders) return false;
    auto holds_blocks = [&](const std::string& id) { return kv_cache_manager_.has_blocks(id); };
    return std::any_of(skipped_waiting_.begin(), skipped_waiting_.end(), holds_blocks) ||
           std::any_of(waiting_.begin(), waiting_.end(), holds_blocks);
}

// Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06
void Scheduler::schedule_waiting(StepState& st) {
    std::vector<std::string> step_skipped;  // encounter order; re-queued ahead of older skipped items
    bool passed_blockless = false;          // the scan skipped a request holding no blocks (#57841)
    auto skip = [&](std::deque<std::string>& queue) {
        passed_blockless = passed_blockless || !kv_cache_manager_.has_blocks(queue.front());
        step_skipped.push_back(queue.front());
        queue.pop_front();
    };

    while ((!waiting_.empty() || !skipped_waiting_.empty()) && st.token_budget > 0) {
        if (!counts_async_loads() && at_request_limit(false)) break;
        auto& queue = select_waiting_queue();
        Request& req = request(queue.front());

        const bool was_waiting_for_remote_kvs = req.status == RequestStatus::waiting_for_remote_kvs;
        if (was_waiting_for_remote_kvs) {
            if (!try_promote_blocked_waiting_request(req)) {
                skip(queue);
                continue;
            }
            if (requeue_blockless_failed_load(queue, req)) continue;
        }
        if (req.awaits_stale_output()) {
            skip(queue);
            continue;
        }
        if (counts_async_loads() && at_request_limit(was_waiting_for_remote_kvs)) {
            if (!skips_blocked_head()) break;
            skip(queue);
            continue;
        }
        std::optional<WaitingMatch> match = match_waiting_prefix(req);
        if (!match) {
            skip(queue);
            continue;
        }
        if (match->load_async && counts_async_loads()) clamp_async_load_to_budget(*match, st.token_budget);
        // vllm-project/vllm#57841: no async load (which holds blocks) behind a skipped request holding none.
        if (match->load_async && passed_blockless &&
            variant_.flag<&Variant::async_load_behind_blockless>() == AsyncLoadBehindBlockless::deferred) {
            skip(queue);
            continue;
        }
        const std::optional<int> num_new = num_new_waiting_tokens(req, *match, st);
        if (!num_new) break;

        AdmissionLimits limits;
        limits.full_sequence_must_fit = config_.reserve_full_isl;
        limits.reserved_blocks = match->load_async ? inflight_prefill_reserved_blocks() : 0;
        const auto new_blocks = kv_cache_manager_.allocate_slots(req, *num_new, match->num_local, match->hits, 0,
                                                                 match->num_external, match->load_async, limits);
        if (!new_blocks) {
            if (!skips_blocked_head()) break;  // stays at the head of its queue
            skip(queue);
            continue;
        }

        if (connector_ != nullptr) connector_->update_state_after_alloc(req, blocks_of(req.id()), match->num_external);
        queue.pop_front();
        if (match->load_async) {
            park_for_remote_kvs(st, req, *match);
            step_skipped.push_back(req.id());
            continue;
        }
        admit_waiting(st, req, *match, *num_new, *new_blocks);
    }

    // prepend_requests: this step's skipped keep their order, ahead of older skipped items.
    for (auto it = step_skipped.rbegin(); it != step_skipped.rend(); ++it) skipped_waiting_.push_front(*it);
}

void Scheduler::build_output(StepState& st, SchedulerOutput& out) {
    // Model runner v2: resumed requests are folded into the new-request list (full resend).
    // st is done with its block lists after this: they move into the output
    auto blocks_of_step = [&](const std::string& id) -> std::vector<BlockId>& {
        std::vector<BlockId>* blocks = st.req_to_new_blocks.find(id);
        model_check(blocks != nullptr, "a scheduled request without this step's block list");
        return *blocks;
    };
    auto add_new = [&](const std::string& id) {
        const Request& req = request(id);
        out.scheduled_new_reqs.push_back({.req_id = id,
                                          .block_ids = std::move(blocks_of_step(id)),
                                          .num_computed_tokens = req.num_computed_tokens});
    };
    out.scheduled_new_reqs.reserve(st.scheduled_new.size() + st.scheduled_resumed.size());
    for (const auto& id : st.scheduled_new) add_new(id);
    for (const auto& id : st.scheduled_resumed) add_new(id);

    // Scheduler._make_cached_request_data @ 003df2961dd8830c317a61f9745ccd557da9fa06
    auto& cached = out.scheduled_cached_reqs;
    cached.req_ids.reserve(st.scheduled_running.size());
    cached.new_block_ids.reserve(st.scheduled_running.size());
    cached.num_computed_tokens.reserve(st.scheduled_running.size());
    cached.num_output_tokens.reserve(st.scheduled_running.size());
    for (const auto& id : st.scheduled_running) {
        const Request& req = request(id);
        std::vector<BlockId>& delta = blocks_of_step(id);
        cached.req_ids.push_back(id);
        cached.new_block_ids.push_back(delta.empty() ? std::nullopt : std::optional(std::move(delta)));
        cached.num_computed_tokens.push_back(req.num_computed_tokens);
        cached.num_output_tokens.push_back(req.num_output_tokens());
    }

    std::swap(out.num_scheduled_tokens, st.num_scheduled_tokens);  // st is done with it; keeps out's (empty) map
    for (const auto& [id, n] : out.num_scheduled_tokens)
        if (const int placeholders = request(id).num_output_placeholders; placeholders > 0)
            out.num_output_placeholders[id] = placeholders;
    out.finished_req_ids = std::move(finished_req_ids_);
    finished_req_ids_.clear();
    out.preempted_req_ids = std::move(reset_preempted_req_ids_);
    reset_preempted_req_ids_.clear();

    snapshot_block_state(out);

    if (!log_.wants(EventCategory::schedule)) return;
    CountList new_tokens, cached_tokens;
    for (const auto& nr : out.scheduled_new_reqs)
        new_tokens.emplace_back(nr.req_id, out.num_scheduled_tokens.at(nr.req_id));
    for (const auto& id : cached.req_ids) cached_tokens.emplace_back(id, out.num_scheduled_tokens.at(id));
    if (out.total_num_scheduled_tokens > 0 || !out.preempted_req_ids.empty() || !out.finished_req_ids.empty())
        log_.event(EventCategory::schedule,
                   "new=[{new}] cached=[{cached}] tokens={tokens} preempted={preempted} free_blocks={free_blocks}")
            .request_counts("new", std::move(new_tokens))
            .request_counts("cached", std::move(cached_tokens))
            .integer("tokens", out.total_num_scheduled_tokens)
            .requests("preempted", out.preempted_req_ids)
            .integer("free_blocks", kv_cache_manager_.block_pool().num_free_blocks());
}

// KVConnectorBlockState (vllm-project/vllm#51358 eager rule; vllm-project/vllm#54853 every scheduled request)
void Scheduler::snapshot_block_state(SchedulerOutput& out) {
    if (connector_ == nullptr || variant_.flag<&Variant::snapshot_rule>() == SnapshotRule::none) return;
    KVConnectorBlockState state = std::move(spare_block_state_);
    clear_for_reuse(state);
    state.block_ids.reserve(out.num_scheduled_tokens.size());
    auto snapshot = [&](const std::string& id) { state.block_ids[id] = &kv_cache_manager_.get_block_ids(id); };
    if (variant_.flag<&Variant::snapshot_rule>() == SnapshotRule::eager) {
        const CachedRequestData& cached = out.scheduled_cached_reqs;
        for (const auto& nr : out.scheduled_new_reqs) snapshot(nr.req_id);
        for (std::size_t i = 0; i < cached.size(); ++i)
            if (cached.new_block_ids[i]) snapshot(cached.req_ids[i]);
    } else {
        for (const auto& [id, n] : out.num_scheduled_tokens) snapshot(id);
    }
    out.kv_connector_block_state = std::move(state);
}

// Scheduler._update_after_schedule @ 003df2961dd8830c317a61f9745ccd557da9fa06 (is_prefill_chunk and, after
// vllm-project/vllm#45357, last_sched_seq)
void Scheduler::update_after_schedule(const SchedulerOutput& out) {
    for (const auto& [id, n] : out.num_scheduled_tokens) {
        Request& req = request(id);
        req.num_computed_tokens += n;
        req.num_in_flight_tokens += n;
        req.is_prefill_chunk = req.num_computed_tokens < req.num_tokens() + req.num_output_placeholders;
        req.last_sched_seq = out.sched_seq;
        if (req.num_computed_tokens >= req.num_tokens()) inflight_prefills_.erase(id);
    }
}

// Scheduler._update_request_with_output @ 003df2961dd8830c317a61f9745ccd557da9fa06
bool Scheduler::update_request_with_output(Request& req, const std::vector<TokenId>& sampled, bool /*is_stale*/) {
    for (TokenId token : sampled) {
        req.append_output_token(token);
        if (check_stop(req)) return true;
    }
    return false;
}

// Scheduler._should_defer_request_block_free (vllm-project/vllm#49675, over the fence of #45357): the
// request was scheduled in a step whose output is not processed yet.
bool Scheduler::should_defer_block_free(const Request& req) const {
    return may_defer_block_free_ && req.last_sched_seq > processed_step_seq_ &&
           variant_.flag<&Variant::deferred_block_free>() == DeferredBlockFree::fenced;
}

// Scheduler._free_request_blocks (vllm-project/vllm#45357): the bookkeeping goes now; the blocks return to
// the pool now, or once the output of the request's last scheduled step is processed.
void Scheduler::free_request_blocks(Request& req) {
    if (!should_defer_block_free(req)) {
        kv_cache_manager_.free(req);
        return;
    }
    std::vector<BlockId> blocks = kv_cache_manager_.take_blocks(req);
    log_.event(EventCategory::hold, "{request} blocks={blocks} (fenced until step seq {fence})")
        .request(req.id())
        .blocks("blocks", blocks)
        .integer("fence", req.last_sched_seq);
    deferred_frees_.push_back({.fence = req.last_sched_seq, .blocks = std::move(blocks)});
}

// Scheduler._drain_deferred_frees (vllm-project/vllm#45357): every free whose fence step is processed.
void Scheduler::drain_deferred_frees() {
    while (!deferred_frees_.empty() && deferred_frees_.front().fence <= processed_step_seq_) {
        const DeferredFree entry = std::move(deferred_frees_.front());
        deferred_frees_.pop_front();
        kv_cache_manager_.block_pool().free_blocks(entry.blocks);
        log_.event(EventCategory::free, "fence {fence} {blocks}").integer("fence", entry.fence).blocks("blocks", entry.blocks);
    }
}

// vllm/v1/core/sched/utils.py check_stop @ 00024d314514900f361ad072af6931e403b7f589; EOS before the length
// cap @ 018d5dc78efa9af8a03457451b6f27d56bf3b9c2 (no min_tokens, stop tokens or repetition are modelled)
bool Scheduler::check_stop(Request& req) {
    if (!req.output().empty() && req.output().back() == kEosTokenId) {
        set_status(req, RequestStatus::finished_stopped);
        return true;
    }
    if (req.num_tokens() >= config_.max_model_len || req.num_output_tokens() >= req.max_tokens()) {
        set_status(req, RequestStatus::finished_length_capped);
        return true;
    }
    return false;
}

// Scheduler.reset_prefix_cache @ 003df2961dd8830c317a61f9745ccd557da9fa06 (reset_running_requests=False,
// reset_connector=False): KVCacheManager.reset_prefix_cache, which fails while blocks are in use.
bool Scheduler::reset_prefix_cache() { return kv_cache_manager_.block_pool().reset_prefix_cache(); }

// Scheduler._update_requests_with_invalid_blocks @ 003df2961dd8830c317a61f9745ccd557da9fa06 (one group);
// `evict` (sync loads only) collects the first newly marked invalid block and every block after it.
bool Scheduler::rewind_for_invalid_blocks(Request& req, const std::set<BlockId>& invalid, int num_scheduled,
                                          std::set<BlockId>& marked, std::set<BlockId>* evict) {
    const auto table = kv_cache_manager_.get_block_ids(req.id());
    const int base = req.num_computed_tokens - num_scheduled;
    const auto computed_blocks = static_cast<std::size_t>(cdiv(base, config_.block_size));
    bool affected = false;
    std::optional<std::size_t> first_marked;
    for (std::size_t i = 0; i < std::min(computed_blocks, table.size()); ++i) {
        if (!invalid.contains(table[i])) continue;
        affected = true;
        if (!marked.insert(table[i]).second) continue;  // another request already owns this failure
        if (!first_marked) first_marked = i;
    }
    if (!affected) return false;
    req.num_computed_tokens = first_marked ? static_cast<int>(*first_marked) * config_.block_size : base;
    if (first_marked && evict != nullptr) evict->insert(table.begin() + static_cast<std::ptrdiff_t>(*first_marked), table.end());
    log_.event(EventCategory::invalid, "{request} computed={computed} (load failed)")
        .request(req.id())
        .integer("computed", req.num_computed_tokens);
    return true;
}

// Scheduler._handle_invalid_blocks @ 003df2961dd8830c317a61f9745ccd557da9fa06: returns the requests
// update_from_output skips; under "fail" that is every affected request (they end FINISHED_ERROR) and
// the sync loads' invalid and later blocks lose their hashes, under "recompute" the sync ones only.
std::set<std::string> Scheduler::handle_invalid_blocks(const std::set<BlockId>& invalid,
                                                       const OrderedMap<int>& num_scheduled) {
    std::set<BlockId> marked_async;
    std::set<std::string> failed_async;
    for (const auto& id : skipped_waiting_) {
        Request& req = request(id);
        if (req.status == RequestStatus::waiting_for_remote_kvs &&
            rewind_for_invalid_blocks(req, invalid, 0, marked_async, nullptr))
            failed_async.insert(id);
    }
    std::set<std::string> failed_sync;
    std::set<BlockId> marked_sync;
    std::set<BlockId> to_evict;
    // Upstream scans self.running (with num_scheduled_tokens.get(req_id, 0)): under async scheduling it
    // also holds the requests the next step scheduled, which may hit a failed sync load's cached blocks.
    for (const auto& id : running_) {
        Request& req = request(id);
        const int* n = num_scheduled.find(id);
        if (rewind_for_invalid_blocks(req, invalid, n == nullptr ? 0 : *n, marked_sync, &to_evict)) failed_sync.insert(id);
    }
    if (recompute_kv_load_failures_) {
        failed_recving_kv_req_ids_.insert(failed_async.begin(), failed_async.end());
        return failed_sync;
    }
    if (!to_evict.empty()) {
        const std::vector<BlockId> blocks(to_evict.begin(), to_evict.end());
        kv_cache_manager_.evict_blocks(blocks);
        log_.event(EventCategory::invalid, "evicted {blocks} (kv_load_failure_policy=fail)").blocks("blocks", blocks);
    }
    failed_sync.insert(failed_async.begin(), failed_async.end());
    return failed_sync;
}

void Scheduler::update_from_output(const SchedulerOutput& out, const ModelRunnerOutput& runner_output) {
    processed_step_seq_ = std::max(processed_step_seq_, out.sched_seq);
    drain_deferred_frees();
    std::set<std::string> failed_sync;
    if (runner_output.kv_connector_output && !runner_output.kv_connector_output->invalid_block_ids.empty())
        failed_sync = handle_invalid_blocks(runner_output.kv_connector_output->invalid_block_ids, out.num_scheduled_tokens);
    if (recompute_kv_load_failures_)
        for (const auto& id : failed_sync) {
            const auto* sampled = runner_output.sampled_token_ids.find(id);
            on_rewound_by_failed_load(request(id), sampled != nullptr && !sampled->empty());
        }
    process_sampled_tokens(out, runner_output, failed_sync);
    // kv_load_failure_policy=fail: the failed loads' requests end with an error (in id order; upstream's is a set's).
    if (!recompute_kv_load_failures_ && !failed_sync.empty())
        finish_requests({failed_sync.begin(), failed_sync.end()}, RequestStatus::finished_error);
    if (runner_output.kv_connector_output) update_from_kv_xfer_finished(*runner_output.kv_connector_output);
}

void Scheduler::process_sampled_tokens(const SchedulerOutput& out, const ModelRunnerOutput& runner_output,
                                       const std::set<std::string>& failed_sync) {
    std::set<std::string> stopped_running;
    std::set<std::string> stopped_preempted;
    for (const auto& [id, n] : out.num_scheduled_tokens) {
        auto* slot = requests_.find(id);
        const bool is_stale = slot != nullptr && drain_output_in_flight(**slot, n);
        if (failed_sync.contains(id)) continue;                          // recomputed next step
        if (slot == nullptr || is_finished((*slot)->status)) continue;  // aborted while executing
        Request& req = **slot;
        const auto* sampled = runner_output.sampled_token_ids.find(id);
        const bool samples = sampled != nullptr && !sampled->empty();  // else a partial prefill
        if (is_stale && req.drop_stale_output) {
            if (samples) on_stale_output_dropped(req);
            continue;
        }
        if (!samples) continue;
        const RequestStatus before = req.status;
        if (!update_request_with_output(req, *sampled, is_stale)) continue;
        log_.event(EventCategory::finish, "{request} {status} output={output}")
            .request(id)
            .status("status", to_string(req.status))
            .integer("output", req.num_output_tokens());
        free_request(req, false);
        (before == RequestStatus::running ? stopped_running : stopped_preempted).insert(id);
    }
    if (!stopped_running.empty())
        std::erase_if(running_, [&](const std::string& id) { return stopped_running.contains(id); });
    if (!stopped_preempted.empty()) remove_from_waiting_queues(stopped_preempted);
}

// Scheduler._update_from_kv_xfer_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06 (its asserts carry no message)
void Scheduler::update_from_kv_xfer_finished(const KVConnectorOutput& output) {
    const auto site = [] { return std::string(kSchedulerPy) + " Scheduler._update_from_kv_xfer_finished"; };  // on a throw only
    if (connector_ != nullptr) connector_->update_connector_output(output);
    for (const auto& id : output.finished_recving) {
        auto* slot = requests_.find(id);
        if (slot == nullptr)
            throw UpstreamAssertion("recving_unknown_request", site(), "assert req_id in self.requests (" + id + ")", id);
        Request& req = **slot;
        if (req.status == RequestStatus::waiting_for_remote_kvs) {
            finished_recving_kv_req_ids_.insert(id);
            log_.event(EventCategory::recv_done, "{request}").request(id).flag("delayed_free", false);
        } else {
            if (!is_finished(req.status))
                throw UpstreamAssertion("recving_not_finished", site(),
                                        "assert RequestStatus.is_finished(req.status) (" + id + " is " +
                                            std::string(to_string(req.status)) + ")",
                                        id);
            log_.event(EventCategory::recv_done, "{request} (finished; delayed free)").request(id).flag("delayed_free", true);
            free_blocks(req);
        }
    }
    for (const auto& id : output.finished_sending) {
        auto* slot = requests_.find(id);
        if (slot == nullptr)
            throw UpstreamAssertion("sending_unknown_request", site(), "assert req_id in self.requests (" + id + ")", id);
        log_.event(EventCategory::send_done, "{request}").request(id);
        free_blocks(**slot);
    }
}

// Scheduler._free_request @ 003df2961dd8830c317a61f9745ccd557da9fa06
void Scheduler::free_request(Request& req, bool delay_free_blocks) {
    model_check(is_finished(req.status), "freeing an unfinished request");
    inflight_prefills_.erase(req.id());
    bool connector_delay = false;
    if (connector_ != nullptr) {
        // get_block_ids_for_computed_tokens: only the blocks that cover computed tokens.
        auto blocks = kv_cache_manager_.get_block_ids(req.id());
        const auto covered = static_cast<std::size_t>(cdiv(req.num_computed_tokens, config_.block_size));
        if (blocks.size() > covered) blocks.resize(covered);
        connector_delay = connector_->request_finished(req, blocks).delay_free_blocks;
    }
    finished_req_ids_.insert(req.id());
    if (delay_free_blocks || connector_delay) {
        log_.event(EventCategory::hold, "{request} blocks={blocks} ({reason})")
            .request(req.id())
            .blocks("blocks", kv_cache_manager_.get_block_ids(req.id()))
            .text("reason", delay_free_blocks ? "load in flight" : "connector delays free");
        return;
    }
    free_blocks(req);
}

// Scheduler._free_blocks @ 003df2961dd8830c317a61f9745ccd557da9fa06
void Scheduler::free_blocks(Request& req) {
    if (!is_finished(req.status))
        throw UpstreamAssertion("free_blocks_not_finished", std::string(kSchedulerPy) + " Scheduler._free_blocks",
                                "assert request.is_finished()", req.id());
    const auto blocks = kv_cache_manager_.get_block_ids(req.id());
    free_request_blocks(req);
    log_.event(EventCategory::free, "{request} {blocks}").request(req.id()).blocks("blocks", blocks);
    const std::string id = req.id();
    transitions_.push_back(
        {.req_id = id, .from = req.status, .to = std::nullopt, .num_computed_tokens = req.num_computed_tokens});
    requests_.erase(id);
}

void Scheduler::remove_from_waiting_queues(const std::set<std::string>& ids) {
    auto drop = [&](std::deque<std::string>& q) {
        std::erase_if(q, [&](const std::string& id) { return ids.contains(id); });
    };
    drop(waiting_);
    drop(skipped_waiting_);
}

std::vector<std::string> Scheduler::finish_requests(const std::vector<std::string>& request_ids,
                                                    RequestStatus status) {
    model_check(is_finished(status), "finish_requests needs a finished status");
    std::vector<Request*> valid;
    std::set<std::string> running_ids;
    std::set<std::string> waiting_ids;
    for (const auto& id : request_ids) {
        auto* slot = requests_.find(id);
        if (slot == nullptr || is_finished((*slot)->status)) {
            log_.event(EventCategory::abort, "{request} ignored ({reason})")
                .request(id)
                .text("reason", slot == nullptr ? "gone" : "already finished");
            continue;
        }
        valid.push_back(slot->get());
        ((*slot)->status == RequestStatus::running ? running_ids : waiting_ids).insert(id);
    }
    if (!running_ids.empty())
        std::erase_if(running_, [&](const std::string& id) { return running_ids.contains(id); });
    if (!waiting_ids.empty()) remove_from_waiting_queues(waiting_ids);

    std::vector<std::string> finished;
    for (Request* req : valid) {
        bool delay = false;
        if (req->status == RequestStatus::waiting_for_remote_kvs) {
            delay = !finished_recving_kv_req_ids_.contains(req->id());
            finished_recving_kv_req_ids_.erase(req->id());
            failed_recving_kv_req_ids_.erase(req->id());
            release_remote_kv_load(req->id());
        }
        if (status == RequestStatus::finished_aborted)
            log_.event(EventCategory::abort, "{request} from {status}").request(req->id()).status("status", to_string(req->status));
        else
            log_.event(EventCategory::finish, "{request} {status} from {from}")
                .request(req->id())
                .status("status", to_string(status))
                .status("from", to_string(req->status));
        set_status(*req, status);
        finished.push_back(req->id());
        free_request(*req, delay);
    }
    return finished;
}

}  // namespace kvsim
