#pragma once
// The model's own assertions: a failed one is a kvsim bug, not upstream behaviour. It throws
// std::logic_error, which the run harness reports as an internal error.
#include <fmt/format.h>

#include <stdexcept>
#include <string_view>
#include <utility>

namespace kvsim {

// One per component, e.g. `constexpr ModelCheck require{.component = "BlockPool"};` then
// `require(ok, "block {} is not free", id)`: the message is "BlockPool: block 7 is not free",
// and its arguments are formatted only on failure.
struct ModelCheck {
    std::string_view component;

    // The check is inlined where it stands; the message is built out of line, on failure only.
    template <class... Args>
    [[gnu::always_inline]] void operator()(bool ok, fmt::format_string<Args...> what, Args&&... args) const {
        if (!ok) [[unlikely]]
            fail<Args...>(what, std::forward<Args>(args)...);
    }

    template <class... Args>
    [[noreturn, gnu::cold, gnu::noinline]] void fail(fmt::format_string<Args...> what, Args&&... args) const {
        throw std::logic_error(fmt::format("{}: {}", component, fmt::format(what, std::forward<Args>(args)...)));
    }
};

}  // namespace kvsim
