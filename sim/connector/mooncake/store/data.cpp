#include "sim/connector/mooncake/store/data.h"

#include "sim/common/upstream_assertion.h"

namespace kvsim {

void RequestTracker::reset() {
    token_len = 0;
    allocated_block_ids.clear();
    num_saved_tokens = 0;
    has_pending_offload = false;
    prefill_end_tokens = 0;
}

void RequestTracker::update(GroupBlockSpan new_block_ids) {
    if (new_block_ids.size() != allocated_block_ids.size())
        throw UpstreamAssertion(
            "store_tracker_group_count_mismatch",
            "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py RequestTracker.update",
            fmt::format("ValueError: Group count mismatch: tracker has {} groups, update has {}",
                        allocated_block_ids.size(), new_block_ids.size()));
    for (std::size_t g = 0; g < new_block_ids.size(); ++g)
        allocated_block_ids[g].insert(allocated_block_ids[g].end(), new_block_ids[g].begin(), new_block_ids[g].end());
}

std::optional<ReqMeta> ReqMeta::from_request_tracker(RequestTracker& tracker, int block_size,
                                                     const std::optional<LoadSpec>& load_spec,
                                                     std::optional<bool> skip_save,
                                                     const std::vector<BlockHash>& block_hashes) {
    const int token_ids_start = tracker.num_saved_tokens;
    const int chunk_boundary = (token_ids_start + 1 + block_size - 1) / block_size * block_size;
    const int num_tokens_to_save = tracker.token_len / block_size * block_size;

    bool skip = skip_save.value_or(false) || num_tokens_to_save < chunk_boundary;
    // A ReqMeta never carries both a save and a load.
    if (load_spec && load_spec->can_load) skip = true;
    if (skip && !load_spec) return std::nullopt;

    if (!skip) tracker.num_saved_tokens = num_tokens_to_save;

    ReqMeta meta;
    meta.req_id = tracker.req_id;
    meta.token_len_chunk = num_tokens_to_save;
    meta.block_ids = tracker.allocated_block_ids;
    meta.block_hashes = block_hashes;  // copied only for a meta that is made
    meta.can_save = !skip;
    if (load_spec && load_spec->can_load) meta.load_spec = load_spec;
    meta.token_ids_start = token_ids_start;
    meta.num_prompt_tokens = tracker.prefill_end_tokens;
    return meta;
}

}  // namespace kvsim

namespace kvsim {

std::vector<LogEvent> StoreMetadata::log_events() const {
    std::vector<LogEvent> events;
    for (const ReqMeta& m : requests) {
        if (m.can_save) {
            EventBuilder e = make_event(EventCategory::meta, m.store_job_id
                                                                 ? "store save {request} tokens=[{token_start},{token_end}) blocks={blocks:+} job={job}"
                                                                 : "store save {request} tokens=[{token_start},{token_end}) blocks={blocks:+}");
            e.text("connector", "store").text("action", "save").request(m.req_id);
            e.integer("token_start", m.token_ids_start).integer("token_end", m.token_len_chunk);
            e.block_groups("blocks", m.block_ids);
            if (m.store_job_id) e.integer("job", *m.store_job_id);
            events.push_back(e.take());
        } else if (m.load_spec) {
            events.push_back(make_event(EventCategory::meta,
                                        "store load {request} tokens=[{token_start},{token_end}) blocks={blocks:+}")
                                 .text("connector", "store")
                                 .text("action", "load")
                                 .request(m.req_id)
                                 .integer("token_start", m.load_spec->vllm_cached_tokens)
                                 .integer("token_end", m.load_spec->kvpool_cached_tokens)
                                 .block_groups("blocks", m.block_ids)
                                 .take());
        } else {
            events.push_back(make_event(EventCategory::meta, "store noop {request}")
                                 .text("connector", "store")
                                 .text("action", "noop")
                                 .request(m.req_id)
                                 .take());
        }
    }
    return events;
}

}  // namespace kvsim
