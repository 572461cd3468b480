#include <fmt/format.h>

#include "properties/checkers/checker.h"
#include "sim/common/event_log.h"

namespace kvsim {

std::string describe(const Violation& v) {
    std::string text = v.invariant;
    if (!v.request.empty()) text += fmt::format(" request={}", v.request);
    if (!v.blocks.empty()) text += fmt::format(" blocks={}", format_blocks(v.blocks));
    return text + ": " + v.detail;
}

}  // namespace kvsim
