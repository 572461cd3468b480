#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/request.h"

using namespace kvsim;

namespace {

std::vector<TokenId> iota_tokens(TokenId from, TokenId to) {
    std::vector<TokenId> v;
    for (TokenId t = from; t < to; ++t) v.push_back(t);
    return v;
}

Request make_request(const std::string& id, std::vector<TokenId> prompt, int block_size) {
    return Request(id, std::move(prompt), 16, block_size, 0, KvTransferParams{});
}

std::span<const TokenId> slice(const std::vector<TokenId>& v, std::size_t start, std::size_t n) {
    return std::span<const TokenId>(v).subspan(start, n);
}

}  // namespace

TEST_CASE("status names are upstream's", "[request]") {
    CHECK(to_string(RequestStatus::waiting) == "WAITING");
    CHECK(to_string(RequestStatus::waiting_for_remote_kvs) == "WAITING_FOR_REMOTE_KVS");
    CHECK(to_string(RequestStatus::running) == "RUNNING");
    CHECK(to_string(RequestStatus::preempted) == "PREEMPTED");
    CHECK(to_string(RequestStatus::finished_stopped) == "FINISHED_STOPPED");
    CHECK(to_string(RequestStatus::finished_length_capped) == "FINISHED_LENGTH_CAPPED");
    CHECK(to_string(RequestStatus::finished_aborted) == "FINISHED_ABORTED");
    CHECK(to_string(RequestStatus::finished_ignored) == "FINISHED_IGNORED");
    CHECK(to_string(RequestStatus::finished_error) == "FINISHED_ERROR");
}

TEST_CASE("finished means after PREEMPTED", "[request]") {
    CHECK_FALSE(is_finished(RequestStatus::waiting));
    CHECK_FALSE(is_finished(RequestStatus::waiting_for_remote_kvs));
    CHECK_FALSE(is_finished(RequestStatus::running));
    CHECK_FALSE(is_finished(RequestStatus::preempted));
    CHECK(is_finished(RequestStatus::finished_stopped));
    CHECK(is_finished(RequestStatus::finished_length_capped));
    CHECK(is_finished(RequestStatus::finished_aborted));
    CHECK(is_finished(RequestStatus::finished_ignored));
    CHECK(is_finished(RequestStatus::finished_error));
}

TEST_CASE("a new request starts WAITING with nothing computed", "[request]") {
    const Request r = make_request("a", iota_tokens(0, 5), 4);
    CHECK(r.status == RequestStatus::waiting);
    CHECK(r.num_computed_tokens == 0);
    CHECK(r.num_preemptions == 0);
    CHECK(r.num_external_computed_tokens == 0);
    CHECK_FALSE(r.num_cached_tokens.has_value());
    CHECK(r.num_prompt_tokens() == 5);
    CHECK(r.num_output_tokens() == 0);
    CHECK(r.num_tokens() == 5);
    CHECK(r.max_tokens() == 16);
}

TEST_CASE("block hashes chain over full blocks only", "[request][upstream:test_kv_cache_utils.py::test_hash_request_tokens_no_mm_inputs]") {
    const std::vector<TokenId> prompt = iota_tokens(100, 110);  // 2 full blocks of 4 + 2 tokens
    const Request r = make_request("a", prompt, 4);
    REQUIRE(r.block_hashes().size() == 2);
    const BlockHash h0 = hash_block_tokens(kNoneHash, slice(prompt, 0, 4));
    const BlockHash h1 = hash_block_tokens(h0, slice(prompt, 4, 4));
    CHECK(r.block_hashes()[0] == h0);
    CHECK(r.block_hashes()[1] == h1);
    CHECK(h0 != h1);
}

TEST_CASE("block hash boundaries: block_size-1 / block_size / block_size+1 tokens", "[request]") {
    CHECK(make_request("a", iota_tokens(0, 15), 16).block_hashes().empty());
    CHECK(make_request("b", iota_tokens(0, 16), 16).block_hashes().size() == 1);
    CHECK(make_request("c", iota_tokens(0, 17), 16).block_hashes().size() == 1);
    CHECK(make_request("d", {}, 16).block_hashes().empty());
}

TEST_CASE("equal content under a different parent hashes differently", "[request][upstream:test_kv_cache_utils.py::test_hash_block_tokens]") {
    // common * 2: block 1 has the same tokens as block 0 but a different parent.
    std::vector<TokenId> prompt(8, 7);
    const Request r = make_request("a", prompt, 4);
    REQUIRE(r.block_hashes().size() == 2);
    CHECK(r.block_hashes()[0] != r.block_hashes()[1]);
    CHECK(r.block_hashes()[1] == hash_block_tokens(r.block_hashes()[0], slice(prompt, 4, 4)));
}

TEST_CASE("shared prefixes share hashes / divergence changes the rest", "[request]") {
    std::vector<TokenId> a = iota_tokens(0, 12);
    std::vector<TokenId> b = a;
    b[5] = 999;  // inside block 1
    const Request ra = make_request("a", a, 4);
    const Request rb = make_request("b", b, 4);
    const Request ra2 = make_request("a2", a, 4);
    REQUIRE(ra.block_hashes().size() == 3);
    REQUIRE(rb.block_hashes().size() == 3);
    CHECK(ra.block_hashes() == ra2.block_hashes());
    CHECK(ra.block_hashes()[0] == rb.block_hashes()[0]);
    CHECK(ra.block_hashes()[1] != rb.block_hashes()[1]);
    CHECK(ra.block_hashes()[2] != rb.block_hashes()[2]);  // same tokens, different parent
}

TEST_CASE("append_output_token extends hashes when a block fills", "[request]") {
    const std::vector<TokenId> prompt = iota_tokens(0, 6);
    Request r = make_request("a", prompt, 4);
    REQUIRE(r.block_hashes().size() == 1);
    r.append_output_token(50);
    CHECK(r.block_hashes().size() == 1);
    r.append_output_token(51);
    REQUIRE(r.block_hashes().size() == 2);
    const std::vector<TokenId> block1 = {4, 5, 50, 51};
    CHECK(r.block_hashes()[1] == hash_block_tokens(r.block_hashes()[0], block1));
    CHECK(r.num_output_tokens() == 2);
    CHECK(r.num_tokens() == 8);
    CHECK(r.output() == std::vector<TokenId>{50, 51});
    CHECK(r.all_token_ids() == std::vector<TokenId>{0, 1, 2, 3, 4, 5, 50, 51});
    // Same tokens given as a prompt hash identically.
    const Request same = make_request("b", r.all_token_ids(), 4);
    CHECK(same.block_hashes() == r.block_hashes());
}

TEST_CASE("token_at spans prompt then output", "[request]") {
    Request r = make_request("a", {10, 11, 12}, 4);
    r.append_output_token(20);
    CHECK(r.token_at(0) == 10);
    CHECK(r.token_at(2) == 12);
    CHECK(r.token_at(3) == 20);
    CHECK_THROWS_AS(r.token_at(4), std::logic_error);
    CHECK_THROWS_AS(r.token_at(-1), std::logic_error);
}

TEST_CASE("Request constructor preconditions", "[request]") {
    CHECK_THROWS_AS(Request("", {1}, 16, 4, 0, {}), std::logic_error);
    CHECK_THROWS_AS(Request("a", {1}, 16, 0, 0, {}), std::logic_error);
    CHECK_THROWS_AS(Request("a", {1}, 0, 4, 0, {}), std::logic_error);
    CHECK_THROWS_AS(Request("a", {1}, 16, 4, -1, {}), std::logic_error);
    CHECK_NOTHROW(Request("a", {1}, 1, 1, 0, {}));
}

TEST_CASE("hash values are pinned (determinism across compilers and runs)", "[request]") {
    // Regression pins: changing the hash changes every digest built on block hashes.
    const std::vector<TokenId> block = {1, 2, 3, 4};
    CHECK(kNoneHash == fnv1a("kvsim/NONE_HASH"));
    CHECK(hash_block_tokens(kNoneHash, block) == hash_block_tokens(kNoneHash, std::vector<TokenId>{1, 2, 3, 4}));
    CHECK(hash_block_tokens(kNoneHash, block) != hash_block_tokens(kNoneHash, std::vector<TokenId>{4, 3, 2, 1}));
    CHECK(hash_block_tokens(kNoneHash, std::vector<TokenId>{-1}) !=
          hash_block_tokens(kNoneHash, std::vector<TokenId>{1}));
    CHECK(hash_block_tokens(kNoneHash, block) == 0xed8e33d5cc928250ULL);
}
