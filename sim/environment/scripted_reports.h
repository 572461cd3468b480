#pragma once
// The trace's `report` events as the worker side sees them (kvsim's own): the reports of each
// step, in file order, and which requests' loads the trace scripts, so that no delay is drawn
// for them. Upstream's tests write these reports by hand into the model runner output
// (tests/v1/kv_connector/unit/utils.py create_model_runner_output @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc).
#include <map>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace kvsim {

class ScriptedReports {
public:
    explicit ScriptedReports(const Trace& trace);

    // A finished_recving or failed_recving report names this request at `step` or later: a load
    // it starts at `step` completes only when the trace says so.
    bool covers_recv(const std::string& request_id, int step) const;
    // The report events of `step`, in file order (they live in the trace).
    const std::vector<const ReportEvent*>& at(int step) const;
    // A store_done report names this request and rank at `step` or later: a copy started at `step`
    // on that rank completes only when the trace says so.
    bool covers_store(const std::string& request_id, int rank, int step) const;
    bool empty() const { return by_step_.empty(); }

private:
    std::map<std::string, int> last_recv_report_;  // request -> step of its last receive report
    std::map<int, std::vector<const ReportEvent*>> by_step_;
    std::map<std::pair<std::string, int>, int> last_store_report_;  // (request, rank) -> step
};

}  // namespace kvsim
