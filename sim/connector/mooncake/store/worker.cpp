#include "sim/connector/mooncake/store/worker.h"

#include <algorithm>
#include <limits>

#include "sim/connector/mooncake/store/data.h"
#include "sim/common/event_log.h"
#include "sim/common/upstream_assertion.h"
#include "sim/environment/fault_schedule.h"

namespace kvsim {

constexpr const char* kWorkerFile = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py";

// done_step of a rank copy that waits for a scripted store_done report.
constexpr int kScriptedCopy = std::numeric_limits<int>::max();

int store_lookup_hit_tokens(const KvStore& store, int num_tokens, const std::vector<BlockHash>& block_hashes,
                            int block_size) {
    const int token_len = num_tokens / block_size * block_size;  // coord.align_lookup_length
    if (block_hashes.empty() || token_len <= 0) return 0;
    // find_longest_cache_hit over one full-attention group: the stored prefix, capped at token_len.
    const int stored = store.prefix_hit_blocks(block_hashes) * block_size;
    int hit_length = std::min(stored, token_len);
    if (hit_length >= num_tokens) {
        const int usable_length = (num_tokens - 1) / block_size * block_size;
        if (usable_length <= 0) return 0;
        hit_length = std::min(hit_length, usable_length);
    }
    return hit_length;
}

MooncakeStoreWorker::MooncakeStoreWorker(const ConnectorSpec& spec, const EngineConfig& engine, const Variant& variant,
                                         WorkerEnv& env, KvStore& store)
    : spec_(spec),
      variant_(variant),
      block_size_(engine.block_size),
      env_(env),
      store_(store),
      can_put_(spec.role != KvRole::kv_consumer || spec.save_decode_cache),
      rank_busy_until_(static_cast<std::size_t>(std::max(env.config.ranks, 1)), 0),
      stored_requests_(rank_busy_until_.size()),
      finished_store_req_(rank_busy_until_.size()) {}

bool MooncakeStoreWorker::hotfixed() const {
    return variant_.flag<&Variant::store_sync_load>() == StoreSyncLoad::hotfix_loads_before_forward;
}

void MooncakeStoreWorker::bind_and_start(int step, const ConnectorMetadata* metadata) {
    // MooncakeStoreWorker.get_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06 (start_load_kv @
    // 01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103) asserts load_async on every step, unless the connector neither
    // looks up nor saves (MooncakeStoreConnector.__init__): the configuration rule store_load_async.
    if (!spec_.load_async && (spec_.role != KvRole::kv_consumer || spec_.enable_lookup || spec_.save_decode_cache) &&
        !hotfixed())
        throw UpstreamAssertion("store_load_async", kWorkerFile + std::string(" MooncakeStoreWorker.get_finished"),
                                "load_async must be True for better performance.");
    const auto* meta = metadata_as<StoreMetadata>(metadata);
    if (meta == nullptr) return;
    bound_preempted_ = meta->preempted_req_ids;
    start_loads(step, *meta);
    start_saves(step, *meta);
}

// KVCacheStoreRecvingThread._handle_request: chunks [vllm_cached // bs, cdiv(kvpool_cached, bs)).
void MooncakeStoreWorker::start_loads(int step, const StoreMetadata& meta) {
    for (const ReqMeta& m : meta.requests) {
        if (!m.load_spec || !m.load_spec->can_load) continue;
        std::vector<BlockId> blocks;
        const auto first = static_cast<std::size_t>(m.load_spec->vllm_cached_tokens / block_size_);
        const auto last = static_cast<std::size_t>((m.load_spec->kvpool_cached_tokens + block_size_ - 1) / block_size_);
        blocks.reserve(last > first ? last - first : 0);
        if (!m.block_ids.empty())
            for (std::size_t i = first; i < last && i < m.block_ids[0].size(); ++i) blocks.push_back(m.block_ids[0][i]);
        if (spec_.load_async) {
            // The hotfix joins the receive threads in get_finished: an async load completes in its own step.
            const int delay = hotfixed() ? 0 : env_.draw_load_delay();
            loads_[next_seq_++] = InflightLoad{.req_id = m.req_id, .blocks = std::move(blocks), .done_step = step + delay};
            continue;
        }
        start_sync_load(m.req_id, blocks);
    }
}

// Upstream asserts load_async (rule store_load_async); the downstream hotfix (Unintendedz/DeepSeek-v4-Flash-
// DSpark-2x-DGX-Spark patches/hotfix-dsv4-mooncake-eagle-lookup.py @ 1f42f2a8673978542f29d1c3639d7c0d88bfb74d)
// loads before the forward pass and raises when a block fails; it is never reported as finished_recving.
void MooncakeStoreWorker::start_sync_load(const std::string& req_id, const std::vector<BlockId>& blocks) {
    if (env_.observer) env_.observer->load_written(req_id, blocks, "store");
    const bool failed = env_.faults != nullptr && env_.faults->take_load_failure(req_id);
    if (env_.log)
        env_.log->event(EventCategory::load, "store {request} blocks={blocks} sync {outcome}")
            .text("connector", "store")
            .request(req_id)
            .blocks("blocks", blocks)
            .flag("async", false)
            .text("outcome", failed ? "failed" : "ok");
    if (failed)
        throw UpstreamAssertion("sync_store_load_failed", kWorkerFile + std::string(" MooncakeStoreWorker.start_load_kv"),
                                fmt::format("RuntimeError: Mooncake synchronous SSD load did not complete safely: {}",
                                            req_id),
                                req_id);
}

void MooncakeStoreWorker::start_saves(int step, const StoreMetadata& meta) {
    for (const ReqMeta& m : meta.requests) {
        if (!m.can_save) continue;
        SaveJob job;
        const bool job_pins = variant_.flag<&Variant::save_block_refs>() == SaveBlockRefs::store_job_pins;
        job.job_id = job_pins ? m.store_job_id.value_or(-1) : -1;
        job.req_id = m.req_id;
        job.block_ids = m.block_ids;
        job.token_start = m.token_ids_start;
        job.token_end = m.token_len_chunk;
        job.block_hashes = m.block_hashes;
        if (env_.observer) env_.observer->save_emitted(job);
        if (!can_put_) {
            if (env_.log)
                env_.log->event(EventCategory::store,
                                "skip job={job} {request} (kv_consumer without save_decode_cache has no send thread)")
                    .text("action", "skip")
                    .integer("job", job.job_id)
                    .request(job.req_id);
            continue;
        }
        InflightSave save{.job = std::move(job), .copies = {}};
        save.copies.reserve(rank_busy_until_.size());
        for (int r = 0; r < static_cast<int>(rank_busy_until_.size()); ++r) {
            const auto ri = static_cast<std::size_t>(r);
            if (scripted_ != nullptr && scripted_->covers_store(save.job.req_id, r, step)) {
                save.copies.push_back(RankCopy{.rank = r, .done_step = kScriptedCopy, .fails = false, .reported = false});
                if (!job_pins) ++stored_requests_[ri][save.job.req_id];
                continue;
            }
            int done = step + env_.draw_store_delay();
            if (env_.faults) done += env_.faults->store_extra_delay(r);
            done = std::max(done, rank_busy_until_[ri]);
            rank_busy_until_[ri] = done;
            const bool fails = env_.faults != nullptr && env_.faults->take_store_failure(r);
            save.copies.push_back(RankCopy{.rank = r, .done_step = done, .fails = fails, .reported = false});
            if (!job_pins) ++stored_requests_[ri][save.job.req_id];
        }
        saves_[next_seq_++] = std::move(save);
    }
}

bool MooncakeStoreWorker::covers_range(const SaveJob& job) const {
    const auto last_block = static_cast<std::size_t>(job.token_end / block_size_);
    return !job.block_ids.empty() && job.block_ids[0].size() >= last_block && job.block_hashes.size() >= last_block;
}

void MooncakeStoreWorker::complete_saves(int step, KVConnectorOutput& out) {
    for (auto it = saves_.begin(); it != saves_.end();) {
        InflightSave& save = it->second;
        const SaveJob& job = save.job;
        const bool covered = covers_range(job);
        for (RankCopy& copy : save.copies) {
            if (copy.reported || copy.done_step > step) continue;
            copy.reported = true;
            if (env_.observer) env_.observer->save_read(job, copy.rank);
            if (variant_.flag<&Variant::save_block_refs>() == SaveBlockRefs::store_job_pins) {
                if (job.job_id >= 0) aggregate_completed_save(out.completed_store_jobs, job.job_id, 1);
            } else {
                auto& stored = stored_requests_[static_cast<std::size_t>(copy.rank)];
                if (auto s = stored.find(job.req_id); s != stored.end()) --s->second;  // dec_stored_request
            }
            if (env_.log)
                env_.log->event(EventCategory::store, "copy job={job} {request} rank={rank} {outcome}")
                    .text("action", "copy")
                    .integer("job", job.job_id)
                    .request(job.req_id)
                    .integer("rank", copy.rank)
                    .text("outcome", copy.fails ? "failed" : (covered ? "ok" : "failed (no block for its range)"));
        }
        const bool all_reported = std::all_of(save.copies.begin(), save.copies.end(),
                                              [](const RankCopy& c) { return c.reported; });
        if (!all_reported) {
            ++it;
            continue;
        }
        const bool all_ok = covered && std::none_of(save.copies.begin(), save.copies.end(),
                                                    [](const RankCopy& c) { return c.fails; });
        if (all_ok && job.token_end > job.token_start) {
            const int first = job.token_start / block_size_;
            const int last = job.token_end / block_size_;
            for (int b = first; b < last; ++b) store_.put(job.block_hashes[static_cast<std::size_t>(b)]);
            if (env_.log)
                env_.log->event(EventCategory::store, "put job={job} {request} blocks=[{first_block},{end_block})")
                    .text("action", "put")
                    .integer("job", job.job_id)
                    .request(job.req_id)
                    .integer("first_block", first)
                    .integer("end_block", last);
        }
        it = saves_.erase(it);
    }
}

void MooncakeStoreWorker::complete_loads(int step, KVConnectorOutput& out) {
    for (auto it = loads_.begin(); it != loads_.end();) {
        InflightLoad& load = it->second;
        if (load.done_step > step) {
            ++it;
            continue;
        }
        if (env_.observer) env_.observer->load_written(load.req_id, load.blocks, "store");
        const bool failed = env_.faults != nullptr && env_.faults->take_load_failure(load.req_id);
        if (failed) out.invalid_block_ids.insert(load.blocks.begin(), load.blocks.end());
        out.finished_recving.insert(load.req_id);  // set_finished_request runs after a failure too
        if (env_.log)
            env_.log->event(EventCategory::load, "store {request} blocks={blocks} {outcome}")
                .text("connector", "store")
                .request(load.req_id)
                .blocks("blocks", load.blocks)
                .flag("async", true)
                .text("outcome", failed ? "failed" : "ok");
        it = loads_.erase(it);
    }
}

void MooncakeStoreWorker::report_sending(const std::string& req_id, KVConnectorOutput& out) {
    if (++sending_reports_[req_id] < static_cast<int>(rank_busy_until_.size())) return;
    sending_reports_.erase(req_id);
    out.finished_sending.insert(req_id);
}

void MooncakeStoreWorker::finished_sending(const std::set<std::string>& finished_req_ids, KVConnectorOutput& out) {
    for (std::size_t r = 0; r < stored_requests_.size(); ++r) {
        auto& stored = stored_requests_[r];
        auto& finished_store_req = finished_store_req_[r];
        for (const auto& id : bound_preempted_) stored.erase(id);
        for (auto it = stored.begin(); it != stored.end();) {
            if (it->second == 0 && finished_store_req.erase(it->first) > 0) {
                report_sending(it->first, out);
                it = stored.erase(it);
            } else {
                ++it;
            }
        }
        for (const auto& id : finished_req_ids) {
            auto it = stored.find(id);
            if (it == stored.end()) continue;
            if (it->second == 0) {
                report_sending(id, out);
                stored.erase(it);
            } else {
                finished_store_req.insert(id);
            }
        }
    }
}

// The step's store_done reports: each completes its rank's copy of the oldest store job of the
// request still waiting for one.
void MooncakeStoreWorker::release_scripted_copies(int step) {
    if (scripted_ == nullptr) return;
    for (const ReportEvent* report : scripted_->at(step)) {
        if (report->kind != ReportKind::store_done) continue;
        bool released = false;
        for (auto& [seq, save] : saves_) {
            if (save.job.req_id != report->request_id) continue;
            for (RankCopy& copy : save.copies)
                if (!released && copy.rank == report->rank && copy.done_step == kScriptedCopy) {
                    copy.done_step = step;
                    released = true;
                }
            if (released) break;
        }
    }
}

KVConnectorOutput MooncakeStoreWorker::get_finished(int step, const std::set<std::string>& finished_req_ids) {
    KVConnectorOutput out;
    release_scripted_copies(step);
    complete_saves(step, out);
    complete_loads(step, out);
    if (can_put_ && variant_.flag<&Variant::save_block_refs>() == SaveBlockRefs::delay_free)
        finished_sending(finished_req_ids, out);
    bound_preempted_.clear();
    return out;
}

}  // namespace kvsim
