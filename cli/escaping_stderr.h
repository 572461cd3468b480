#pragma once
// kvsim's standard error, escaped: every byte but printable ASCII and the newline that ends a
// message is written as \xHH (sim/common/escape.h). Messages echo options, paths and input that
// CLI11 and kvsim's own checks do not quote, and none of it may reach a terminal as an escape
// sequence.
#include <iostream>
#include <streambuf>

namespace kvsim::cli {

class EscapingStreambuf : public std::streambuf {
public:
    explicit EscapingStreambuf(std::streambuf* sink) : sink_(sink) {}

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override { return sink_->pubsync(); }

private:
    std::streambuf* sink_;
};

// Routes std::cerr through an EscapingStreambuf until the guard goes away.
class EscapedStandardError {
public:
    EscapedStandardError() : buf_(std::cerr.rdbuf()), previous_(std::cerr.rdbuf(&buf_)) {}
    ~EscapedStandardError() { std::cerr.rdbuf(previous_); }
    EscapedStandardError(const EscapedStandardError&) = delete;
    EscapedStandardError& operator=(const EscapedStandardError&) = delete;

private:
    EscapingStreambuf buf_;
    std::streambuf* previous_;
};

}  // namespace kvsim::cli
