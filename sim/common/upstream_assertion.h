#pragma once
// A modelled upstream `assert` (or raise) that kills the engine. Ends a run with
// verdict `crash`; the message quotes upstream's text.
#include <stdexcept>
#include <string>

namespace kvsim {

class UpstreamAssertion : public std::runtime_error {
public:
    // id: a stable slug used in signatures (e.g. "missing_current_block_table");
    // site: "upstream/file.py Class.function"; request: the request it names, if any.
    UpstreamAssertion(std::string id, std::string site, const std::string& message, std::string request = {})
        : std::runtime_error(message), id_(std::move(id)), site_(std::move(site)), request_(std::move(request)) {}

    const std::string& id() const { return id_; }
    const std::string& site() const { return site_; }
    const std::string& request() const { return request_; }

private:
    std::string id_;
    std::string site_;
    std::string request_;
};

}  // namespace kvsim
