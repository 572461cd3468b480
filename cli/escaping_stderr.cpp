#include "cli/escaping_stderr.h"

#include <string>

#include "sim/common/escape.h"

namespace kvsim::cli {

std::streamsize EscapingStreambuf::xsputn(const char* s, std::streamsize n) {
    std::string out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::streamsize i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (is_printable_ascii(c) || c == '\n') out += static_cast<char>(c);
        else append_escaped_byte(out, c);
    }
    const auto size = static_cast<std::streamsize>(out.size());
    return sink_->sputn(out.data(), size) == size ? n : 0;
}

EscapingStreambuf::int_type EscapingStreambuf::overflow(int_type c) {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char byte = traits_type::to_char_type(c);
    return xsputn(&byte, 1) == 1 ? c : traits_type::eof();
}

}  // namespace kvsim::cli
