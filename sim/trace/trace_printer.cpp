// Trace -> canonical text, driven by the key tables of trace_schema.cpp.
#include "sim/trace/trace_printer.h"

#include "sim/trace/trace_schema.h"

#include <fmt/format.h>

namespace kvsim {
namespace {

template <class T>
std::string schema_line(const LineSchema<T>& schema, const T& object) {
    std::string out(schema.keyword);
    for (const Row<T>& row : schema.rows)
        if (row.spec.positional) {
            out += ' ';
            append_value(out, row.spec, row.get(object));
        }
    const std::string kind = line_kind(schema, object);
    for (const Row<T>& row : schema.rows) {
        if (row.spec.positional || !key_applies(row.spec, kind) || (row.present && !row.present(object)))
            continue;
        out += ' ';
        out += row.spec.name;
        out += '=';
        append_value(out, row.spec, row.get(object));
    }
    return out;
}

}  // namespace

bool prints_workers(const Trace& trace) {
    if (trace.workers != WorkerConfig{}) return true;
    for (const ConnectorSpec& c : trace.connectors)
        if (c.kind == "p2p" || c.kind == "store") return true;
    return false;
}

std::string format_header(const Trace& trace) { return fmt::format("{} {}", kTraceMagic, trace.version); }
std::string format_line(const EngineConfig& engine) { return schema_line(engine_schema(), engine); }
std::string format_line(const RunConfig& run) { return schema_line(run_schema(), run); }
std::string format_line(const ConnectorSpec& connector) { return schema_line(connector_schema(), connector); }
std::string format_line(const MultiConnectorSpec& multi) { return schema_line(multi_schema(), multi); }
std::string format_line(const WorkerConfig& workers) { return schema_line(workers_schema(), workers); }
std::string format_line(const StoreEntry& entry) { return schema_line(store_schema(), entry); }
std::string format_line(const Segment& segment) { return schema_line(segment_schema(), segment); }
std::string format_line(const Expectation& expectation) { return schema_line(expect_schema(), expectation); }

std::string format_line(const Event& event) {
    struct Body {
        std::string operator()(const ArriveEvent& e) const { return schema_line(arrive_schema(), e); }
        std::string operator()(const AbortEvent& e) const { return schema_line(abort_schema(), e); }
        std::string operator()(const FaultEvent& e) const { return schema_line(fault_schema(), e); }
        std::string operator()(const ReportEvent& e) const { return schema_line(report_schema(), e); }
        std::string operator()(const StopEvent& e) const { return schema_line(stop_schema(), e); }
        std::string operator()(const ResetPrefixCacheEvent& e) const {
            return schema_line(reset_prefix_cache_schema(), e);
        }
    };
    std::string out = '@' + std::to_string(event.step) + ' ';
    out += std::visit(Body{}, event.body);
    return out;
}

std::string format_line(const StepCheck& check) { return fmt::format("@{} {}", check.step, format_check(check.body)); }

namespace {

constexpr std::size_t kNumberBound = 12;  // an int32 and its separator

std::size_t names_size(const std::vector<std::string>& names) {
    std::size_t size = 0;
    for (const std::string& name : names) size += name.size() + 1;
    return size;
}

}  // namespace

std::size_t printed_size_bound(const StoreEntry& entry) { return kPrintedKeysBound + names_size(entry.prefix); }

std::size_t printed_size_bound(const Segment& segment) {
    return kPrintedKeysBound + segment.name.size() + (segment.generated ? 0 : kNumberBound * segment.tokens.size());
}

std::size_t printed_size_bound(const Event& event) {
    struct Names {
        std::size_t operator()(const ArriveEvent& e) const { return e.request_id.size() + names_size(e.prompt); }
        std::size_t operator()(const AbortEvent& e) const { return e.request_id.size(); }
        std::size_t operator()(const FaultEvent& e) const { return e.request_id.size(); }
        std::size_t operator()(const ReportEvent& e) const {
            return e.request_id.size() + kNumberBound * e.index.size();
        }
        std::size_t operator()(const StopEvent& e) const { return e.request_id.size(); }
        std::size_t operator()(const ResetPrefixCacheEvent&) const { return 0; }
    };
    return kPrintedKeysBound + std::visit(Names{}, event.body);
}

std::string print_trace(const Trace& trace) {
    std::string out = format_header(trace) + '\n';
    out += format_line(trace.engine) + '\n';
    out += format_line(trace.run) + '\n';
    if (trace.multi) out += format_line(*trace.multi) + '\n';
    for (const auto& c : trace.connectors) out += format_line(c) + '\n';
    if (prints_workers(trace)) out += format_line(trace.workers) + '\n';
    for (const auto& s : trace.segments) out += format_line(s) + '\n';
    for (const auto& s : trace.store) out += format_line(s) + '\n';
    for (const auto& e : trace.expectations) out += format_line(e) + '\n';
    // Events and checks, merged by step; at one step the events come first.
    std::size_t c = 0;
    for (const auto& e : trace.events) {
        for (; c < trace.checks.size() && trace.checks[c].step < e.step; ++c) out += format_line(trace.checks[c]) + '\n';
        out += format_line(e) + '\n';
    }
    for (; c < trace.checks.size(); ++c) out += format_line(trace.checks[c]) + '\n';
    return out;
}

}  // namespace kvsim
