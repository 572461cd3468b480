// One reader per step-check key, read_KIND_NAME (the one list of keys is sim/trace/check_keys.def).
#include "properties/step_checks/check_readers.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <vector>

#include "properties/step_checks/check_values.h"
#include "properties/step_checks/connector_check_readers.h"

namespace kvsim {
namespace {

using Reader = std::string (*)(const std::string& id, const CheckedState& state);


const Request* request_of(const std::string& id, const CheckedState& s) {
    const auto* slot = s.engine.scheduler().requests().find(id);
    return slot ? slot->get() : nullptr;
}

// An integer field of the request; std::string(kAbsent) without a request object.
template <int Request::*Field>
std::string request_int(const std::string& id, const CheckedState& s) {
    const Request* r = request_of(id, s);
    return r ? fmt::format("{}", r->*Field) : std::string(kAbsent);
}

std::string read_request_status(const std::string& id, const CheckedState& s) {
    const Request* r = request_of(id, s);
    return r ? std::string(to_string(r->status)) : std::string(kAbsent);
}

std::string read_request_blocks(const std::string& id, const CheckedState& s) {
    return check_blocks(s.engine.scheduler().kv_cache_manager().get_block_ids(id));
}

std::string read_request_hashed(const std::string& id, const CheckedState& s) {
    const Request* r = request_of(id, s);
    return r ? fmt::format("{}", r->block_hashes().size()) : std::string(kAbsent);
}

std::string read_request_alive(const std::string& id, const CheckedState& s) {
    return check_on_off(request_of(id, s) != nullptr);
}

std::string read_queue_waiting(const std::string&, const CheckedState& s) {
    return check_names(s.engine.scheduler().waiting());
}
std::string read_queue_running(const std::string&, const CheckedState& s) {
    return check_names(s.engine.scheduler().running());
}
std::string read_queue_skipped(const std::string&, const CheckedState& s) {
    return check_names(s.engine.scheduler().skipped_waiting());
}
std::string read_queue_finished_recving(const std::string&, const CheckedState& s) {
    return check_names(s.engine.scheduler().finished_recving_kv_req_ids());
}
std::string read_queue_failed_recving(const std::string&, const CheckedState& s) {
    return check_names(s.engine.scheduler().failed_recving_kv_req_ids());
}

std::string read_batch_new(const std::string&, const CheckedState& s) {
    std::vector<std::string> ids;
    if (s.batch)
        for (const NewRequestData& r : s.batch->scheduled_new_reqs) ids.push_back(r.req_id);
    return check_names(ids);
}
std::string read_batch_cached(const std::string&, const CheckedState& s) {
    return s.batch ? check_names(s.batch->scheduled_cached_reqs.req_ids) : "-";
}
std::string read_batch_resumed(const std::string&, const CheckedState& s) {
    return s.batch ? check_names(s.batch->scheduled_cached_reqs.resumed_req_ids) : "-";
}
std::string read_batch_preempted(const std::string&, const CheckedState& s) {
    return s.batch ? check_names(s.batch->preempted_req_ids) : "-";
}
std::string read_batch_finished(const std::string&, const CheckedState& s) {
    return s.batch ? check_names(s.batch->finished_req_ids) : "-";
}
std::string read_batch_total_tokens(const std::string&, const CheckedState& s) {
    return fmt::format("{}", s.batch ? s.batch->total_num_scheduled_tokens : 0);
}
std::string read_batch_tokens(const std::string& id, const CheckedState& s) {
    const int* n = s.batch ? s.batch->num_scheduled_tokens.find(id) : nullptr;
    return fmt::format("{}", n ? *n : 0);
}

const BlockPool& pool_of(const CheckedState& s) { return s.engine.scheduler().kv_cache_manager().block_pool(); }

std::string read_pool_free(const std::string&, const CheckedState& s) {
    return fmt::format("{}", pool_of(s).num_free_blocks());
}
std::string read_pool_free_queue(const std::string&, const CheckedState& s) {
    return check_blocks(pool_of(s).free_queue().to_vector());
}
std::string read_pool_cached(const std::string&, const CheckedState& s) {
    std::size_t n = 0;
    for (const auto& [hash, ids] : pool_of(s).cached_blocks()) n += ids.size();
    return fmt::format("{}", n);
}

// The block named by `id`; null when it is not a block of the pool.
const KVCacheBlock* block_of(const std::string& id, const CheckedState& s) {
    BlockId block = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), block);
    if (ec != std::errc{} || end != id.data() + id.size() || block >= pool_of(s).num_blocks()) return nullptr;
    return &pool_of(s).block(block);
}
std::string read_block_ref_cnt(const std::string& id, const CheckedState& s) {
    const KVCacheBlock* b = block_of(id, s);
    return b ? fmt::format("{}", b->ref_cnt) : std::string(kAbsent);
}
std::string read_block_hashed(const std::string& id, const CheckedState& s) {
    const KVCacheBlock* b = block_of(id, s);
    return b ? check_on_off(b->hash.has_value()) : std::string(kAbsent);
}

std::string read_request_computed(const std::string& id, const CheckedState& s) {
    return request_int<&Request::num_computed_tokens>(id, s);
}
std::string read_request_preemptions(const std::string& id, const CheckedState& s) {
    return request_int<&Request::num_preemptions>(id, s);
}

// CheckKey order: one reader per row of check_keys.def, named read_KIND_NAME.
constexpr std::array<Reader, kCheckKeyCount> kReaders = {
#define KVSIM_CHECK_KEY(kind, name, type, needs_id, help) read_##kind##_##name,
#include "sim/trace/check_keys.def"
#undef KVSIM_CHECK_KEY
};

}  // namespace

std::string read_check_key(CheckKey key, const std::string& id, const CheckedState& state) {
    return kReaders[static_cast<std::size_t>(key)](id, state);
}

}  // namespace kvsim
