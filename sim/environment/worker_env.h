#pragma once
// What every worker-side connector model shares: the rank count and delay ranges of
// the trace, the run's one PRNG, the fault schedule, the observer that checks every
// block access against the core's true state, and the event log.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/prng.h"
#include "sim/core/kv_cache_blocks.h"
#include "sim/trace/trace.h"

namespace kvsim {

class EventLog;
class FaultSchedule;

// A store save as the worker sees it (one per can_save ReqMeta).
struct SaveJob {
    std::int64_t job_id = -1;  // store_job_id; -1 where the variant has none (pre-#52372)
    std::string req_id;
    GroupBlockIds block_ids;   // what the job will read
    int token_start = 0;       // watermark before the save
    int token_end = 0;         // token_len_chunk: tokens the job writes to the store
    std::vector<BlockHash> block_hashes;  // of the request, to key the store
};

// Implemented by properties/ checkers; the worker calls it at the moment of each access.
class WorkerObserver {
public:
    virtual ~WorkerObserver() = default;
    // A save job emitted by build_connector_meta this step (before any rank runs it).
    virtual void save_emitted(const SaveJob& job) = 0;
    // A rank copies the job's blocks out of the GPU cache.
    virtual void save_read(const SaveJob& job, int rank) = 0;
    // A p2p producer sends `blocks` of `req_id` to the decode side (reads them).
    virtual void send_read(const std::string& req_id, const std::vector<BlockId>& blocks) = 0;
    // A load writes KV into `blocks` for `req_id`; source names the connector.
    virtual void load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                              std::string_view source) = 0;
    // The forward pass of batch `batch` (its schedule() sequence number) writes the KV of the tokens it
    // computes for `req_id` into `blocks`; the write may land any time until the batch completes.
    virtual void forward_dispatched(std::int64_t /*batch*/, const std::string& /*req_id*/,
                                    const std::vector<BlockId>& /*blocks*/) {}
    // Batch `batch`'s forward pass has landed: its output is processed next.
    virtual void forward_completed(std::int64_t /*batch*/) {}
};

struct WorkerEnv {
    WorkerConfig config;
    Prng* prng = nullptr;
    FaultSchedule* faults = nullptr;
    WorkerObserver* observer = nullptr;
    EventLog* log = nullptr;

    int draw_store_delay() { return draw(config.store_delay_min, config.store_delay_max); }
    int draw_load_delay() { return draw(config.load_delay_min, config.load_delay_max); }

private:
    int draw(int lo, int hi) { return static_cast<int>(prng->between(lo, hi)); }
};

}  // namespace kvsim
