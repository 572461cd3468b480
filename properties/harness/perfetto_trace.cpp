// The run as Chrome trace-event JSON ("JSON Array Format" objects: ph, name, pid, tid, ts, dur).
#include <fmt/format.h>

#include <map>

#include "properties/harness/run_views.h"

namespace kvsim {
namespace {

constexpr int kRequestsPid = 1;
constexpr int kRanksPid = 2;
constexpr int kConnectorPid0 = 3;  // then one process per connector kind
constexpr std::int64_t kStepUs = 1000;

Json metadata(std::string_view what, int pid, int tid, std::string_view name) {
    Json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) e["tid"] = tid;
    return e;
}

Json slice(std::string_view name, int pid, int tid, int from_step, int end_step, Json args) {
    return {{"ph", "X"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", from_step * kStepUs},
            {"dur", std::max<std::int64_t>(1, (end_step - from_step) * kStepUs)}, {"args", std::move(args)}};
}

void add_requests(const Timeline& timeline, int last_step, Json& out) {
    out.push_back(metadata("process_name", kRequestsPid, -1, "requests"));
    std::vector<std::vector<std::pair<int, const RequestChange*>>> changes(timeline.lanes.size());
    for (std::size_t lane = 0; lane < timeline.lanes.size(); ++lane)
        out.push_back(metadata("thread_name", kRequestsPid, static_cast<int>(lane) + 1, timeline.lanes[lane]));
    for (const TimelineStep& step : timeline.steps) {
        for (const RequestChange& r : step.requests) changes[static_cast<std::size_t>(r.lane)].emplace_back(step.step, &r);
        for (const auto& [lane, tokens] : step.scheduled)
            out.push_back(slice("scheduled", kRequestsPid, lane + 1, step.step, step.step + 1, {{"tokens", tokens}}));
    }
    for (std::size_t lane = 0; lane < changes.size(); ++lane) {
        for (std::size_t i = 0; i < changes[lane].size(); ++i) {
            const auto& [from, change] = changes[lane][i];
            if (change->status == LaneStatus::freed) continue;
            const int end = i + 1 < changes[lane].size() ? changes[lane][i + 1].first : last_step + 1;
            out.push_back(slice(to_string(change->status), kRequestsPid, static_cast<int>(lane) + 1, from, end,
                                {{"status", change->status_name},
                                 {"computed_tokens", change->num_computed_tokens},
                                 {"blocks", change->blocks}}));
        }
    }
}

// Each rank copies the jobs in order: a copy runs from when the rank is free (or the job starts)
// to the step it reports.
void add_ranks(const Timeline& timeline, Json& out) {
    out.push_back(metadata("process_name", kRanksPid, -1, "store ranks"));
    for (int rank = 0; rank < timeline.num_ranks; ++rank)
        out.push_back(metadata("thread_name", kRanksPid, rank + 1, fmt::format("rank {}", rank)));
    std::map<int, int> free_from;
    for (const StoreJob& job : timeline.jobs) {
        for (const RankReport& r : job.reports) {
            if (r.rank < 0) continue;
            const int from = std::max(job.step, free_from[r.rank]);
            free_from[r.rank] = r.step + 1;
            out.push_back(slice(fmt::format("job {} {}", job.job, job.request), kRanksPid, r.rank + 1, from, r.step + 1,
                                {{"job", job.job}, {"request", job.request}, {"blocks", job.blocks},
                                 {"outcome", r.outcome}}));
        }
    }
}

struct AsyncSpan {
    std::string connector, name;
    int from = 0, end = 0;
    Json args;
};

void add_connectors(const Timeline& timeline, const Trace& trace, Json& out) {
    std::vector<AsyncSpan> spans;
    for (const StoreJob& j : timeline.jobs) {
        const int end = j.put_step.value_or(j.reports.empty() ? j.step : j.reports.back().step) + 1;
        spans.push_back({"store", fmt::format("save job {} {}", j.job, j.request), j.step, end,
                         {{"job", j.job}, {"request", j.request}, {"tokens", {j.token_start, j.token_end}}, {"blocks", j.blocks}}});
    }
    for (const Transfer& t : timeline.transfers)
        spans.push_back({t.connector, fmt::format("{} {}", t.kind, t.request), t.step, t.done_step.value_or(t.step) + 1,
                         {{"request", t.request}, {"blocks", t.blocks}, {"outcome", t.outcome}}});
    std::map<std::string, int> pids;
    for (const ConnectorSpec& c : trace.connectors) pids.emplace(c.kind, 0);
    if (trace.connectors.size() > 1) pids.emplace("multi", 0);
    int next = kConnectorPid0;
    for (auto& [name, pid] : pids) {
        pid = next++;
        out.push_back(metadata("process_name", pid, -1, "connector " + name));
    }
    int id = 0;
    for (const AsyncSpan& s : spans) {
        const int pid = pids.contains(s.connector) ? pids.at(s.connector) : kConnectorPid0;
        Json begin = {{"ph", "b"}, {"cat", s.connector}, {"name", s.name}, {"id", ++id}, {"pid", pid}, {"tid", 1},
                      {"ts", s.from * kStepUs}, {"args", s.args}};
        out.push_back(begin);
        out.push_back({{"ph", "e"}, {"cat", s.connector}, {"name", s.name}, {"id", id}, {"pid", pid}, {"tid", 1},
                       {"ts", std::max(s.end, s.from + 1) * kStepUs}});
    }
    if (!pids.contains("multi")) return;
    for (const TimelineStep& step : timeline.steps)
        for (const auto& [lane, child] : step.chosen_child)
            out.push_back({{"ph", "i"}, {"s", "p"}, {"name", fmt::format("{} -> {}", timeline.lanes[static_cast<std::size_t>(lane)], child)},
                           {"pid", pids.at("multi")}, {"tid", 1}, {"ts", step.step * kStepUs}});
}

}  // namespace

Json perfetto_json(const RunViewInput& input) {
    Json events = Json::array();
    if (input.result.timeline) {
        const Timeline& timeline = *input.result.timeline;
        const int last_step = timeline.steps.empty() ? 0 : timeline.steps.back().step;
        add_requests(timeline, last_step, events);
        add_ranks(timeline, events);
        add_connectors(timeline, input.trace, events);
    }
    for (const Finding& f : input.result.findings)
        events.push_back({{"ph", "i"}, {"s", "g"}, {"name", f.signature()}, {"pid", kRequestsPid}, {"tid", 0},
                          {"ts", f.step * kStepUs}, {"args", {{"message", f.message()}}}});
    return {{"traceEvents", events},
            {"displayTimeUnit", "ms"},
            {"otherData", {{"trace", input.trace_path}, {"variant", input.variant}, {"verdict", to_string(input.result.verdict)}}}};
}

}  // namespace kvsim
