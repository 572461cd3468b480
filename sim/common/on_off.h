#pragma once
// How the trace format, the CLI and the reports write a boolean: `on` or `off`.
#include <string_view>

namespace kvsim {

constexpr std::string_view on_off(bool value) { return value ? "on" : "off"; }

}  // namespace kvsim
