#pragma once
// A run step by step, as typed values, for the views of a run (`kvsim run --html`, `--perfetto`,
// `kvsim explain`): each request's lane (status, scheduled tokens, block table), each block's ref
// count, cached state and store pins, MultiConnector's chosen child, and the store save jobs,
// loads, P2P pulls and sends with the steps their ranks reported. Steps hold deltas (only what
// changed), so a 10,000-step run over 1,000 requests stays small. Recorded only when
// RunOptions::record_timeline asks for it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/enum_names.h"
#include "sim/common/event_log.h"
#include "sim/core/request.h"

namespace kvsim {

class Engine;

// A request's lane: upstream's status, with the waiting queue split (SKIPPED: parked in the
// skipped-waiting queue) and the finished statuses folded (the RequestStatus name stays in
// RequestChange::status_name); FREED once the request object is gone.
enum class LaneStatus : std::uint8_t { waiting, skipped, waiting_for_remote_kvs, running, preempted, finished, freed };
inline constexpr EnumNames<LaneStatus, 7> kLaneStatusNames = {{
    {LaneStatus::waiting, "waiting"},
    {LaneStatus::skipped, "skipped"},
    {LaneStatus::waiting_for_remote_kvs, "waiting_for_remote_kvs"},
    {LaneStatus::running, "running"},
    {LaneStatus::preempted, "preempted"},
    {LaneStatus::finished, "finished"},
    {LaneStatus::freed, "freed"},
}};
std::string_view to_string(LaneStatus status);

// A request whose lane changed at this step: its whole new state.
struct RequestChange {
    int lane = 0;  // index into Timeline::lanes
    LaneStatus status = LaneStatus::waiting;
    std::string status_name;  // upstream's RequestStatus name ("FREED" once deleted)
    int num_computed_tokens = 0;
    std::vector<BlockId> blocks;  // the core's block table
    bool operator==(const RequestChange&) const = default;
};

// A block whose state changed at this step.
struct BlockChange {
    BlockId id = 0;
    int ref_cnt = 0;
    bool cached = false;             // carries a block hash (prefix cache)
    int pins = 0;                    // store-job pins on it
    std::uint64_t generation = 0;    // bumped each time the block is handed out again (reused)
    bool operator==(const BlockChange&) const = default;
};

struct TimelineStep {
    int step = 0;
    std::vector<RequestChange> requests;
    std::vector<std::pair<int, int>> scheduled;  // (lane, tokens) of each scheduled request
    std::vector<BlockChange> blocks;
    std::vector<std::pair<int, std::string>> chosen_child;  // (lane, child connector) newly chosen
    std::size_t first_event = 0;  // this step's range of RunResult::events
    std::size_t end_event = 0;
};

struct RankReport {
    int rank = 0;
    int step = 0;
    std::string outcome;  // "ok", "failed"...
};

// One store save job: emitted by the scheduler's metadata, copied by each rank.
struct StoreJob {
    std::int64_t job = -1;  // -1 when the variant gives store jobs no id (delay_free)
    std::string request;
    int step = 0;
    int token_start = 0;
    int token_end = 0;
    IdList blocks;
    std::vector<RankReport> reports;
    std::optional<int> put_step;  // every rank succeeded: the blocks went into the store
};

// A load (store or P2P pull) or a P2P send.
struct Transfer {
    std::string connector;  // "store", "p2p"
    std::string kind;       // "load", "pull", "send"
    std::string request;
    int step = 0;
    IdList blocks;
    std::optional<int> done_step;
    std::string outcome;
};

struct Timeline {
    std::vector<std::string> lanes;  // request ids, in order of arrival
    std::uint32_t num_blocks = 0;
    int num_ranks = 0;
    std::vector<TimelineStep> steps;
    std::vector<StoreJob> jobs;
    std::vector<Transfer> transfers;

    int lane_of(std::string_view request) const;  // -1 when unknown
};

// Records the model's state after each step, as deltas against the previous record.
class TimelineRecorder {
public:
    explicit TimelineRecorder(const Engine& engine);
    // After step `step` ran (or died): the state now, and the events logged since the last record.
    void record(int step);
    // The timeline, with the jobs and transfers read from `events` (the whole run's log).
    Timeline finish(const std::vector<LogEvent>& events);

private:
    int lane(const std::string& request);
    void record_requests(TimelineStep& out);
    void record_blocks(TimelineStep& out);
    void record_chosen_children(TimelineStep& out);

    const Engine& engine_;
    Timeline timeline_;
    std::vector<std::optional<RequestChange>> last_request_;  // by lane; nullopt = not seen yet
    std::vector<BlockChange> last_block_;
    std::map<std::string, int> lane_index_;
    std::vector<bool> child_recorded_;
    std::size_t events_seen_ = 0;
};

}  // namespace kvsim
