#include "sim/connector/mooncake/mooncake_connector_worker.h"

#include <fmt/format.h>

#include "sim/common/event_log.h"
#include "sim/environment/fault_schedule.h"

namespace kvsim {

MooncakeConnectorWorker::MooncakeConnectorWorker(const ConnectorSpec& spec, WorkerEnv& env,
                                                 MooncakeWorkerOptions options)
    : spec_(spec),
      env_(env),
      is_kv_producer_(spec.role == KvRole::kv_producer),
      is_kv_consumer_(spec.role == KvRole::kv_consumer),
      options_(options) {}

EventBuilder MooncakeConnectorWorker::log(std::string format, const char* action, const std::string& req_id) {
    EventBuilder event(env_.log, EventCategory::p2p, std::move(format));
    event.text("action", action).request(req_id);
    return event;
}

// "pull R failed: blocks invalid", "pull R failed|ok: notify-only, [not ]reported".
void MooncakeConnectorWorker::log_pull_result(const std::string& req_id, bool ok, bool notify_only, bool reported) {
    std::string format = ok ? "pull {request} ok: " : "pull {request} failed: ";
    format += notify_only ? (reported ? "notify-only, reported" : "notify-only, not reported") : "blocks invalid";
    log(std::move(format), "pull_result", req_id)
        .text("outcome", ok ? "ok" : "failed")
        .flag("notify_only", notify_only)
        .flag("reported", reported);
}

// MooncakeConnector.start_load_kv -> MooncakeConnectorWorker.start_load_kv @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
void MooncakeConnectorWorker::bind_and_start(int step, const ConnectorMetadata* metadata) {
    const auto* meta = metadata_as<MooncakeConnectorMetadata>(metadata);
    if (meta == nullptr) return;
    if (!is_kv_producer_ && !meta->reqs_to_recv.empty()) start_load_kv(step, *meta);
    if (!is_kv_consumer_ && (!meta->reqs_to_send.empty() || !meta->reqs_not_processed.empty()))
        record_send_reqs(step, *meta);
}

// MooncakeConnectorWorker._start_load_kv / receive_kv @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: every pull in the
// metadata goes to P, notify-only pulls (no local blocks) included.
void MooncakeConnectorWorker::start_load_kv(int step, const MooncakeConnectorMetadata& meta) {
    for (const auto& pull : meta.reqs_to_recv) {
        const bool failed = env_.faults != nullptr && env_.faults->take_load_failure(pull.req_id);
        const int delay = env_.draw_load_delay();
        pulls_.push_back({.req_id = pull.req_id,
                          .local_block_ids = pull.local_block_ids,
                          .done_step = step + delay,
                          .failed = failed,
                          .notify_scheduler = pull.notify_scheduler});
        log(failed ? "pull {request} {blocks} answers at step {answer_step} (load_fail)"
                   : "pull {request} {blocks} answers at step {answer_step}",
            "pull", pull.req_id)
            .block_groups("blocks", pull.local_block_ids)
            .integer("answer_step", step + delay)
            .flag("load_fail", failed);
    }
}

// MooncakeConnectorWorker.record_send_reqs @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
void MooncakeConnectorWorker::record_send_reqs(int step, const MooncakeConnectorMetadata& meta) {
    for (const auto& send : meta.reqs_to_send) {
        if (!send.block_ids.empty()) {
            // "Already gone through request_finished()": `self.reqs_need_send[transfer_id]`.
            auto it = send_slots_.find(send.req_id);
            if (it == send_slots_.end()) {
                // KeyError inside the sender-loop coroutine: nobody awaits its future, so the
                // engine lives on and the rest of this metadata is never recorded.
                log("record_send_reqs: KeyError {request} (rest of the metadata dropped)", "send_key_error", send.req_id);
                return;
            }
            SendSlot& slot = it->second;
            slot.p_req_id = send.req_id;
            slot.local_block_ids = send.block_ids;
            slot.ready = true;
            slot.pull_step = step + env_.config.pull_delay;
            log("send {request} ready, decode side pulls at step {pull_step}", "send_ready", send.req_id)
                .integer("pull_step", slot.pull_step);
        } else if (!send_slots_.contains(send.req_id)) {
            // From update_state_after_alloc: create the (not ready) slot.
            send_slots_[send.req_id] = SendSlot{.p_req_id = send.req_id, .local_block_ids = {}, .ready = false, .pull_step = 0};
        }
    }
    // Upstream iterates a Python set (hash order); kvsim uses sorted order.
    for (const auto& transfer_id : meta.reqs_not_processed) {
        auto it = send_slots_.find(transfer_id);
        if (it == send_slots_.end()) {
            // `self.reqs_need_send.pop(transfer_id)` without a default: KeyError, swallowed
            // by the sender loop as above (e.g. a P request aborted before it was allocated).
            log("record_send_reqs: KeyError {request} (rest of the metadata dropped)", "send_key_error", transfer_id);
            return;
        }
        const bool was_ready = it->second.ready;
        send_slots_.erase(it);
        if (was_ready) {
            log("record_send_reqs: assert not send_meta.ready.is_set() failed for {request} (swallowed)",
                "send_ready_assert", transfer_id);
            return;
        }
        log("send slot {request} dropped (not processed)", "send_dropped", transfer_id);
    }
}

// MooncakeConnectorWorker.get_finished / get_transfer_results / get_block_ids_with_load_errors
// @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1, with the answers of the remote side (process_pulling_result,
// _handle_failed_recv on D; send_kv_to_decode on P) arriving at their drawn steps.
KVConnectorOutput MooncakeConnectorWorker::get_finished(int step, const std::set<std::string>&) {
    KVConnectorOutput out;
    if (!is_kv_producer_) {
        std::vector<Pull> pending;
        for (auto& pull : pulls_) {
            if (pull.done_step > step) {
                pending.push_back(std::move(pull));
                continue;
            }
            const bool has_blocks = any_blocks(pull.local_block_ids);
            if (pull.failed) {
                // _handle_failed_recv: single group -> the blocks are load errors, and the id
                // is finished so the scheduler recomputes; a pull without blocks is skipped.
                if (has_blocks) {
                    for (BlockId b : flatten_blocks(pull.local_block_ids)) out.invalid_block_ids.insert(b);
                    out.finished_recving.insert(pull.req_id);
                    log_pull_result(pull.req_id, false, false, true);
                } else {
                    log_pull_result(pull.req_id, false, true, false);
                }
                continue;
            }
            // process_pulling_result: every ok pull is finished once all P workers answered.
            if (has_blocks) {
                if (env_.observer != nullptr)
                    env_.observer->load_written(pull.req_id, flatten_blocks(pull.local_block_ids), "p2p");
                out.finished_recving.insert(pull.req_id);
            } else if (options_.report_empty_pulls && pull.notify_scheduler) {
                out.finished_recving.insert(pull.req_id);
                log_pull_result(pull.req_id, true, true, true);
            } else {
                log_pull_result(pull.req_id, true, true, false);
            }
        }
        pulls_ = std::move(pending);
    }
    if (!is_kv_consumer_) {
        // send_kv_to_decode: the decode side's pull reads the slot's blocks; once served,
        // the slot is popped and the P request id is finished_sending.
        for (auto it = send_slots_.begin(); it != send_slots_.end();) {
            SendSlot& slot = it->second;
            if (!slot.ready || slot.pull_step > step) {
                ++it;
                continue;
            }
            if (env_.observer != nullptr) env_.observer->send_read(slot.p_req_id, flatten_blocks(slot.local_block_ids));
            out.finished_sending.insert(slot.p_req_id);
            it = send_slots_.erase(it);
        }
    }
    return out;
}

bool MooncakeConnectorWorker::busy() const {
    if (!pulls_.empty()) return true;
    for (const auto& [id, slot] : send_slots_)
        if (slot.ready) return true;
    return false;
}

}  // namespace kvsim
