#include <fmt/format.h>

#include "properties/harness/run_views.h"
#include "properties/harness/verdict_line.h"

namespace kvsim {
namespace {

Json optional_json(const auto& value) { return value ? Json(*value) : Json(nullptr); }

Json step_json(const TimelineStep& step) {
    Json requests = Json::array(), scheduled = Json::array(), blocks = Json::array(), chosen = Json::array();
    for (const RequestChange& r : step.requests)
        requests.push_back({r.lane, to_string(r.status), r.status_name, r.num_computed_tokens, r.blocks});
    for (const auto& [lane, tokens] : step.scheduled) scheduled.push_back({lane, tokens});
    for (const BlockChange& b : step.blocks) blocks.push_back({b.id, b.ref_cnt, b.cached ? 1 : 0, b.pins, b.generation});
    for (const auto& [lane, child] : step.chosen_child) chosen.push_back({lane, child});
    return {{"s", step.step}, {"r", requests}, {"k", scheduled}, {"b", blocks}, {"c", chosen},
            {"e", {step.first_event, step.end_event}}};
}

Json job_json(const StoreJob& job) {
    Json reports = Json::array();
    for (const RankReport& r : job.reports) reports.push_back({r.rank, r.step, r.outcome});
    return {{"job", job.job},       {"request", job.request},         {"step", job.step},
            {"tokens", {job.token_start, job.token_end}}, {"blocks", job.blocks}, {"reports", reports},
            {"put", optional_json(job.put_step)}};
}

Json transfer_json(const Transfer& t) {
    return {{"connector", t.connector}, {"kind", t.kind}, {"request", t.request}, {"step", t.step},
            {"blocks", t.blocks}, {"done", optional_json(t.done_step)}, {"outcome", t.outcome}};
}

std::string quote(const Finding& f) {
    if (f.kind == FindingKind::crash && f.upstream)
        return fmt::format("{} {}: AssertionError: {}", f.upstream->file, f.upstream->function, f.detail);
    return fmt::format("invariant {}: {}", f.id, f.message());
}

}  // namespace

Json finding_view_json(const RunResult& result) {
    if (result.findings.empty()) return nullptr;
    const Finding& f = result.findings.front();
    return {{"kind", to_string(f.kind)}, {"id", f.id},           {"signature", f.signature()},
            {"step", f.step},            {"request", f.request}, {"blocks", to_id_list(f.blocks)},
            {"job", optional_json(f.job)}, {"rank", optional_json(f.rank)}, {"connector", f.connector},
            {"message", f.message()},    {"quote", quote(f)}};
}

Json timeline_view_json(const Timeline& timeline) {
    Json steps = Json::array(), jobs = Json::array(), transfers = Json::array();
    for (const TimelineStep& step : timeline.steps) steps.push_back(step_json(step));
    for (const StoreJob& job : timeline.jobs) jobs.push_back(job_json(job));
    for (const Transfer& t : timeline.transfers) transfers.push_back(transfer_json(t));
    return {{"lanes", timeline.lanes}, {"num_blocks", timeline.num_blocks}, {"num_ranks", timeline.num_ranks},
            {"steps", steps},          {"jobs", jobs},                      {"transfers", transfers}};
}

Json run_view_json(const RunViewInput& input, const CausalSlice& slice) {
    const RunResult& result = input.result;
    Json events = Json::array();
    for (const LogEvent& e : result.events) events.push_back({e.step, to_string(e.category), render_text(e)});
    Json trace_lines = Json::array();
    for (std::size_t i : slice.trace_events) trace_lines.push_back(input.trace.events[i].line);
    Json out = {{"trace", input.trace_path},
                {"variant", input.variant},
                {"verdict", result.internal_error ? "internal-error" : std::string(to_string(result.verdict))},
                {"signature", result.signature},
                {"message", result.message},
                {"steps_run", result.steps},
                {"repro", repro_command(input.trace_path, input.variant)},
                {"finding", finding_view_json(result)},
                {"settings", input.settings},
                {"registry", input.registry},
                {"slice", {{"events", slice.events}, {"trace_lines", trace_lines}, {"requests", slice.requests}}},
                {"events", events},
                {"trace_text", input.trace_text}};
    if (result.timeline) out.update(timeline_view_json(*result.timeline));
    return out;
}

}  // namespace kvsim
