#pragma once
// One name table per enum: printing, parsing and the lists of accepted values (the trace
// schema's choices, `kvsim variants`) all read it, so a name is spelled once.
//
//   inline constexpr EnumNames<Color, 2> kColorNames = {{{Color::red, "red"}, {Color::blue, "blue"}}};
//   std::string_view to_string(Color c) { return enum_name(kColorNames, c); }
//   std::optional<Color> parse_color(std::string_view s) { return parse_enum(kColorNames, s); }
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace kvsim {

template <class E>
struct EnumName {
    E value;
    std::string_view name;
};

template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

// The name of `value`, or nullopt when the table has no row for it.
template <class E, std::size_t N>
constexpr std::optional<std::string_view> find_enum_name(const EnumNames<E, N>& table, E value) {
    for (const EnumName<E>& row : table)
        if (row.value == value) return row.name;
    return std::nullopt;
}

// The name of `value`; "?" when the table has no row for it (a value cast from an integer).
template <class E, std::size_t N>
constexpr std::string_view enum_name(const EnumNames<E, N>& table, E value) {
    return find_enum_name(table, value).value_or("?");
}

// The value named `text` exactly, or nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> parse_enum(const EnumNames<E, N>& table, std::string_view text) {
    for (const EnumName<E>& row : table)
        if (row.name == text) return row.value;
    return std::nullopt;
}

// Every name, in table order.
template <class E, std::size_t N>
constexpr std::array<std::string_view, N> enum_names(const EnumNames<E, N>& table) {
    std::array<std::string_view, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = table[i].name;
    return out;
}

// Every value, in table order.
template <class E, std::size_t N>
constexpr std::array<E, N> enum_values(const EnumNames<E, N>& table) {
    std::array<E, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = table[i].value;
    return out;
}

}  // namespace kvsim
