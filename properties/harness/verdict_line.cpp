#include "properties/harness/verdict_line.h"

#include <fmt/format.h>

namespace kvsim {

std::string repro_command(std::string_view trace_path, std::string_view variant) {
    return fmt::format("kvsim run {} --variant {}", trace_path, variant);
}

std::string verdict_line(const RunResult& result, std::string_view trace_path, std::string_view variant,
                         const ExpectationCheck& expectation) {
    const std::string verdict = result.internal_error ? "internal-error" : std::string(to_string(result.verdict));
    std::string line = fmt::format("{} {} variant={} steps={} digest={:016x}", verdict, trace_path, variant,
                                   result.steps, result.digest);
    if (!result.signature.empty()) line += fmt::format(" signature={}", result.signature);
    line += fmt::format(" expect={}", to_string(expectation));
    if (!result.message.empty()) line += fmt::format(" -- {}", result.message);
    line += fmt::format(" | repro: {}", repro_command(trace_path, variant));
    return line;
}

std::string rejection_line(const RunResult& result, std::string_view trace_path) {
    const Finding& f = result.findings.front();
    return fmt::format("{}:{}: {}: {}", trace_path, f.fact("line").value_or(0), f.fact_text("field"), f.message());
}

Json run_json(const Trace& trace, const RunResult& result, std::string_view trace_path, std::string_view variant,
              const ExpectationCheck& expectation) {
    Json connectors = Json::array();
    for (const ConnectorSpec& c : trace.connectors) connectors.push_back({{"kind", c.kind}, {"role", to_string(c.role)}});
    Json out = {{"trace", trace_path}, {"connectors", connectors}, {"variant", variant}};
    out["multi"] = trace.multi ? Json{{"role", to_string(trace.multi->role)}} : Json(nullptr);
    out.update(run_result_json(result));
    Json expected = nullptr;
    if (expectation.expected)
        expected = {{"verdict", to_string(expectation.expected->verdict)},
                    {"signature", expectation.expected->signature.empty() ? Json(nullptr)
                                                                          : Json(expectation.expected->signature)}};
    out["expect"] = {{"status", to_string(expectation.status)}, {"expected", expected}};
    out["repro"] = repro_command(trace_path, variant);
    return out;
}

}  // namespace kvsim
