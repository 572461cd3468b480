#pragma once
// vllm/v1/request.py Request / RequestStatus @ dba83d52c06471eabafba4310718ac7a100cbfa4
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/enum_names.h"
#include "sim/common/stable_hash.h"

namespace kvsim {

using BlockId = std::uint32_t;
using BlockHash = std::uint64_t;
using TokenId = std::int32_t;
// The EOS token the modelled model samples for a `stop` event (upstream's tests: EOS_TOKEN_ID,
// tests/v1/kv_connector/unit/utils.py @ 0050936b22adda2ef0197fa3bb2551fe6c5437dc); generated tokens stay below it.
inline constexpr TokenId kEosTokenId = 50256;

// vllm/v1/core/kv_cache_utils.py NONE_HASH / hash_block_tokens @ bbf906a88ba1a39104884c88c9811a4f968e4659:
// the parent of the first block, and one chain link (a stable stand-in for sha256, no extra keys).
inline constexpr BlockHash kNoneHash = fnv1a("kvsim/NONE_HASH");
BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> block_tokens);

// Ordered as upstream; "finished" is every status after PREEMPTED.
enum class RequestStatus {
    waiting,
    waiting_for_remote_kvs,
    running,
    preempted,
    finished_stopped,
    finished_length_capped,
    finished_aborted,
    finished_ignored,
    finished_error,
};

// vllm/v1/request.py RequestStatus.__str__ @ dba83d52c06471eabafba4310718ac7a100cbfa4
inline constexpr EnumNames<RequestStatus, 9> kRequestStatusNames = {{
    {RequestStatus::waiting, "WAITING"},
    {RequestStatus::waiting_for_remote_kvs, "WAITING_FOR_REMOTE_KVS"},
    {RequestStatus::running, "RUNNING"},
    {RequestStatus::preempted, "PREEMPTED"},
    {RequestStatus::finished_stopped, "FINISHED_STOPPED"},
    {RequestStatus::finished_length_capped, "FINISHED_LENGTH_CAPPED"},
    {RequestStatus::finished_aborted, "FINISHED_ABORTED"},
    {RequestStatus::finished_ignored, "FINISHED_IGNORED"},
    {RequestStatus::finished_error, "FINISHED_ERROR"},
}};

std::string_view to_string(RequestStatus s);
inline bool is_finished(RequestStatus s) { return s > RequestStatus::preempted; }

// kv_transfer_params, as far as the modelled connectors read them.
struct KvTransferParams {
    bool do_remote_prefill = false;
    bool do_remote_decode = false;
    // A key only the mock connector reads: this request's matched tokens (trace `arrive external=N`).
    std::optional<int> external_tokens;
};

class Request {
public:
    Request(std::string id, std::vector<TokenId> prompt, int max_tokens, int block_size, int arrival_step,
            KvTransferParams params);

    const std::string& id() const { return id_; }
    int num_prompt_tokens() const { return static_cast<int>(prompt_.size()); }
    int num_output_tokens() const { return static_cast<int>(output_.size()); }
    int num_tokens() const { return num_prompt_tokens() + num_output_tokens(); }
    int max_tokens() const { return max_tokens_; }
    int arrival_step() const { return arrival_step_; }
    const std::vector<TokenId>& prompt() const { return prompt_; }
    const std::vector<TokenId>& output() const { return output_; }
    std::vector<TokenId> all_token_ids() const;
    TokenId token_at(int position) const;

    // Hashes of the full blocks of all_token_ids(), chained (vllm/v1/core/kv_cache_utils.py hash_block_tokens).
    const std::vector<BlockHash>& block_hashes() const { return block_hashes_; }

    // vllm/v1/request.py Request.append_output_token_ids @ dba83d52c06471eabafba4310718ac7a100cbfa4: appends and extends block hashes.
    void append_output_token(TokenId token);

    RequestStatus status = RequestStatus::waiting;
    int num_computed_tokens = 0;
    int num_preemptions = 0;
    int num_external_computed_tokens = 0;
    int num_output_placeholders = 0;  // AsyncScheduler: tokens scheduled whose output is not processed yet
    int async_tokens_to_discard = 0;  // outputs still in flight when a failed load rewound the request (#45430)
    // vllm/v1/request.py Request.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06 (#48245):
    int num_in_flight_tokens = 0;     // scheduled, their step's output not processed yet
    int num_stale_output_tokens = 0;  // of those, scheduled before the request was preempted
    bool drop_stale_output = false;   // the stale output is dropped, not delivered
    // Scheduler.schedule, waiting phase @ 003df2961dd8830c317a61f9745ccd557da9fa06 (#48245): stale output to
    // deliver is still in flight; resuming now could sample a position that output fills.
    bool awaits_stale_output() const { return num_stale_output_tokens > 0 && !drop_stale_output; }
    bool is_prefill_chunk = false;    // Scheduler._update_after_schedule: this step samples no token
    std::int64_t last_sched_seq = 0;  // #45357: the schedule() call that last scheduled it
    std::optional<int> num_cached_tokens;
    KvTransferParams kv_transfer_params;
    std::optional<RequestStatus> stop_reason_status;

private:
    void extend_block_hashes();

    std::string id_;
    std::vector<TokenId> prompt_;
    std::vector<TokenId> output_;
    int max_tokens_;
    int block_size_;
    int arrival_step_;
    std::vector<BlockHash> block_hashes_;
};

}  // namespace kvsim
