#pragma once
// The mission's property and its neighbours, judged at the moment the worker acts:
// - save_emitted: every block a save job names, and the job's request, are in the
//   core's current block table for that request at the step the job is emitted, and
//   a job that writes tokens has a block for each of them;
// - save_read / send_read: a rank never reads a block that was freed or now holds
//   another request's KV;
// - load_written: a load writes only into blocks its request owns.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "properties/checkers/checker.h"
#include "sim/environment/worker_env.h"

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
    // (job id, token range, request): identifies a save job between emission and its reads. The
    // integers first: most comparisons are decided before the request id's bytes are read.
    using JobKey = std::tuple<std::int64_t, int, int, std::string>;
    static JobKey key_of(const SaveJob& job) { return {job.job_id, job.token_start, job.token_end, job.req_id}; }

    const Scheduler& scheduler_;
    std::vector<Violation> violations_;
    // Block generations (BlockPool reuse counters) of each job's blocks when it was emitted:
    // a block whose generation changed since was handed out again and holds other KV.
    std::map<JobKey, std::vector<std::uint64_t>> emitted_generations_;
};

}  // namespace kvsim
