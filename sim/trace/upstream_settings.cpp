// Settings computed against upstream's defaults (upstream_settings.h), from the trace schema's key rows.
#include "sim/trace/upstream_settings.h"

#include <fmt/format.h>

#include <array>

namespace kvsim {
namespace {

constexpr std::string_view kStoreDeploymentsDoc =
    "docs/features/mooncake_store_connector_usage.md @ 01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103";
constexpr std::string_view kP2pDeploymentsDoc =
    "docs/features/mooncake_connector_usage.md @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1";

// A connector stack as its config writes it: "store(kv_both)", "multi(kv_producer)[p2p(kv_producer), store(kv_both)]".
std::string stack_text(const Trace& t) {
    if (t.connectors.empty()) return "none";
    std::string children;
    for (const ConnectorSpec& c : t.connectors)
        children += fmt::format("{}{}({})", children.empty() ? "" : ", ", c.kind, to_string(c.role));
    if (!t.multi) return children;
    return fmt::format("multi({})[{}]", to_string(t.multi->role), children);
}

// Upstream's documented Mooncake deployments: the store on a single node, the prefiller and decoder of a
// store-backed prefill/decode pair (MooncakeConnector first), and the P2P pair's prefiller and decoder.
constexpr std::array<std::string_view, 5> kDocumented = {
    "store(kv_both)",
    "multi(kv_producer)[p2p(kv_producer), store(kv_both)]",
    "multi(kv_consumer)[p2p(kv_consumer), store(kv_consumer)]",
    "p2p(kv_producer)",
    "p2p(kv_consumer)",
};

std::string documented_list() {
    std::string out;
    for (std::string_view d : kDocumented) out += fmt::format("{}{}", out.empty() ? "" : " or ", d);
    return out;
}

template <class T>
void compare_rows(const LineSchema<T>& schema, const T& object, const Variant& variant, std::string_view prefix,
                  std::vector<SettingDifference>& out) {
    const std::string kind = line_kind(schema, object);
    for (const Row<T>& row : schema.rows) {
        const KeySpec& spec = row.spec;
        if (spec.group == SettingGroup::none || !key_applies(spec, kind)) continue;
        const bool stated = row.present == nullptr || row.present(object);
        std::string upstream(spec.upstream_for != nullptr ? spec.upstream_for(variant) : spec.upstream);
        if (!stated) continue;  // unstated: the variant's default, which is upstream's for its release
        std::string value = format_value(spec, row.get(object));
        const bool sized = spec.group == SettingGroup::sizing || spec.group == SettingGroup::environment;
        if (!sized && value == upstream) continue;
        out.push_back(SettingDifference{.group = spec.group,
                                        .key = fmt::format("{}.{}", prefix, spec.name),
                                        .value = std::move(value),
                                        .upstream = std::move(upstream),
                                        .source = std::string(spec.upstream_source)});
    }
}

void compare_stack(const Trace& t, std::vector<SettingDifference>& out) {
    const std::string stack = stack_text(t);
    for (std::string_view d : kDocumented)
        if (stack == d) return;
    const bool double_of_a_test =
        !t.connectors.empty() && (t.connectors.front().kind == kConnectorMock || t.connectors.front().kind == kConnectorStandIn);
    out.push_back(SettingDifference{.group = double_of_a_test ? SettingGroup::test_double : SettingGroup::setting,
                                    .key = "stack",
                                    .value = stack,
                                    .upstream = documented_list(),
                                    .source = fmt::format("{}; {}", kStoreDeploymentsDoc, kP2pDeploymentsDoc)});
}

}  // namespace

std::string_view to_string(SettingGroup group) {
    switch (group) {
        case SettingGroup::none: return "none";
        case SettingGroup::setting: return "setting";
        case SettingGroup::sizing: return "sizing";
        case SettingGroup::environment: return "environment";
        case SettingGroup::test_double: return "test_double";
    }
    return "none";
}

std::vector<SettingDifference> settings_diff(const Trace& t, const Variant& variant) {
    std::vector<SettingDifference> all;
    compare_stack(t, all);
    compare_rows(engine_schema(), t.engine, variant, "engine", all);
    for (const ConnectorSpec& c : t.connectors)
        compare_rows(connector_schema(), c, variant, fmt::format("connector.{}", c.kind), all);
    compare_rows(workers_schema(), t.workers, variant, "workers", all);
    std::vector<SettingDifference> out;
    for (SettingGroup g : {SettingGroup::setting, SettingGroup::test_double, SettingGroup::sizing, SettingGroup::environment})
        for (const SettingDifference& d : all)
            if (d.group == g) out.push_back(d);
    return out;
}

std::vector<SettingDifference> of_group(const std::vector<SettingDifference>& diff, SettingGroup group) {
    std::vector<SettingDifference> out;
    for (const SettingDifference& d : diff)
        if (d.group == group) out.push_back(d);
    return out;
}

std::string describe(const SettingDifference& d) {
    if (d.group == SettingGroup::environment) return fmt::format("{}={}", d.key, d.value);
    return fmt::format("{}={} (upstream {})", d.key, d.value, d.upstream.empty() ? "sizes it per deployment" : d.upstream);
}

}  // namespace kvsim
