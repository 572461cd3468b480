#include <catch2/catch.hpp>

#include "sim/common/upstream_assertion.h"
#include "sim/connector/mooncake/store/data.h"

using namespace kvsim;
using Groups = GroupBlockIds;

namespace {

RequestTracker tracker(int token_len, int num_saved_tokens, Groups blocks = Groups{{0, 1, 2}}) {
    RequestTracker t;
    t.req_id = "req-0";
    t.token_len = token_len;
    t.allocated_block_ids = std::move(blocks);
    t.num_saved_tokens = num_saved_tokens;
    return t;
}

const std::vector<BlockHash> kHashes = {0xa0, 0xa1, 0xa2};

}  // namespace

// upstream test_from_request_tracker_load_overrides_caller_skip_save
TEST_CASE("from_request_tracker: a load with can_load overrides the caller's skip_save", "[store][upstream:test_mooncake_store_scheduler.py::test_from_request_tracker_load_overrides_caller_skip_save]") {
    RequestTracker t = tracker(48, 0);
    const LoadSpec load{0, 48, true, 0};
    auto meta = ReqMeta::from_request_tracker(t, 16, load, false, kHashes);
    REQUIRE(meta);
    CHECK_FALSE(meta->can_save);
    REQUIRE(meta->load_spec);
    CHECK(*meta->load_spec == load);
    CHECK(meta->token_len_chunk == 48);  // set even without a save
    CHECK(t.num_saved_tokens == 0);
}

// upstream test_from_request_tracker_load_with_can_load_false_still_saves
TEST_CASE("from_request_tracker: a load without can_load still saves and the load is dropped", "[store][upstream:test_mooncake_store_scheduler.py::test_from_request_tracker_load_with_can_load_false_still_saves]") {
    RequestTracker t = tracker(48, 0);
    auto meta = ReqMeta::from_request_tracker(t, 16, LoadSpec{0, 48, false, 0}, false, kHashes);
    REQUIRE(meta);
    CHECK(meta->can_save);
    CHECK_FALSE(meta->load_spec);
    CHECK(t.num_saved_tokens == 48);
}

// upstream test_from_request_tracker_no_load_saves_normally[48-False]
TEST_CASE("from_request_tracker: no load saves normally and a repeat call returns None", "[store][upstream:test_mooncake_store_scheduler.py::test_from_request_tracker_no_load_saves_normally]") {
    RequestTracker t = tracker(48, 0);
    t.prefill_end_tokens = 48;
    auto meta = ReqMeta::from_request_tracker(t, 16, std::nullopt, false, kHashes);
    REQUIRE(meta);
    CHECK(meta->can_save);
    CHECK_FALSE(meta->load_spec);
    CHECK(meta->token_len_chunk == 48);
    CHECK(meta->token_ids_start == 0);
    CHECK(meta->num_prompt_tokens == 48);
    CHECK(meta->block_ids == Groups{{0, 1, 2}});
    CHECK(meta->block_hashes == kHashes);
    CHECK(t.num_saved_tokens == 48);
    CHECK_FALSE(ReqMeta::from_request_tracker(t, 16, std::nullopt, false, kHashes));
}

TEST_CASE("from_request_tracker: can_load False with nothing to save is a listed no-op meta", "[store]") {
    RequestTracker t = tracker(10, 0);
    auto meta = ReqMeta::from_request_tracker(t, 16, LoadSpec{0, 10, false, 0}, std::nullopt, kHashes);
    REQUIRE(meta);
    CHECK_FALSE(meta->can_save);
    CHECK_FALSE(meta->load_spec);
    CHECK(meta->token_len_chunk == 0);
    CHECK(t.num_saved_tokens == 0);
}

TEST_CASE("from_request_tracker: a sub-block pending hit saves nothing", "[store]") {
    // Pending branch: token_len = kvpool_cached_tokens < block_size -> to_save 0 -> no save, no assert.
    RequestTracker t = tracker(8, 0, Groups{});
    auto meta = ReqMeta::from_request_tracker(t, 16, LoadSpec{0, 8, false, 0}, std::nullopt, kHashes);
    REQUIRE(meta);
    CHECK_FALSE(meta->can_save);
}

TEST_CASE("from_request_tracker: can_load False and a block to save is a save with the tracker ids", "[store]") {
    // The #54643 / seed 000 trigger: a pending-branch tracker built from the loser's `()`.
    RequestTracker t = tracker(48, 0, Groups{});
    auto meta = ReqMeta::from_request_tracker(t, 16, LoadSpec{0, 48, false, 0}, std::nullopt, kHashes);
    REQUIRE(meta);
    CHECK(meta->can_save);
    CHECK(meta->block_ids.empty());
    CHECK(meta->token_len_chunk == 48);
    CHECK(t.num_saved_tokens == 48);
}

TEST_CASE("from_request_tracker: skip_save None counts as False and True without a load returns None", "[store]") {
    RequestTracker a = tracker(32, 0);
    auto saved = ReqMeta::from_request_tracker(a, 16, std::nullopt, std::nullopt, kHashes);
    REQUIRE(saved);
    CHECK(saved->can_save);
    CHECK(saved->token_len_chunk == 32);

    RequestTracker b = tracker(32, 0);
    CHECK_FALSE(ReqMeta::from_request_tracker(b, 16, std::nullopt, true, kHashes));
    CHECK(b.num_saved_tokens == 0);

    // skip_save True with a load spec still lists the meta (carrying the load when can_load).
    RequestTracker c = tracker(32, 0);
    auto loaded = ReqMeta::from_request_tracker(c, 16, LoadSpec{0, 32, true, 0}, true, kHashes);
    REQUIRE(loaded);
    CHECK_FALSE(loaded->can_save);
    CHECK(loaded->load_spec);
}

TEST_CASE("from_request_tracker: the next save needs a block edge strictly above the watermark", "[store]") {
    RequestTracker t = tracker(47, 32);
    CHECK_FALSE(ReqMeta::from_request_tracker(t, 16, std::nullopt, false, kHashes));  // boundary 48, to_save 32
    CHECK(t.num_saved_tokens == 32);
    t.token_len = 48;
    auto meta = ReqMeta::from_request_tracker(t, 16, std::nullopt, false, kHashes);
    REQUIRE(meta);
    CHECK(meta->token_ids_start == 32);
    CHECK(meta->token_len_chunk == 48);
    CHECK(t.num_saved_tokens == 48);

    RequestTracker first = tracker(16, 0);  // boundary cdiv(1, 16) * 16 == 16
    REQUIRE(ReqMeta::from_request_tracker(first, 16, std::nullopt, false, kHashes));
    CHECK(first.num_saved_tokens == 16);
    RequestTracker below = tracker(15, 0);
    CHECK_FALSE(ReqMeta::from_request_tracker(below, 16, std::nullopt, false, kHashes));
}

TEST_CASE("RequestTracker update appends per group and rejects a group-count mismatch", "[store]") {
    RequestTracker t = tracker(44, 32, Groups{{0, 1}});
    t.update(Groups{{2}});
    CHECK(t.allocated_block_ids == Groups{{0, 1, 2}});
    t.update(Groups{{}});
    CHECK(t.allocated_block_ids == Groups{{0, 1, 2}});

    RequestTracker empty = tracker(48, 0, Groups{});  // upstream's `()`
    try {
        empty.update(Groups{{3}});
        FAIL("expected an UpstreamAssertion");
    } catch (const UpstreamAssertion& e) {
        CHECK(e.id() == "store_tracker_group_count_mismatch");
        CHECK(std::string(e.what()) == "ValueError: Group count mismatch: tracker has 0 groups, update has 1");
    }
}

// upstream test_preemption_resets_tracker (the tracker half)
TEST_CASE("RequestTracker reset zeroes every field", "[store][upstream:test_mooncake_store_scheduler.py::test_preemption_resets_tracker]") {
    RequestTracker t = tracker(44, 32, Groups{{0, 1}});
    t.has_pending_offload = true;
    t.prefill_end_tokens = 48;
    t.reset();
    CHECK(t.token_len == 0);
    CHECK(t.allocated_block_ids.empty());
    CHECK(t.num_saved_tokens == 0);
    CHECK_FALSE(t.has_pending_offload);
    CHECK(t.prefill_end_tokens == 0);
    CHECK(t.req_id == "req-0");
}
