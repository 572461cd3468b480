#include "properties/harness/causal_slice.h"
#include "properties/harness/settings_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "properties/harness/timeline_transfers.h"
#include "properties/harness/verdict_line.h"
#include "sim/trace/trace_printer.h"

namespace kvsim {
namespace {

bool is_finding_event(const LogEvent& event) {
    switch (event.category) {
        case EventCategory::crash:
        case EventCategory::violation:
        case EventCategory::liveness:
        case EventCategory::internal: return true;
        default: return false;
    }
}

bool names_block(const LogEvent& event, const IdList& blocks) {
    for (const Field& field : event.fields) {
        if (field.kind != FieldKind::blocks && field.kind != FieldKind::block_groups) continue;
        for (std::int64_t id : event_blocks(event, field.key))
            if (std::find(blocks.begin(), blocks.end(), id) != blocks.end()) return true;
    }
    return false;
}

std::string_view trace_event_request(const Event& event) {
    const std::string* id = event_request_id(event.body);
    return id == nullptr ? std::string_view() : std::string_view(*id);
}

// The trace events that started the slice: each involved request's arrival, abort and faults,
// and the rank faults (store_delay, store_fail) when the slice reads the store; only those of the
// steps that ran, up to the finding's (`last_step`).
std::vector<std::size_t> starting_trace_events(const Trace& trace, const CausalSlice& slice, bool reads_store,
                                               int last_step) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event& event = trace.events[i];
        if (event.step > last_step) continue;  // never applied: the run ended first
        const std::string request(trace_event_request(event));
        const auto* fault = std::get_if<FaultEvent>(&event.body);
        const bool rank_fault = fault != nullptr && request.empty();
        if ((!request.empty() && slice.requests.contains(request)) || (rank_fault && reads_store)) out.push_back(i);
    }
    return out;
}

// Requests that arrived and whose blocks were never freed (the request object still alive).
std::set<std::string> alive_at_end(const std::vector<LogEvent>& events) {
    std::set<std::string> alive;
    for (const LogEvent& event : events) {
        if (event.category == EventCategory::arrive) alive.insert(std::string(event.request()));
        if (event.category == EventCategory::free) alive.erase(std::string(event.request()));
    }
    return alive;
}

}  // namespace

bool touches(const LogEvent& event, const CausalSlice& names) {
    if (!names.request.empty() && event.request() == names.request) return true;
    if (!event.request().empty() && names.unfinished.contains(std::string(event.request()))) return true;
    if (names.job && event.integer("job") == names.job) return true;
    return !names.blocks.empty() && names_block(event, names.blocks);
}

CausalSlice causal_slice(const Trace& trace, const RunResult& result, const Finding& finding) {
    CausalSlice slice;
    slice.request = finding.request;
    slice.blocks = to_id_list(finding.blocks);
    slice.job = finding.job;
    if (slice.request.empty() && slice.blocks.empty() && !slice.job) slice.unfinished = alive_at_end(result.events);
    bool reads_store = false;
    for (std::size_t i = 0; i < result.events.size(); ++i) {
        const LogEvent& event = result.events[i];
        if (!touches(event, slice) && !is_finding_event(event)) continue;
        slice.events.push_back(i);
        if (!event.request().empty()) slice.requests.insert(std::string(event.request()));
        reads_store = reads_store || event.category == EventCategory::store;
    }
    if (!slice.request.empty()) slice.requests.insert(slice.request);
    slice.trace_events = starting_trace_events(trace, slice, reads_store, finding.step);
    return slice;
}

namespace {

std::string names_line(const CausalSlice& slice, const Finding& finding) {
    std::string out = "  names:";
    if (!slice.request.empty()) out += " request " + slice.request;
    if (!slice.unfinished.empty()) {
        out += " unfinished requests";
        for (const std::string& id : slice.unfinished) out += " " + id;
    }
    if (!slice.blocks.empty()) out += " blocks " + format_blocks(slice.blocks);
    if (slice.job) out += fmt::format(" job {}", *slice.job);
    if (finding.rank) out += fmt::format(" rank {}", *finding.rank);
    if (!finding.connector.empty()) out += " connector " + finding.connector;
    return out;
}

std::string what_failed(const Finding& finding) {
    if (finding.kind == FindingKind::crash && finding.upstream)
        return fmt::format("  upstream: {} {}: AssertionError: {}", finding.upstream->file, finding.upstream->function,
                           finding.detail);
    return fmt::format("  invariant {}: {}", finding.id, finding.message());
}

void append_events(std::string& out, const RunResult& result, const std::vector<std::size_t>& events,
                   std::size_t max_events) {
    const std::size_t n = events.size();
    const std::size_t head = n > max_events ? max_events / 4 : n;
    const std::size_t tail_from = n > max_events ? n - (max_events - head) : n;
    for (std::size_t k = 0; k < n; ++k) {
        if (k == head && head < tail_from) out += fmt::format("  ... {} more events ...\n", tail_from - head);
        if (k >= head && k < tail_from) continue;
        out += "  " + render_line(result.events[events[k]]);
    }
}

}  // namespace

std::string explain_text(const Trace& trace, const RunResult& result, const CausalSlice& slice,
                         std::string_view trace_path, std::string_view variant, std::size_t max_events,
                         std::string_view settings) {
    if (result.findings.empty())
        return fmt::format("{}: pass under {}: nothing to explain\n", trace_path, variant);
    const Finding& finding = result.findings.front();
    std::string out = fmt::format("{} under {} at step {}\n", finding.signature(), variant, finding.step);
    out += what_failed(finding) + "\n" + names_line(slice, finding) + "\n";
    out += fmt::format("trace {} (the lines that started it):\n", trace_path);
    for (std::size_t i : slice.trace_events) {
        const Event& event = trace.events[i];
        out += event.line > 0 ? fmt::format("  line {}: {}\n", event.line, format_line(event))
                              : fmt::format("  {}\n", format_line(event));
    }
    out += fmt::format("events that touched them ({} of {}):\n", slice.events.size(), result.events.size());
    append_events(out, result, slice.events, max_events);
    out += settings;
    out += "repro: " + repro_command(trace_path, variant) + "\n";
    return out;
}

std::string explain_run(const Trace& trace, const RunResult& result, std::string_view trace_path,
                        const Variant& variant, std::size_t max_events) {
    const CausalSlice slice = result.findings.empty() ? CausalSlice{} : causal_slice(trace, result, result.findings.front());
    const std::string settings = settings_text(settings_diff(trace, variant), variant.name);
    return explain_text(trace, result, slice, trace_path, variant.name, max_events, settings);
}

}  // namespace kvsim
