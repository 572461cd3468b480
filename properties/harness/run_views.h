#pragma once
// The views of one run, built from its typed results and timeline: the self-contained HTML page
// (`kvsim run --html`; template run_page.{html,css,js} in this folder, embedded at build time) and
// the Chrome trace-event JSON that Perfetto and chrome://tracing open (`kvsim run --perfetto`).
#include <string>
#include <string_view>

#include "properties/harness/causal_slice.h"
#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"

namespace kvsim {

struct RunViewInput {
    const Trace& trace;
    const RunResult& result;  // recorded with RunOptions::record_timeline
    std::string_view trace_path;
    std::string_view trace_text;  // the trace file as written (its line numbers are the events' lines)
    std::string_view variant;
    Json settings = Json::array();  // settings_json of the trace under the variant (settings_view.h)
    Json registry = nullptr;        // its classification (properties/findings/classification_view.h), if any
};

// The finding as the page shows it: what the result's first finding names, the upstream assertion
// or invariant quoted; null on pass.
Json finding_view_json(const RunResult& result);
// The timeline as the page reads it: per step the changed lanes, scheduled tokens, changed blocks
// and newly chosen MultiConnector children (arrays, to keep 10,000 steps small), jobs and transfers.
Json timeline_view_json(const Timeline& timeline);
// Everything the page embeds.
Json run_view_json(const RunViewInput& input, const CausalSlice& slice);

// One self-contained HTML page: inline CSS and JS, the data as JSON, no network.
std::string run_page_html(const RunViewInput& input);

// Chrome trace-event JSON: one thread per request (its statuses as slices, each scheduled step
// inside), one per store rank (each save job's copy), and one process per connector (its jobs,
// loads, pulls and sends as async slices, MultiConnector's choices as instants). 1 step = 1 ms.
Json perfetto_json(const RunViewInput& input);

}  // namespace kvsim
