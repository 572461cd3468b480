#pragma once
// The mission's property and its neighbours, judged at the moment the worker acts:
// - save_emitted: every block a save job names, and the job's request, are in the
//   core's current block table for that request at the step the job is emitted, and
//   a job that writes tokens has a block for each of them;
// - save_read / send_read: a rank never reads a block that was freed or now holds
//   another request's KV;
// - load_written: a load writes only into blocks its request owns.
#include <vector>

#include "properties/checkers/checker.h"
#include "sim/worker/worker_env.h"

namespace kvsim {

class Scheduler;

class WorkerAccessChecker : public WorkerObserver {
public:
    explicit WorkerAccessChecker(const Scheduler& scheduler) : scheduler_(scheduler) {}

    void save_emitted(const SaveJob& job) override;
    void save_read(const SaveJob& job, int rank) override;
    void send_read(const std::string& req_id, const std::vector<BlockId>& blocks) override;
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                      std::string_view source) override;

    // Violations seen since the last call.
    std::vector<Violation> take_violations();

private:
    // Whether `block` at table position `index` still holds req_id's KV for that position.
    bool holds_request_kv(const std::string& req_id, std::size_t index, BlockId block,
                          const std::vector<BlockHash>& hashes) const;
    void check_read(const std::string& what, const std::string& req_id, const std::vector<BlockId>& blocks,
                    std::size_t first_index, const std::vector<BlockHash>& hashes);

    const Scheduler& scheduler_;
    std::vector<Violation> violations_;
};

}  // namespace kvsim
