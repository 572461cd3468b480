#include "properties/checkers/store_save_computed_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "sim/connector/mooncake/store/data.h"
#include "sim/connector/multi_connector.h"
#include "sim/engine/engine.h"

namespace kvsim {
namespace {

// The blocks of `meta` that hold tokens [from, meta.token_len_chunk).
std::vector<BlockId> blocks_past(const ReqMeta& meta, int from, int block_size) {
    if (meta.block_ids.empty()) return {};
    const auto& blocks = meta.block_ids.front();
    const auto first = static_cast<std::size_t>(from / block_size);
    const auto end = std::min(blocks.size(), static_cast<std::size_t>((meta.token_len_chunk + block_size - 1) / block_size));
    std::vector<BlockId> out;
    for (std::size_t i = first; i < end; ++i) out.push_back(blocks[i]);
    return out;
}

// The request's num_computed_tokens at the end of the step: its own while it lives, else the count it
// had when it was freed in this step (a request that finished normally computed every scheduled
// token; one that ended FINISHED_ERROR on a failed load was rewound first); nullopt when neither.
std::optional<int> computed_at_step_end(const Scheduler& scheduler, const std::string& req_id) {
    if (const auto* slot = scheduler.requests().find(req_id)) return (*slot)->num_computed_tokens;
    const auto& transitions = scheduler.transitions();
    const auto freed = std::find_if(transitions.rbegin(), transitions.rend(), [&](const StatusTransition& t) {
        return t.req_id == req_id && !t.to.has_value();
    });
    if (freed == transitions.rend()) return std::nullopt;
    return freed->num_computed_tokens;
}

void check_store_saves(const Scheduler& scheduler, const StoreMetadata& meta, std::vector<Violation>& out) {
    for (const ReqMeta& m : meta.requests) {
        if (!m.can_save) continue;
        const std::optional<int> computed_now = computed_at_step_end(scheduler, m.req_id);
        if (!computed_now) continue;
        const int computed = *computed_now;
        if (m.token_len_chunk <= computed) continue;
        const std::string job = m.store_job_id ? fmt::format("store job {}", *m.store_job_id) : "store job";
        out.push_back({.invariant = "save_beyond_computed_tokens",
                       .request = m.req_id,
                       .blocks = blocks_past(m, computed, scheduler.config().block_size),
                       .detail = fmt::format("{} saves tokens [{}, {}) but only {} are computed at the end of the step",
                                             job, m.token_ids_start, m.token_len_chunk, computed),
                       .connector = "store",
                       .job = m.store_job_id,
                       .tokens = TokenRange{m.token_ids_start, m.token_len_chunk}});
    }
}

void check_metadata(const Scheduler& scheduler, const ConnectorMetadata* meta, std::vector<Violation>& out) {
    if (meta == nullptr) return;
    if (const auto* store = metadata_as<StoreMetadata>(meta)) return check_store_saves(scheduler, *store, out);
    if (const auto* multi = metadata_as<MultiKVConnectorMetadata>(meta))
        for (const auto& child : multi->metadata) check_metadata(scheduler, child.get(), out);
}

}  // namespace

void StoreSaveComputedChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    check_metadata(engine.scheduler(), engine.last_connector_metadata(), out);
}

}  // namespace kvsim
