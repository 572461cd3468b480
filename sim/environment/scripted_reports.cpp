#include "sim/environment/scripted_reports.h"

namespace kvsim {

ScriptedReports::ScriptedReports(const Trace& trace) {
    for (const Event& event : trace.events) {
        const auto* report = std::get_if<ReportEvent>(&event.body);
        if (report == nullptr) continue;
        by_step_[event.step].push_back(report);
        if (report->kind == ReportKind::finished_recving || report->kind == ReportKind::failed_recving)
            last_recv_report_[report->request_id] = event.step;
        if (report->kind == ReportKind::store_done) last_store_report_[{report->request_id, report->rank}] = event.step;
    }
}

bool ScriptedReports::covers_recv(const std::string& request_id, int step) const {
    const auto it = last_recv_report_.find(request_id);
    return it != last_recv_report_.end() && it->second >= step;
}

bool ScriptedReports::covers_store(const std::string& request_id, int rank, int step) const {
    const auto it = last_store_report_.find({request_id, rank});
    return it != last_store_report_.end() && it->second >= step;
}

const std::vector<const ReportEvent*>& ScriptedReports::at(int step) const {
    static const std::vector<const ReportEvent*> kNone;
    const auto it = by_step_.find(step);
    return it == by_step_.end() ? kNone : it->second;
}

}  // namespace kvsim
