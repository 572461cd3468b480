#pragma once
// How far a trace is from what upstream runs by default for the variant's release: every setting that
// differs from upstream's default (engine keys, the connector stack and roles, connector extra config),
// computed from the key rows of the trace schema (KeySpec::upstream, upstream_source, upstream_for),
// with the deployment's sizing and the environment's timing kept apart. A finding whose witness differs
// in no setting is reachable with all of upstream's defaults.
#include <string>
#include <vector>

#include "sim/trace/trace.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct SettingDifference {
    SettingGroup group = SettingGroup::setting;
    std::string key;       // "engine.prefix_caching", "connector.store.load_async", "stack"
    std::string value;     // the trace's, as resolved for the variant
    std::string upstream;  // upstream's default; empty where upstream has none (the deployment sizes it)
    std::string source;    // where upstream sets it: `path @ full commit`, or a PR

    bool operator==(const SettingDifference&) const = default;
};

// Settings (group setting and test_double) that differ from upstream's defaults, then the sizing keys and
// the environment, each in schema order; the connector stack first, compared with upstream's documented
// deployments.
std::vector<SettingDifference> settings_diff(const Trace& trace, const Variant& variant);

// Only the differences of `group`.
std::vector<SettingDifference> of_group(const std::vector<SettingDifference>& diff, SettingGroup group);

// "engine.prefix_caching=off (upstream on)", "engine.num_blocks=10 (upstream: the deployment's)".
std::string describe(const SettingDifference& d);

std::string_view to_string(SettingGroup group);

}  // namespace kvsim
