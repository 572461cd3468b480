#pragma once
// The checks upstream makes on a configuration before or while it runs, one row each (the table in
// config_rules.cpp): config validation (vllm/config/), the KV cache check at engine start, connector
// and worker __init__, and per-step assertions that fire whatever the requests. A trace that a row
// rejects under the run's variant never runs: upstream refuses to start such an engine, or its worker
// dies on its first step, so no finding it could give is reachable upstream. Rows that depend on the
// upstream version apply to the variants whose flag says so (ConfigRule::applies); a variant patch
// lifts a row only where an upstream PR or a published downstream patch does.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sim/trace/trace.h"
#include "sim/variant/flag_reads.h"
#include "sim/variant/variant.h"

namespace kvsim {

// What in one trace breaks a rule.
struct RuleBreach {
    std::string field;   // the trace field, e.g. "connector.load_async"
    int line = 0;        // its line (0: a trace built in memory)
    std::string detail;  // one line: the values that break it
};

struct ConfigRule {
    std::string_view id;        // e.g. "store_load_async"
    std::string_view rejects;   // one line: the configurations it refuses, in trace terms
    std::string_view upstream;  // where upstream checks: `path @ full commit` and function, or a PR
    std::string_view message;   // upstream's own error text
    std::string_view variants;  // the variants it applies to, in words
    // Whether it applies under `variant` (reads the flags it depends on); nullptr: every variant.
    bool (*applies)(const Variant& variant) = nullptr;
    std::optional<RuleBreach> (*breach)(const Trace& trace) = nullptr;
};

struct ConfigRejection {
    const ConfigRule* rule = nullptr;
    RuleBreach breach;

    // "upstream rejects this configuration (rule ID): DETAIL; upstream: MESSAGE (UPSTREAM)"
    std::string message() const;
};

// Every rule, in table order.
std::span<const ConfigRule> config_rules();
// The first rule that applies to `variant` and that `trace` breaks. The flags a rule's applies() reads
// are noted in `reads` when given (a run's FlagReads: another variant may be judged otherwise).
std::optional<ConfigRejection> upstream_rejects(const Trace& trace, const Variant& variant, FlagReads* reads = nullptr);
// The rules as `kvsim format` lists them.
std::string config_rules_help();

}  // namespace kvsim
