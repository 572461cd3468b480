// A trace's settings against upstream's defaults as JSON and text (settings_view.h).
#include "properties/harness/settings_view.h"

#include <fmt/format.h>

namespace kvsim {
namespace {

// "engine.num_blocks=10, engine.max_model_len=320" for one group; "" when it has none.
std::string joined(const std::vector<SettingDifference>& diff, SettingGroup group) {
    std::string out;
    for (const SettingDifference& d : of_group(diff, group))
        out += fmt::format("{}{}={}", out.empty() ? "" : ", ", d.key, d.value);
    return out;
}

}  // namespace

Json settings_json(const std::vector<SettingDifference>& diff) {
    Json out = Json::array();
    for (const SettingDifference& d : diff)
        out.push_back({{"group", to_string(d.group)},
                       {"key", d.key},
                       {"value", d.value},
                       {"upstream", d.upstream.empty() ? Json(nullptr) : Json(d.upstream)},
                       {"source", d.source}});
    return out;
}

std::string settings_text(const std::vector<SettingDifference>& diff, std::string_view variant) {
    const std::vector<SettingDifference> settings = of_group(diff, SettingGroup::setting);
    std::string out = fmt::format("settings that differ from upstream's defaults under {}:{}\n", variant,
                                  settings.empty() ? " none (upstream's defaults)" : "");
    for (const SettingDifference& d : settings) out += fmt::format("  {} -- {}\n", describe(d), d.source);
    for (const auto& [group, label] : {std::pair{SettingGroup::test_double, "test doubles"},
                                       std::pair{SettingGroup::sizing, "deployment sizing"},
                                       std::pair{SettingGroup::environment, "environment"}}) {
        const std::string line = joined(diff, group);
        if (!line.empty()) out += fmt::format("{}: {}\n", label, line);
    }
    return out;
}

}  // namespace kvsim
