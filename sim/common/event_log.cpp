#include "sim/common/event_log.h"

#include "sim/common/stable_hash.h"

namespace kvsim {

void EventLog::emit(std::string_view category, std::string_view text) {
    std::string line = fmt::format("{:>5} {:<9} {}\n", step_, category, text);
    digest_ = fnv1a(line, digest_);
    text_ += line;
    ++lines_;
}

}  // namespace kvsim
