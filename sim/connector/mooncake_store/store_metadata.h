#pragma once
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py
// MooncakeStoreConnectorMetadata @ copy 57646622044.
// unfinished_request_ids is a copy taken at build time; upstream shares the scheduler's live
// set, which no modelled worker path reads.
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/connector/connector.h"
#include "sim/connector/mooncake_store/req_meta.h"
#include "sim/engine/event_log.h"

namespace kvsim {

// "()" for zero groups (upstream's empty tuple), "[1,2]" for one, "[1,2]+[9]" for several.
inline std::string format_group_blocks(const GroupBlockIds& groups) {
    if (groups.empty()) return "()";
    std::string out;
    for (std::size_t g = 0; g < groups.size(); ++g) out += (g == 0 ? "" : "+") + format_blocks(groups[g]);
    return out;
}

struct StoreMetadata : ConnectorMetadata {
    std::vector<ReqMeta> requests;
    std::set<std::string> unfinished_request_ids;
    std::set<std::string> preempted_req_ids;

    std::vector<std::string> describe() const override {
        std::vector<std::string> lines;
        for (const ReqMeta& m : requests) {
            if (m.can_save) {
                lines.push_back(fmt::format("store save {} tokens=[{},{}) blocks={}{}", m.req_id, m.token_ids_start,
                                            m.token_len_chunk, format_group_blocks(m.block_ids),
                                            m.store_job_id ? fmt::format(" job={}", *m.store_job_id) : ""));
            } else if (m.load_spec) {
                lines.push_back(fmt::format("store load {} tokens=[{},{}) blocks={}", m.req_id,
                                            m.load_spec->vllm_cached_tokens, m.load_spec->kvpool_cached_tokens,
                                            format_group_blocks(m.block_ids)));
            } else {
                lines.push_back(fmt::format("store noop {}", m.req_id));
            }
        }
        return lines;
    }
};

}  // namespace kvsim
