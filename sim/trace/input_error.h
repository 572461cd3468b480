#pragma once
// A malformed trace (README.md, Verdicts and exit codes: verdict "input error", exit 65). what() is one line:
// "FILE:LINE: FIELD: MESSAGE", e.g. "t.trace:3: engine.block_size: value 0 below minimum 1".
// LINE is 1-based; 0 means the error concerns the whole file (unreadable, too large).
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvsim {

class InputError : public std::runtime_error {
public:
    InputError(std::string_view file, int line, std::string_view field, std::string_view message)
        : std::runtime_error(compose(file, line, field, message)),
          file_(file),
          line_(line),
          field_(field),
          message_(message) {}

    const std::string& file() const { return file_; }
    int line() const { return line_; }
    const std::string& field() const { return field_; }
    const std::string& message() const { return message_; }

private:
    static std::string compose(std::string_view file, int line, std::string_view field, std::string_view message) {
        std::string out;
        out.reserve(file.size() + field.size() + message.size() + 16);
        out.append(file).append(":").append(std::to_string(line)).append(": ");
        out.append(field).append(": ").append(message);
        return out;
    }

    std::string file_;
    int line_;
    std::string field_;
    std::string message_;
};

}  // namespace kvsim
