#pragma once
// In-flight forward writes (vllm-project/vllm#45357): between a batch's dispatch and the processing of its
// output, its forward pass may still write the KV of every token it computes. Judged as the worker acts:
// - forward_completed: no block a batch wrote for a request was handed to another request and filled by
//   a load or P2P receive meanwhile (`inflight_write_into_reused_block`). A block handed to a request that
//   computes its own KV is not judged: that forward pass runs on the same stream, after the stale write;
// - load_written: no load or P2P receive writes a block that another request's batch still in flight
//   writes (`load_under_inflight_write`): the two writes are not ordered.
// Under synchronous scheduling a batch completes in the step that dispatched it, before any later
// allocation, so neither can happen.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "properties/checkers/checker.h"
#include "sim/environment/worker_env.h"

namespace kvsim {

class Scheduler;

class InflightWriteChecker : public WorkerObserver {
public:
    explicit InflightWriteChecker(const Scheduler& scheduler) : scheduler_(scheduler) {}

    void save_emitted(const SaveJob&) override {}
    void save_read(const SaveJob&, int) override {}
    void send_read(const std::string&, const std::vector<BlockId>&) override {}
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks, std::string_view source) override;
    void forward_dispatched(std::int64_t batch, const std::string& req_id, const std::vector<BlockId>& blocks) override;
    void forward_completed(std::int64_t batch) override;

    // Violations seen since the last call.
    std::vector<Violation> take_violations();

private:
    // A block a forward pass writes, with its generation at dispatch.
    struct WrittenBlock {
        BlockId block = 0;
        std::uint64_t generation = 0;
    };
    // One request's share of one dispatched batch.
    struct ForwardWrite {
        std::int64_t batch = 0;
        std::string req_id;
        std::vector<WrittenBlock> blocks;
        std::vector<BlockId> loaded;  // blocks another request's load wrote while this write was in flight
        bool writes(BlockId b) const {
            return std::any_of(blocks.begin(), blocks.end(), [b](const WrittenBlock& w) { return w.block == b; });
        }
    };

    const Scheduler& scheduler_;
    std::vector<ForwardWrite> in_flight_;  // dispatch order
    std::vector<ForwardWrite> spare_;      // completed writes, kept for their buffers
    std::vector<Violation> violations_;
};

}  // namespace kvsim
