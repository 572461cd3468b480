#pragma once
// vllm/v1/core/sched/scheduler.py Scheduler, v0.29-era shape @ 003df2961dd8830c317a61f9745ccd557da9fa06 (older
// 00024d314514900f361ad072af6931e403b7f589 where they agree; snapshot per #51358/#54853). FCFS, synchronous
// engine (no async scheduling, no pipeline parallelism, no speculative decoding).
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/connector/base.h"
#include "sim/core/kv_cache_manager.h"
#include "sim/core/outputs.h"
#include "sim/core/request.h"
#include "sim/core/scheduler_output.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

class EventLog;

// One request lifecycle transition; from = nullopt for a new request, to = nullopt when
// the request object is deleted (its blocks freed).
struct StatusTransition {
    std::string req_id;
    std::optional<RequestStatus> from;
    std::optional<RequestStatus> to;
    int num_computed_tokens = 0;  // the request's when it made the transition
};

// How the engine core drives the scheduler (vllm/v1/engine/core.py EngineCore.__init__: batch_queue_size).
struct SchedulerOptions {
    int max_concurrent_batches = 1;  // 2 under async scheduling
    bool kv_consumer = false;        // the top-level kv_transfer_config is_kv_consumer (kv_consumer or kv_both)
    bool kv_loader = false;          // some connector loads: a consumer one, or a store connector that looks up
    bool kv_producer = false;        // a connector of the stack produces KV (kv_producer or kv_both)
};

// A request's blocks held back from the pool until the output of step `fence` is processed (#45357).
struct DeferredFree {
    std::int64_t fence = 0;
    std::vector<BlockId> blocks;  // tail first, the order they return in
};

class Scheduler {
public:
    Scheduler(const EngineConfig& config, const Variant& variant, KVConnectorScheduler* connector, EventLog& log,
              SchedulerOptions options = {});
    virtual ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Scheduler.add_request (+ _enqueue_waiting_request) @ 003df2961dd8830c317a61f9745ccd557da9fa06
    void add_request(std::unique_ptr<Request> request);
    // Scheduler.finish_requests @ 003df2961dd8830c317a61f9745ccd557da9fa06; returns the ids actually finished.
    std::vector<std::string> finish_requests(const std::vector<std::string>& request_ids, RequestStatus status);
    // Scheduler.schedule @ 003df2961dd8830c317a61f9745ccd557da9fa06
    SchedulerOutput schedule(int step);
    // Scheduler.update_from_output @ 003df2961dd8830c317a61f9745ccd557da9fa06
    void update_from_output(const SchedulerOutput& output, const ModelRunnerOutput& runner_output);
    // The engine hands back an output it has processed; the next schedule() fills it again (clear_for_reuse).
    void recycle(SchedulerOutput&& processed) { spare_output_ = std::move(processed); }

    // Scheduler.reset_prefix_cache @ 003df2961dd8830c317a61f9745ccd557da9fa06: false while blocks are in use.
    bool reset_prefix_cache();

    // Scheduler.has_unfinished_requests: something waits or runs.
    bool has_unfinished_requests() const { return !waiting_.empty() || !skipped_waiting_.empty() || !running_.empty(); }
    // Request objects still alive, including finished ones whose blocks are held by a delayed free.
    bool has_requests() const { return !requests_.empty(); }
    // Scheduler.has_finished_requests @ 003df2961dd8830c317a61f9745ccd557da9fa06, its first clause: finished ids
    // not yet sent in a SchedulerOutput (the second, requests held by a delayed free, is in has_requests).
    bool has_finished_requests() const { return !finished_req_ids_.empty(); }

    const OrderedMap<std::unique_ptr<Request>>& requests() const { return requests_; }
    const std::deque<std::string>& waiting() const { return waiting_; }
    const std::deque<std::string>& skipped_waiting() const { return skipped_waiting_; }
    const std::vector<std::string>& running() const { return running_; }
    const std::set<std::string>& finished_recving_kv_req_ids() const { return finished_recving_kv_req_ids_; }
    const std::set<std::string>& failed_recving_kv_req_ids() const { return failed_recving_kv_req_ids_; }
    const KVCacheManager& kv_cache_manager() const { return kv_cache_manager_; }
    const EngineConfig& config() const { return config_; }
    // The kv_load_failure_policy in force: the trace's, else the variant's release default.
    LoadFailurePolicy load_failure_policy() const {
        return recompute_kv_load_failures_ ? LoadFailurePolicy::recompute : LoadFailurePolicy::fail;
    }
    // #45357: frees waiting for their fence step, oldest first.
    const std::deque<DeferredFree>& deferred_frees() const { return deferred_frees_; }
    std::int64_t processed_step_seq() const { return processed_step_seq_; }

    // Transitions since clear_transitions(), in the order they happened.
    const std::vector<StatusTransition>& transitions() const { return transitions_; }
    void clear_transitions() { transitions_.clear(); }

protected:
    // Scheduler._update_after_schedule @ 003df2961dd8830c317a61f9745ccd557da9fa06
    virtual void update_after_schedule(const SchedulerOutput& out);
    // Scheduler._update_request_with_output: appends the sampled tokens until a stop; true when stopped.
    // `is_stale`: the tokens were scheduled before the request was preempted (only AsyncScheduler reads it).
    virtual bool update_request_with_output(Request& request, const std::vector<TokenId>& sampled, bool is_stale);
    // After _update_requests_with_invalid_blocks rewound a scheduled request (recompute policy);
    // `sampled` = this step's output for it carried a token (which update_from_output skips).
    virtual void on_rewound_by_failed_load(Request& /*request*/, bool /*sampled*/) {}
    // update_from_output dropped the request's stale output, which carried sampled tokens (#50297).
    virtual void on_stale_output_dropped(Request& /*request*/) {}
    Request& request(const std::string& id);
    const Variant& variant() const { return variant_; }
    KVCacheManager& kv_cache_manager_mut() { return kv_cache_manager_; }

private:
    struct StepState;

    void schedule_running(StepState& st);
    void schedule_waiting(StepState& st);
    // The waiting phase's prefix match for one request: local hit blocks and tokens, the
    // connector's external tokens and whether they load asynchronously.
    struct WaitingMatch {
        std::vector<BlockId> hits;
        int num_local = 0;
        int num_external = 0;
        bool load_async = false;
        int num_computed = 0;
    };
    std::optional<WaitingMatch> match_waiting_prefix(Request& request);
    bool counts_async_loads() const {
        return variant_.flag<&Variant::async_load_accounting>() == AsyncLoadAccounting::counted;
    }
    bool at_request_limit(bool was_waiting_for_remote_kvs) const;
    void clamp_async_load_to_budget(WaitingMatch& match, int token_budget) const;
    void release_remote_kv_load(const std::string& req_id);
    bool skips_blocked_head() const;
    std::optional<int> num_new_waiting_tokens(const Request& request, const WaitingMatch& match,
                                              const StepState& st) const;
    void park_for_remote_kvs(StepState& st, Request& request, const WaitingMatch& match);
    void admit_waiting(StepState& st, Request& request, const WaitingMatch& match, int num_new,
                       const std::vector<BlockId>& new_blocks);
    void log_alloc(const std::string& req_id, const std::vector<BlockId>& new_blocks);
    void build_output(StepState& st, SchedulerOutput& out);
    // The connector's view of the block tables build_output scheduled (none without a connector,
    // or before #51358): views into kv_cache_manager_, dropped before schedule() returns.
    void snapshot_block_state(SchedulerOutput& out);
    int num_new_running_tokens(const Request& request, int token_budget) const;
    void process_sampled_tokens(const SchedulerOutput& out, const ModelRunnerOutput& runner_output,
                                const std::set<std::string>& failed_sync);

    void preempt_request(Request& request);
    void mark_output_in_flight_stale(Request& request);
    bool drain_output_in_flight(Request& request, int num_scheduled);
    bool victim_frees_nothing_for_pins(const std::string& victim_id) const;
    bool self_victim_waits_for_pins(const Request& request, const std::string& victim_id, int num_new) const;
    int blocks_held_only_by_pins() const;
    bool should_defer_block_free(const Request& request) const;
    void free_request_blocks(Request& request);
    void drain_deferred_frees();
    bool try_promote_blocked_waiting_request(Request& request);
    void update_waiting_for_remote_kv(Request& request);
    bool requeue_blockless_failed_load(std::deque<std::string>& queue, const Request& request);
    int inflight_prefill_reserved_blocks() const;
    KVCacheBlocks blocks_of(const std::string& req_id) const;

    bool check_stop(Request& request);
    void free_request(Request& request, bool delay_free_blocks);
    void free_blocks(Request& request);
    void update_from_kv_xfer_finished(const KVConnectorOutput& output);
    std::set<std::string> handle_invalid_blocks(const std::set<BlockId>& invalid, const OrderedMap<int>& num_scheduled);
    bool rewind_for_invalid_blocks(Request& request, const std::set<BlockId>& invalid, int num_scheduled,
                                   std::set<BlockId>& marked, std::set<BlockId>* evict);

    void set_status(Request& request, RequestStatus status);
    std::deque<std::string>& select_waiting_queue();
    void remove_from_waiting_queues(const std::set<std::string>& ids);

    EngineConfig config_;
    Variant variant_;
    KVConnectorScheduler* connector_;
    EventLog& log_;
    KVCacheManager kv_cache_manager_;
    bool recompute_kv_load_failures_;  // KVTransferConfig.kv_load_failure_policy == "recompute"
    bool requires_kv_delivery_;        // KVConnectorBase_V1.requires_kv_delivery of the stack

    OrderedMap<std::unique_ptr<Request>> requests_;
    std::deque<std::string> waiting_;
    std::deque<std::string> skipped_waiting_;
    std::vector<std::string> running_;
    std::set<std::string> finished_req_ids_;
    std::set<std::string> reset_preempted_req_ids_;
    std::set<std::string> finished_recving_kv_req_ids_;
    std::set<std::string> failed_recving_kv_req_ids_;
    std::set<std::string> inflight_prefills_;
    std::map<std::string, int> remote_kv_loading_tokens_;  // #42568: parked request -> its async load's tokens
    int num_remote_kv_loading_tokens_ = 0;
    std::vector<StatusTransition> transitions_;

    bool may_defer_block_free_ = false;  // overlapping batches and a fenced stack: deferred_block_free decides
    std::int64_t sched_step_seq_ = 0;
    std::int64_t processed_step_seq_ = 0;
    std::deque<DeferredFree> deferred_frees_;
    // schedule()'s working state, cleared at each call: its lists keep their capacity across steps
    std::unique_ptr<StepState> step_state_;
    SchedulerOutput spare_output_;             // recycle()'s, filled again by the next schedule()
    KVConnectorBlockState spare_block_state_;  // the last snapshot's map, kept for its capacity
};

}  // namespace kvsim
