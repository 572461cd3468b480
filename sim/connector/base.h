#pragma once
// The interface of a KV connector, scheduler and worker sides.
// vllm/distributed/kv_transfer/kv_connector/v1/base.py KVConnectorBase_V1 @ 003df2961dd8830c317a61f9745ccd557da9fa06
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "sim/common/event_log.h"
#include "sim/core/kv_cache_blocks.h"
#include "sim/core/outputs.h"
#include "sim/core/request.h"
#include "sim/core/scheduler_output.h"

namespace kvsim {

class BlockPool;
class EventLog;

struct ConnectorMetadata {
    virtual ~ConnectorMetadata() = default;
    // What this step's metadata asks for, as `meta` events for the event log.
    virtual std::vector<LogEvent> log_events() const = 0;
    // The same events as their log text, one line each.
    std::vector<std::string> describe() const {
        std::vector<std::string> lines;
        for (const LogEvent& event : log_events()) lines.push_back(render_text(event));
        return lines;
    }
};

// dynamic_cast for a connector's own metadata class, which is final: one type_info comparison, where
// libstdc++'s dynamic_cast walks the class hierarchy (it was 2 % of a fuzz execution). Null when
// `metadata` is null or of another connector.
template <class T>
const T* metadata_as(const ConnectorMetadata* metadata) {
    static_assert(std::is_final_v<T> && std::is_base_of_v<ConnectorMetadata, T>);
    return metadata != nullptr && typeid(*metadata) == typeid(T) ? static_cast<const T*>(metadata) : nullptr;
}

// What get_num_new_matched_tokens answers: nullopt tokens = "not decided yet, ask again".
struct MatchResult {
    std::optional<int> num_tokens = 0;
    bool load_async = false;
};

struct FinishResult {
    bool delay_free_blocks = false;
};

class KVConnectorScheduler {
public:
    virtual ~KVConnectorScheduler() = default;
    virtual std::string_view name() const = 0;

    // KVConnectorBase_V1.get_num_new_matched_tokens @ 003df2961dd8830c317a61f9745ccd557da9fa06
    virtual MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) = 0;
    // KVConnectorBase_V1.update_state_after_alloc @ 003df2961dd8830c317a61f9745ccd557da9fa06 (may be called twice for async loads)
    virtual void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks,
                                          int num_external_tokens) = 0;
    // KVConnectorBase_V1.build_connector_meta @ 003df2961dd8830c317a61f9745ccd557da9fa06 (must not modify the output)
    virtual std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput& output) = 0;
    // KVConnectorBase_V1.update_connector_output @ 003df2961dd8830c317a61f9745ccd557da9fa06
    virtual void update_connector_output(const KVConnectorOutput& output) = 0;
    // KVConnectorBase_V1.request_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06 (once per request, before blocks are freed)
    virtual FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) = 0;
    // KVConnectorBase_V1.has_pending_push_work @ 003df2961dd8830c317a61f9745ccd557da9fa06
    virtual bool has_pending_push_work() const { return false; }
    // KVConnectorBase_V1.bind_gpu_block_pool
    virtual void bind_gpu_block_pool(BlockPool* /*pool*/) {}
    // Blocks this connector holds a ref on (store-job pins), once per ref, appended to `out`.
    virtual void append_pinned_blocks(std::vector<BlockId>& /*out*/) const {}
    std::vector<BlockId> pinned_blocks() const {
        std::vector<BlockId> out;
        append_pinned_blocks(out);
        return out;
    }
};

// The worker side, one object for all ranks. It sees the connector metadata of the step it
// executes, as upstream's worker sees only what bind_connector_metadata bound.
class KVConnectorWorker {
public:
    virtual ~KVConnectorWorker() = default;
    // The step's own metadata: what the scheduler built into `output`.
    void execute(int step, const SchedulerOutput& output) { bind_and_start(step, output.kv_connector_metadata.get()); }
    // KVConnectorBase_V1.bind_connector_metadata + start_load_kv @ 003df2961dd8830c317a61f9745ccd557da9fa06: binds
    // `metadata` (none: nothing to start) and starts the loads and saves it asks for.
    virtual void bind_and_start(int step, const ConnectorMetadata* metadata) = 0;
    // What completed by the end of `step` (vllm get_finished, aggregated over ranks).
    virtual KVConnectorOutput get_finished(int step, const std::set<std::string>& finished_req_ids) = 0;
    // True while loads or saves are still in flight.
    virtual bool busy() const = 0;
};

}  // namespace kvsim
