#pragma once
// The worker side of MooncakeStoreConnector, all ranks in one object:
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py MooncakeStoreWorker
// (get_finished, KVCacheStoreSendingThread, KVCacheStoreRecvingThread) @ 003df2961dd8830c317a61f9745ccd557da9fa06, and
// for save_block_refs=delay_free its pre-#52372 finished_sending bookkeeping (_get_and_clear_finished_sending).
//
// Time is steps: each rank's copy of a store job finishes `draw_store_delay() + store_extra_delay(rank)`
// steps after it starts, after the same rank's earlier jobs (one send thread per rank, FIFO).
// A store_fail fault fails one rank's copy: it still reports, and writes nothing. A block hash
// enters the KvStore only when every rank's copy of the job succeeded (a lookup needs every
// rank's key). A load_fail fault is taken when the load lands (at completion when async, at
// execute when sync); the failed load still touches its blocks and reports them invalid.
// Scope as in store_scheduler.h: one full-attention group; a rank's resume offset
// and the store's put dedup are not modelled (a job writes [token_start, token_end)).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/connector/base.h"
#include "sim/environment/kv_store.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"
#include "sim/environment/scripted_reports.h"
#include "sim/environment/worker_env.h"

namespace kvsim {

struct StoreMetadata;

// MooncakeStoreWorker.lookup @ 003df2961dd8830c317a61f9745ccd557da9fa06 (the rule is the same before and after #52372):
// the longest stored prefix within the block-aligned request length; a hit covering all
// num_tokens is re-derived at align(num_tokens - 1), so the last token is recomputed.
int store_lookup_hit_tokens(const KvStore& store, int num_tokens, const std::vector<BlockHash>& block_hashes,
                            int block_size);

class MooncakeStoreWorker : public KVConnectorWorker {
public:
    MooncakeStoreWorker(const ConnectorSpec& spec, const EngineConfig& engine, const Variant& variant, WorkerEnv& env,
                        KvStore& store);

    // MooncakeStoreWorker.get_finished (issue half) @ 003df2961dd8830c317a61f9745ccd557da9fa06: binds the StoreMetadata,
    // starts loads (can_load metas) and store jobs (can_save metas, if this worker can put).
    void bind_and_start(int step, const ConnectorMetadata* metadata) override;
    // MooncakeStoreWorker.get_finished (completion half), get_block_ids_with_load_errors,
    // build_connector_worker_meta (#52372: completed_saves, store/data.py @ a83dffb9ea007219cd877492e020ec6bee45c6a3); delay_free: _get_and_clear_finished_sending.
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override { return !saves_.empty() || !loads_.empty(); }

    // The trace's store_done reports: a copy they cover waits for its report instead of a drawn delay.
    void script_reports(const ScriptedReports* scripted) { scripted_ = scripted; }

    // MooncakeStoreWorker can_put (save_decode_cache, as in store/scheduler.py @ a83dffb9ea007219cd877492e020ec6bee45c6a3): a kv_consumer without
    // save_decode_cache has no send thread and drops every store job it is handed.
    bool can_put() const { return can_put_; }

private:
    struct RankCopy {
        int rank = 0;
        int done_step = 0;
        bool fails = false;
        bool reported = false;
    };
    struct InflightSave {
        SaveJob job;
        std::vector<RankCopy> copies;
    };
    struct InflightLoad {
        std::string req_id;
        std::vector<BlockId> blocks;
        int done_step = 0;
    };

    void complete_saves(int step, KVConnectorOutput& out);
    void release_scripted_copies(int step);
    void complete_loads(int step, KVConnectorOutput& out);
    void finished_sending(const std::set<std::string>& finished_req_ids, KVConnectorOutput& out);
    // KVOutputAggregator: a request is finished_sending once every rank reported it.
    void report_sending(const std::string& req_id, KVConnectorOutput& out);
    bool covers_range(const SaveJob& job) const;
    // bind_and_start's two halves: the metadata's loads (sync ones land now), then its save jobs
    void start_loads(int step, const StoreMetadata& meta);
    void start_sync_load(const std::string& req_id, const std::vector<BlockId>& blocks);
    bool hotfixed() const;  // store_sync_load: the downstream hotfix's synchronous loads
    void start_saves(int step, const StoreMetadata& meta);

    ConnectorSpec spec_;
    Variant variant_;
    int block_size_;
    WorkerEnv& env_;
    const ScriptedReports* scripted_ = nullptr;
    KvStore& store_;
    bool can_put_;

    std::int64_t next_seq_ = 0;                 // emission order (== store_job_id order)
    std::map<std::int64_t, InflightSave> saves_;
    std::vector<int> rank_busy_until_;          // per rank: when its send thread drains
    std::map<std::int64_t, InflightLoad> loads_;

    // delay_free (pre-#52372): KVCacheStoreSendingThread.stored_requests and finished_store_req, per rank.
    std::vector<std::map<std::string, int>> stored_requests_;
    std::vector<std::set<std::string>> finished_store_req_;
    std::set<std::string> bound_preempted_;
    std::map<std::string, int> sending_reports_;
};

}  // namespace kvsim
