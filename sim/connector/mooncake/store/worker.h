#pragma once
// The worker side of MooncakeStoreConnector, all ranks in one object:
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py MooncakeStoreWorker
// (get_finished, KVCacheStoreSendingThread, KVCacheStoreRecvingThread) @ copy 57361883209, and
// for save_block_refs=delay_free the L1 finished_sending bookkeeping @ ScaleX-IO/vllm 8239f8cb (copy 62696572654).
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
#include "sim/environment/worker_env.h"

namespace kvsim {

// MooncakeStoreWorker.lookup @ copy 57361883209 (same rule in L1 copy 62696572654 and L2 copy 67253271191):
// the longest stored prefix within the block-aligned request length; a hit covering all
// num_tokens is re-derived at align(num_tokens - 1), so the last token is recomputed.
int store_lookup_hit_tokens(const KvStore& store, int num_tokens, const std::vector<BlockHash>& block_hashes,
                            int block_size);

class MooncakeStoreWorker : public KVConnectorWorker {
public:
    MooncakeStoreWorker(const ConnectorSpec& spec, const EngineConfig& engine, const Variant& variant, WorkerEnv& env,
                        KvStore& store);

    // MooncakeStoreWorker.get_finished (issue half) @ copy 57361883209: binds the StoreMetadata,
    // starts loads (can_load metas) and store jobs (can_save metas, if this worker can put).
    void execute(int step, const SchedulerOutput& output) override;
    // MooncakeStoreWorker.get_finished (completion half), get_block_ids_with_load_errors,
    // build_connector_worker_meta @ copy 57361883209; delay_free: _get_and_clear_finished_sending @ 8239f8cb.
    KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) override;
    bool busy() const override { return !saves_.empty() || !loads_.empty() || !sync_load_errors_.empty(); }

    // MooncakeStoreWorker.__init__ can_put @ copy 57361883209: a kv_consumer without
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
    void complete_loads(int step, KVConnectorOutput& out);
    void finished_sending(const std::set<std::string>& finished_req_ids, KVConnectorOutput& out);
    // KVOutputAggregator: a request is finished_sending once every rank reported it.
    void report_sending(const std::string& req_id, KVConnectorOutput& out);
    bool covers_range(const SaveJob& job) const;

    ConnectorSpec spec_;
    Variant variant_;
    int block_size_;
    WorkerEnv& env_;
    KvStore& store_;
    bool can_put_;

    std::int64_t next_seq_ = 0;                 // emission order (== store_job_id order)
    std::map<std::int64_t, InflightSave> saves_;
    std::vector<int> rank_busy_until_;          // per rank: when its send thread drains
    std::map<std::int64_t, InflightLoad> loads_;
    std::set<BlockId> sync_load_errors_;

    // delay_free (L1): KVCacheStoreSendingThread.stored_requests and finished_store_req, per rank.
    std::vector<std::map<std::string, int>> stored_requests_;
    std::vector<std::set<std::string>> finished_store_req_;
    std::set<std::string> bound_preempted_;
    std::map<std::string, int> sending_reports_;
};

}  // namespace kvsim
