#include "properties/harness/timeline_transfers.h"

#include <algorithm>

namespace kvsim {

IdList event_blocks(const LogEvent& event, std::string_view key) {
    if (const IdList* ids = event.value<IdList>(key)) return *ids;
    IdList flat;
    if (const GroupList* groups = event.value<GroupList>(key))
        for (const IdList& group : *groups) flat.insert(flat.end(), group.begin(), group.end());
    return flat;
}

namespace {

bool reported(const StoreJob& job, int rank) {
    return std::any_of(job.reports.begin(), job.reports.end(), [rank](const RankReport& r) { return r.rank == rank; });
}

// The job a worker event names: by id, or (no ids: delay_free) the oldest job of the request
// that `open` still accepts.
StoreJob* find_job(Timeline& timeline, const LogEvent& event, auto open) {
    const std::int64_t id = event.integer("job").value_or(-1);
    for (StoreJob& job : timeline.jobs) {
        if (id >= 0 ? job.job == id : (job.job < 0 && job.request == event.request() && open(job))) return &job;
    }
    return nullptr;
}

// The oldest transfer of `kind` for the request that has not completed.
Transfer* open_transfer(Timeline& timeline, std::string_view kind, std::string_view request) {
    for (Transfer& t : timeline.transfers)
        if (t.kind == kind && t.request == request && !t.done_step) return &t;
    return nullptr;
}

void read_meta(const LogEvent& event, Timeline& timeline) {
    if (event.text("connector") != "store") return;
    const std::string_view action = event.text("action");
    if (action == "save") {
        timeline.jobs.push_back(StoreJob{event.integer("job").value_or(-1), std::string(event.request()), event.step,
                                         static_cast<int>(event.integer("token_start").value_or(0)),
                                         static_cast<int>(event.integer("token_end").value_or(0)),
                                         event_blocks(event), {}, std::nullopt});
    } else if (action == "load") {
        timeline.transfers.push_back(
            Transfer{"store", "load", std::string(event.request()), event.step, event_blocks(event), std::nullopt, ""});
    }
}

void read_store(const LogEvent& event, Timeline& timeline) {
    const std::string_view action = event.text("action");
    if (action == "copy") {
        const int rank = static_cast<int>(event.integer("rank").value_or(0));
        if (StoreJob* job = find_job(timeline, event, [rank](const StoreJob& j) { return !reported(j, rank); }))
            job->reports.push_back(RankReport{rank, event.step, std::string(event.text("outcome"))});
    } else if (action == "put") {
        if (StoreJob* job = find_job(timeline, event, [](const StoreJob& j) { return !j.put_step; }))
            job->put_step = event.step;
    } else if (action == "skip") {
        if (StoreJob* job = find_job(timeline, event, [](const StoreJob& j) { return j.reports.empty(); }))
            job->reports.push_back(RankReport{-1, event.step, "skipped"});
    }
}

void read_load(const LogEvent& event, Timeline& timeline) {
    Transfer* load = event.flag("async") ? open_transfer(timeline, "load", event.request()) : nullptr;
    if (load == nullptr) {
        timeline.transfers.push_back(
            Transfer{"store", "load", std::string(event.request()), event.step, event_blocks(event), std::nullopt, ""});
        load = &timeline.transfers.back();
    }
    load->done_step = event.step;
    load->outcome = std::string(event.text("outcome"));
}

void read_p2p(const LogEvent& event, Timeline& timeline) {
    const std::string_view action = event.text("action");
    const std::string request(event.request());
    if (action == "pull") {
        timeline.transfers.push_back(Transfer{"p2p", "pull", request, event.step, event_blocks(event),
                                              static_cast<int>(event.integer("answer_step").value_or(event.step)),
                                              event.flag("load_fail") ? "load_fail" : ""});
    } else if (action == "pull_result") {
        for (auto it = timeline.transfers.rbegin(); it != timeline.transfers.rend(); ++it)
            if (it->kind == "pull" && it->request == request && it->outcome.empty()) {
                it->outcome = std::string(event.text("outcome"));
                it->done_step = event.step;
                break;
            }
    } else if (action == "send_ready") {
        timeline.transfers.push_back(Transfer{"p2p", "send", request, event.step, {}, std::nullopt, "ready"});
    }
}

}  // namespace

void read_transfers(const std::vector<LogEvent>& events, Timeline& timeline) {
    for (const LogEvent& event : events) {
        switch (event.category) {
            case EventCategory::meta: read_meta(event, timeline); break;
            case EventCategory::store: read_store(event, timeline); break;
            case EventCategory::load: read_load(event, timeline); break;
            case EventCategory::p2p: read_p2p(event, timeline); break;
            case EventCategory::send_done:
                if (Transfer* send = open_transfer(timeline, "send", event.request())) {
                    send->done_step = event.step;
                    send->outcome = "sent";
                }
                break;
            default: break;
        }
    }
}

}  // namespace kvsim
