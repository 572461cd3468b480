#include "sim/core/request.h"

#include "sim/common/model_check.h"
#include "sim/trace/step_check.h"

#include <fmt/format.h>

#include <span>
#include <stdexcept>
#include <utility>

namespace kvsim {
namespace {

constexpr ModelCheck require{.component = "Request"};

// The trace's step checks accept exactly these status names (sim/trace/step_check.h).
constexpr bool same_status_names() {
    if (std::size(kCheckStatusNames) != kRequestStatusNames.size()) return false;
    for (std::size_t i = 0; i < kRequestStatusNames.size(); ++i)
        if (kRequestStatusNames[i].name != kCheckStatusNames[i]) return false;
    return true;
}
static_assert(same_status_names(), "kCheckStatusNames must list kRequestStatusNames' names in order");

constexpr std::uint64_t token_word(TokenId t) { return static_cast<std::uint32_t>(t); }

// Tokens [start, start + n) of prompt followed by output: a view into whichever holds them all, or,
// for a block that straddles the two, a copy in `straddling`.
std::span<const TokenId> block_tokens(const std::vector<TokenId>& prompt, const std::vector<TokenId>& output,
                                      std::size_t start, std::size_t n, std::vector<TokenId>& straddling) {
    if (start + n <= prompt.size()) return {prompt.data() + start, n};
    if (start >= prompt.size()) return {output.data() + (start - prompt.size()), n};
    straddling.assign(prompt.begin() + static_cast<std::ptrdiff_t>(start), prompt.end());
    straddling.insert(straddling.end(), output.begin(),
                      output.begin() + static_cast<std::ptrdiff_t>(start + n - prompt.size()));
    return straddling;
}

}  // namespace

std::string_view to_string(RequestStatus s) {
    if (const auto name = find_enum_name(kRequestStatusNames, s)) return *name;
    throw std::logic_error(fmt::format("to_string: RequestStatus value {} is not an enumerator", static_cast<int>(s)));
}

// vllm/v1/core/kv_cache_utils.py hash_block_tokens @ bbf906a88ba1a39104884c88c9811a4f968e4659
BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> block_tokens) {
    std::uint64_t content = kFnvOffset;
    for (TokenId t : block_tokens) content = hash_combine(content, token_word(t));
    return hash_combine(parent, hash_combine(content, block_tokens.size()));
}

// vllm/v1/request.py Request.__init__ @ dba83d52c06471eabafba4310718ac7a100cbfa4
Request::Request(std::string id, std::vector<TokenId> prompt, int max_tokens, int block_size, int arrival_step,
                 KvTransferParams params)
    : kv_transfer_params(params),
      id_(std::move(id)),
      prompt_(std::move(prompt)),
      max_tokens_(max_tokens),
      block_size_(block_size),
      arrival_step_(arrival_step) {
    require(!id_.empty(), "request id must not be empty");
    require(block_size_ > 0, "{}: block_size must be positive, got {}", id_, block_size_);
    // vllm/sampling_params.py SamplingParams._verify_args: max_tokens must be at least 1.
    require(max_tokens_ >= 1, "{}: max_tokens must be at least 1, got {}", id_, max_tokens_);
    require(arrival_step_ >= 0, "{}: arrival_step must not be negative, got {}", id_, arrival_step_);
    extend_block_hashes();
}

std::vector<TokenId> Request::all_token_ids() const {
    std::vector<TokenId> all;
    all.reserve(prompt_.size() + output_.size());
    all.insert(all.end(), prompt_.begin(), prompt_.end());
    all.insert(all.end(), output_.begin(), output_.end());
    return all;
}

TokenId Request::token_at(int position) const {
    require(position >= 0, "{}: token position {} is negative", id_, position);
    require(position < num_tokens(), "{}: token position {} is not below num_tokens {}", id_, position,
                                                 num_tokens());
    const auto p = static_cast<std::size_t>(position);
    return p < prompt_.size() ? prompt_[p] : output_[p - prompt_.size()];
}

// vllm/v1/request.py Request.append_output_token_ids @ dba83d52c06471eabafba4310718ac7a100cbfa4
void Request::append_output_token(TokenId token) {
    output_.push_back(token);
    extend_block_hashes();
}

// vllm/v1/core/kv_cache_utils.py get_request_block_hasher @ bbf906a88ba1a39104884c88c9811a4f968e4659:
// hashes every full block after the last hashed one; a partial tail block gets none.
void Request::extend_block_hashes() {
    const auto bs = static_cast<std::size_t>(block_size_);
    const std::size_t total = static_cast<std::size_t>(num_tokens());
    require(block_hashes_.size() * bs <= total, "{}: {} hashed blocks cover more than {} tokens", id_,
                                                            block_hashes_.size(), total);
    if (block_hashes_.size() * bs + bs > total) return;
    std::vector<TokenId> straddling;  // the tokens of the one block that starts in the prompt and ends in the output
    for (std::size_t start = block_hashes_.size() * bs; start + bs <= total; start += bs) {
        const BlockHash parent = block_hashes_.empty() ? kNoneHash : block_hashes_.back();
        block_hashes_.push_back(hash_block_tokens(parent, block_tokens(prompt_, output_, start, bs, straddling)));
    }
}

}  // namespace kvsim
