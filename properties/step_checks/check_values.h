#pragma once
// The canonical text of a check value (sim/trace/step_check.h, CheckValueType), shared by the readers.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "sim/common/on_off.h"
#include "sim/core/request.h"

namespace kvsim {

inline constexpr std::string_view kAbsent = "absent";  // the item a key reads does not exist

// Request ids a+b+c in range order; "-" for none.
template <class Range>
std::string check_names(const Range& ids) {
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : "+") + id;
    return out.empty() ? "-" : out;
}

// Block ids 1,2,3 in order; "-" for none.
inline std::string check_blocks(const std::vector<BlockId>& ids) {
    return ids.empty() ? "-" : fmt::format("{}", fmt::join(ids, ","));
}

inline std::string check_on_off(bool value) { return std::string(on_off(value)); }

}  // namespace kvsim
