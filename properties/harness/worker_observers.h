#pragma once
// The checkers that watch the worker act, behind the engine's one observer slot: each access goes to
// every one of them, in a fixed order.
#include <vector>

#include "properties/checkers/inflight_write_checker.h"
#include "properties/checkers/worker_access_checker.h"

namespace kvsim {

class WorkerObservers : public WorkerObserver {
public:
    explicit WorkerObservers(const Scheduler& scheduler) : access_(scheduler), inflight_(scheduler) {}

    void save_emitted(const SaveJob& job) override { access_.save_emitted(job); }
    void save_read(const SaveJob& job, int rank) override { access_.save_read(job, rank); }
    void send_read(const std::string& req_id, const std::vector<BlockId>& blocks) override {
        access_.send_read(req_id, blocks);
    }
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                      std::string_view source) override {
        access_.load_written(req_id, blocks, source);
        inflight_.load_written(req_id, blocks, source);
    }
    void forward_dispatched(std::int64_t batch, const std::string& req_id, const std::vector<BlockId>& blocks) override {
        inflight_.forward_dispatched(batch, req_id, blocks);
    }
    void forward_completed(std::int64_t batch) override { inflight_.forward_completed(batch); }

    // Violations seen since the last call: the access checker's, then the in-flight write checker's.
    std::vector<Violation> take_violations() {
        std::vector<Violation> out = access_.take_violations();
        for (Violation& v : inflight_.take_violations()) out.push_back(std::move(v));
        return out;
    }

private:
    WorkerAccessChecker access_;
    InflightWriteChecker inflight_;
};

}  // namespace kvsim
