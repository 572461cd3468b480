#pragma once
// The one escaping of untrusted bytes for what kvsim shows a person: every byte outside printable
// ASCII becomes \xHH. quote() (sim/trace/trace_schema.h) uses it for the text an error echoes, and
// the CLI's standard error passes every byte through it (cli/escaping_stderr.h), so no input can
// reach a terminal as an escape sequence.
#include <string>

namespace kvsim {

constexpr bool is_printable_ascii(unsigned char c) { return c >= 0x20 && c < 0x7f; }

inline void append_escaped_byte(std::string& out, unsigned char c) {
    constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
}

}  // namespace kvsim
