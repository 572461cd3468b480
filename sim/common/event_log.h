#pragma once
// The per-step event log: the observable output of a run. Byte-identical for the
// same trace and seed on every build; its digest backs the determinism check.
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kvsim {

class EventLog {
public:
    void set_step(int step) { step_ = step; }
    int step() const { return step_; }

    void emit(std::string_view category, std::string_view text);

    template <class... Args>
    void emitf(std::string_view category, fmt::format_string<Args...> format, Args&&... args) {
        emit(category, fmt::format(format, std::forward<Args>(args)...));
    }

    const std::string& text() const { return text_; }
    std::uint64_t digest() const { return digest_; }
    std::uint64_t lines() const { return lines_; }

private:
    std::string text_;
    std::uint64_t digest_ = 0xcbf29ce484222325ULL;
    std::uint64_t lines_ = 0;
    int step_ = 0;
};

// "[1,2,3]" — the one way block lists appear in the log.
std::string format_blocks(const auto& ids) {
    std::string out = "[";
    bool first = true;
    for (auto id : ids) {
        if (!first) out += ',';
        out += fmt::format("{}", id);
        first = false;
    }
    out += ']';
    return out;
}

}  // namespace kvsim
