#pragma once
// A trace's settings against upstream's defaults (sim/trace/upstream_settings.h) as people and tools
// read them: JSON for `kvsim run --json`, triage and the run page, and a block of text for
// `kvsim explain`.
#include <string>
#include <string_view>
#include <vector>

#include "properties/harness/run_json.h"
#include "sim/trace/upstream_settings.h"

namespace kvsim {

// [{"group", "key", "value", "upstream" (null where the deployment sizes it), "source"}...], in
// settings_diff's order.
Json settings_json(const std::vector<SettingDifference>& diff);

// "settings upstream does not default to under V: none (upstream's defaults)" or one line per
// setting with its citation, then one line each for the test doubles, the sizing and the environment.
std::string settings_text(const std::vector<SettingDifference>& diff, std::string_view variant);

}  // namespace kvsim
