#pragma once
// The text of properties/findings/known_findings.txt, compiled in (CMakeLists.txt generates the
// definition from the file), so that every binary, the fuzz target included, carries the registry.
#include <string_view>

namespace kvsim {

std::string_view registry_text();
std::string_view registry_source_path();  // "properties/findings/known_findings.txt"

}  // namespace kvsim
