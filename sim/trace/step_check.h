#pragma once
// Step checks: `@STEP check KIND [ID] KEY=VALUE... [at=schedule|end] [variants=V,V...]`, a trace
// line that states what the model's state must be at a step (an upstream test's asserts). The
// check keys are one table (kCheckKeys in step_check.cpp: kind, name, value type, whether it
// names an ID, help), generated from the one list of keys, check_keys.def; the parser, printer,
// validation and `kvsim format` read it, and the evaluator (properties/step_checks) binds one
// reader to each row of the same list.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/enum_names.h"

namespace kvsim {

inline constexpr std::string_view kCheckKeyword = "check";  // "@STEP check ..."

// store, p2p, multi: the scheduler side of MooncakeStoreConnector, MooncakeConnector, MultiConnector.
enum class CheckKind { request, queue, batch, pool, block, store, p2p, multi };
inline constexpr EnumNames<CheckKind, 8> kCheckKindNames = {{
    {CheckKind::request, "request"},
    {CheckKind::queue, "queue"},
    {CheckKind::batch, "batch"},
    {CheckKind::pool, "pool"},
    {CheckKind::block, "block"},
    {CheckKind::store, "store"},
    {CheckKind::p2p, "p2p"},
    {CheckKind::multi, "multi"},
}};

// The values a `status=` check may state: upstream's RequestStatus names (sim/core/request.h's
// kRequestStatusNames, which request.cpp asserts are these, in order).
inline constexpr std::string_view kCheckStatusNames[] = {
    "WAITING",          "WAITING_FOR_REMOTE_KVS", "RUNNING",          "PREEMPTED",     "FINISHED_STOPPED",
    "FINISHED_LENGTH_CAPPED", "FINISHED_ABORTED", "FINISHED_IGNORED", "FINISHED_ERROR",
};

// When a check reads the state: after schedule() + build_connector_meta, or at the step's end.
enum class CheckPhase { schedule, end };
inline constexpr EnumNames<CheckPhase, 2> kCheckPhaseNames = {{
    {CheckPhase::schedule, "schedule"},
    {CheckPhase::end, "end"},
}};

// What a check key reads: one value per row of check_keys.def, in its order (the key table indexes
// by it; properties/step_checks binds the reader read_KIND_NAME to each).
enum class CheckKey {
#define KVSIM_CHECK_KEY(kind, name, type, needs_id, help) kind##_##name,
#include "sim/trace/check_keys.def"
#undef KVSIM_CHECK_KEY
};
inline constexpr std::size_t kCheckKeyCount = 0
#define KVSIM_CHECK_KEY(kind, name, type, needs_id, help) +1
#include "sim/trace/check_keys.def"
#undef KVSIM_CHECK_KEY
    ;

// How a check value is written (and compared: as its canonical text).
enum class CheckValueType {
    integer,  // decimal digits
    boolean,  // on | off
    status,   // a RequestStatus as upstream prints it (RUNNING), or `absent`
    names,    // request ids a+b+c in order, `-` for none
    blocks,   // block ids 1,2,3 in order, `-` for none
    index,    // a child index 0, 1, ... or `-` for none
};

struct CheckKeySpec {
    CheckKind kind;
    std::string_view name;
    CheckKey key;
    CheckValueType type;
    bool needs_id;  // the key reads one request (or block) named by the line's ID
    std::string_view help;
};

std::span<const CheckKeySpec> check_keys();
const CheckKeySpec& check_key_spec(CheckKey key);

struct CheckAssert {
    CheckKey key = CheckKey::request_status;
    std::string expected;  // canonical text

    bool operator==(const CheckAssert&) const = default;
};

struct CheckEvent {
    CheckKind kind = CheckKind::request;
    std::string id;  // request id (request, batch tokens) or block id (block); empty for the others
    std::vector<CheckAssert> asserts;  // in line order
    CheckPhase at = CheckPhase::end;
    std::vector<std::string> variants;  // the variants the check applies to; empty = every variant

    bool operator==(const CheckEvent&) const = default;
};

// One check line: evaluated at step `step`. Not an Event: the engine never sees it.
struct StepCheck {
    int step = 0;
    CheckEvent body;
    int line = 0;  // source line, 0 when built in memory; not part of equality

    bool operator==(const StepCheck& o) const { return step == o.step && body == o.body; }
};

// What is wrong with a check line: the field (`check.KEY`, `check.id`...) and a one-line message.
struct CheckError {
    std::string field;
    std::string message;
};

std::string_view to_string(CheckKind kind);
std::string_view to_string(CheckPhase phase);
std::string_view to_string(CheckValueType type);

// The arguments after "check" -> a check, or the first error.
std::optional<CheckEvent> parse_check(std::span<const std::string_view> args, CheckError* error);
// Every rule parse_check applies, on a check built in memory; nullopt when fine.
std::optional<CheckError> validate_check(const CheckEvent& check);
// The block ids a check names (a block check's ID, the block lists it states) below `num_blocks`.
std::optional<CheckError> check_block_ids(const CheckEvent& check, int num_blocks);
// "check KIND [ID] key=value... [at=schedule] [variants=...]" (at=end is the default and omitted).
std::string format_check(const CheckEvent& check);
// The check section of `kvsim format`, from the key table.
std::string check_format_help();

}  // namespace kvsim
