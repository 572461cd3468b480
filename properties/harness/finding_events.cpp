#include "properties/harness/finding_events.h"

namespace kvsim {
namespace {

// The fields every finding event carries where they apply.
void add_common_fields(EventBuilder& event, const Finding& f) {
    if (!f.request.empty()) event.request(f.request);
    if (!f.connector.empty()) event.text("connector", f.connector);
    if (f.job) event.integer("job", *f.job);
    if (f.rank) event.integer("rank", *f.rank);
    if (f.tokens) event.integer("token_start", f.tokens->start).integer("token_end", f.tokens->end);
}

void log_violation(EventLog& log, const Finding& f) {
    std::string format = "{invariant}";
    if (!f.request.empty()) format += " request={request}";
    if (!f.blocks.empty()) format += " blocks={blocks}";
    EventBuilder event = log.event(EventCategory::violation, format + ": {detail}");
    event.text("invariant", f.id).blocks("blocks", f.blocks).text("detail", f.detail);
    add_common_fields(event, f);
}

void log_crash(EventLog& log, const Finding& f) {
    const bool has_function = !f.upstream->function.empty();
    EventBuilder event =
        log.event(EventCategory::crash, has_function ? "{file} {function}: AssertionError: {assertion}"
                                                     : "{file}: AssertionError: {assertion}");
    event.text("id", f.id).text("file", f.upstream->file).text("function", f.upstream->function);
    event.text("assertion", f.detail);
    add_common_fields(event, f);
}

}  // namespace

void log_finding(EventLog& log, const Finding& f) {
    switch (f.kind) {
        case FindingKind::violation: log_violation(log, f); return;
        case FindingKind::crash: log_crash(log, f); return;
        case FindingKind::internal: log.event(EventCategory::internal, "{message}").text("message", f.detail); return;
        case FindingKind::liveness:
            log.event(EventCategory::liveness, "max_steps={max_steps} unfinished={unfinished} held={held}")
                .text("invariant", f.id)
                .integer("max_steps", f.fact("max_steps").value_or(0))
                .integer("unfinished", f.fact("unfinished").value_or(0))
                .integer("held", f.fact("held").value_or(0));
            return;
        case FindingKind::nondeterminism: return;  // judged after the run: not in its log
        case FindingKind::mismatch: return;        // checks never change the run, nor its log
        case FindingKind::rejected: return;        // no run: no log
    }
}

}  // namespace kvsim
