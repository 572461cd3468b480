// Stateful model test (RapidCheck rc::state, doc/state.md) of BlockPool + KVCacheManager against
// a small reference model: reference counts, free-queue order, the prefix map, block tables.
// Commands: admit a request (get_computed_blocks + allocate_slots: prefix hits are touched),
// admit with external tokens (an async load: delayed caching), extend a request (decode
// tokens, allocate_slots), cache its blocks (after a load), free it, pin/unpin its blocks (a
// store job's refs), evict a block's hash, reset the prefix cache. After every command the
// real pool and manager must equal the model exactly.
//
// The model is written from the upstream semantics (vllm/v1/core/block_pool.py,
// kv_cache_manager.py, kv_cache_utils.py FreeKVCacheBlockQueue; commits in sim/README.md),
// not from kvsim's code: plain containers, no intrusive list.
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <rapidcheck/state.h>

#include "properties/suites/suite_common.h"
#include "sim/core/kv_cache_manager.h"
#include "sim/core/request.h"

namespace kvsim::propgen {
namespace {

constexpr int kMaxModelLen = 1 << 16;

struct PoolConfig {
    int block_size = 2;
    int num_blocks = 8;
    bool caching = true;
    FreeOrder order = FreeOrder::fresh_head_lifo;
};

std::string_view name_of(FreeOrder o) { return variant_flag_value(Variant{.free_order = o}, "free_order"); }

// ---------------------------------------------------------------- the reference model

struct ModelRequest {
    std::vector<TokenId> tokens;
    int num_computed = 0;
    std::vector<BlockId> blocks;
    std::optional<int> num_cached_blocks;  // KVCacheManager.num_cached_block[req] (absent = untracked)
};

struct Model {
    PoolConfig cfg;
    std::vector<int> ref;
    std::vector<std::optional<BlockHash>> hash;
    std::deque<BlockId> free_queue;  // head first
    std::map<BlockHash, std::vector<BlockId>> prefix;
    std::map<std::string, ModelRequest> reqs;
    std::map<int, std::vector<BlockId>> pins;
    int next_req = 0;
    int next_pin = 0;

    explicit Model(const PoolConfig& c) : cfg(c), ref(static_cast<std::size_t>(c.num_blocks), 0),
                                          hash(static_cast<std::size_t>(c.num_blocks)) {
        for (int b = 1; b < c.num_blocks; ++b) free_queue.push_back(static_cast<BlockId>(b));  // 0 = null block
    }

    int bs() const { return cfg.block_size; }
    int num_free() const { return static_cast<int>(free_queue.size()); }

    std::vector<BlockHash> hashes_of(const std::vector<TokenId>& tokens) const {
        std::vector<BlockHash> out;
        BlockHash parent = kNoneHash;
        for (std::size_t i = 0; i + static_cast<std::size_t>(bs()) <= tokens.size(); i += static_cast<std::size_t>(bs())) {
            parent = hash_block_tokens(parent, std::span<const TokenId>(tokens).subspan(i, static_cast<std::size_t>(bs())));
            out.push_back(parent);
        }
        return out;
    }

    // Longest prefix hit, full blocks only, never the last token.
    std::vector<BlockId> hits_of(const std::vector<TokenId>& tokens) const {
        std::vector<BlockId> out;
        if (!cfg.caching) return out;
        const auto hashes = hashes_of(tokens);
        const std::size_t max_blocks = (tokens.size() - 1) / static_cast<std::size_t>(bs());
        for (std::size_t i = 0; i < std::min(max_blocks, hashes.size()); ++i) {
            const auto it = prefix.find(hashes[i]);
            if (it == prefix.end()) break;
            out.push_back(it->second.front());
        }
        return out;
    }

    void drop_hash(BlockId b) {
        if (!hash[b]) return;
        auto it = prefix.find(*hash[b]);
        if (it == prefix.end()) return;
        auto pos = std::find(it->second.begin(), it->second.end(), b);
        if (pos == it->second.end()) return;
        it->second.erase(pos);
        if (it->second.empty()) prefix.erase(it);
        hash[b].reset();
    }

    void touch(const std::vector<BlockId>& ids) {
        for (BlockId b : ids) {
            if (ref[b] == 0) free_queue.erase(std::find(free_queue.begin(), free_queue.end(), b));
            ++ref[b];
        }
    }

    std::vector<BlockId> take(int n) {
        std::vector<BlockId> out;
        for (int i = 0; i < n; ++i) {
            const BlockId b = free_queue.front();
            free_queue.pop_front();
            if (cfg.caching) drop_hash(b);
            ref[b] = 1;
            out.push_back(b);
        }
        return out;
    }

    // Freed blocks: unhashed ("fresh") to the head, hashed to the tail (#42656); caching off: all
    // to the tail, or (#51482) all to the head; append_all: everything to the tail.
    void release(const std::vector<BlockId>& ordered) {
        for (BlockId b : ordered) --ref[b];
        std::vector<BlockId> freeable;
        for (BlockId b : ordered)
            if (ref[b] == 0) freeable.push_back(b);
        std::vector<BlockId> head, tail;
        for (BlockId b : freeable) {
            const bool to_head = cfg.order == FreeOrder::append_all ? false
                                 : !cfg.caching                     ? cfg.order == FreeOrder::fresh_head_lifo
                                                                    : !hash[b].has_value();
            (to_head ? head : tail).push_back(b);
        }
        free_queue.insert(free_queue.begin(), head.begin(), head.end());
        free_queue.insert(free_queue.end(), tail.begin(), tail.end());
    }

    void cache(ModelRequest& r, int num_tokens) {
        if (!cfg.caching) return;
        const int num_cached = r.num_cached_blocks.value_or(0);
        const int num_full = num_tokens / bs();
        if (num_cached >= num_full) return;
        const auto hashes = hashes_of(r.tokens);
        for (int i = num_cached; i < num_full; ++i) {
            const BlockId b = r.blocks[static_cast<std::size_t>(i)];
            if (hash[b]) continue;
            hash[b] = hashes[static_cast<std::size_t>(i)];
            prefix[*hash[b]].push_back(b);
        }
        r.num_cached_blocks = num_full;
    }

    int evictable(const std::vector<BlockId>& hits) const {
        return static_cast<int>(std::count_if(hits.begin(), hits.end(), [&](BlockId b) { return ref[b] == 0; }));
    }
};

// ---------------------------------------------------------------- the system under test

struct Sut {
    KVCacheManager kvm;
    std::map<std::string, std::unique_ptr<Request>> reqs;
    std::map<int, std::vector<BlockId>> pins;

    explicit Sut(const PoolConfig& c)
        : kvm(static_cast<std::uint32_t>(c.num_blocks), c.block_size, kMaxModelLen, c.caching, c.order) {}
};

// After every command: the real state equals the model, block for block.
void check_equal(const Model& m, const Sut& s) {
    const BlockPool& pool = s.kvm.block_pool();
    RC_ASSERT(static_cast<int>(pool.num_free_blocks()) == m.num_free());
    const auto queue = pool.free_queue().to_vector();
    RC_ASSERT(std::vector<BlockId>(m.free_queue.begin(), m.free_queue.end()) == queue);
    for (int b = 1; b < m.cfg.num_blocks; ++b) {
        const KVCacheBlock& blk = pool.block(static_cast<BlockId>(b));
        RC_ASSERT(blk.ref_cnt == m.ref[static_cast<std::size_t>(b)]);
        RC_ASSERT(blk.hash == m.hash[static_cast<std::size_t>(b)]);
    }
    std::map<BlockHash, std::vector<BlockId>> cached;  // the pool's prefix map in the model's terms
    for (const auto& [hash, holders] : pool.cached_blocks()) cached[hash].assign(holders.begin(), holders.end());
    RC_ASSERT(cached == m.prefix);
    for (const auto& [id, r] : m.reqs) RC_ASSERT(s.kvm.get_block_ids(id) == r.blocks);
    for (const auto& [id, blocks] : s.kvm.all_request_blocks()) RC_ASSERT(m.reqs.contains(id) || blocks.empty());
}

// Prompts are built from three shared chunks of one block each, plus an optional partial tail, so
// prefix hits are common.
rc::Gen<std::vector<TokenId>> gen_tokens(int block_size) {
    const auto chunks = rc::gen::mapcat(rc::gen::inRange(1, 5), [](int n) {
        return rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n), rc::gen::inRange(0, 3));
    });
    return rc::gen::map(rc::gen::pair(chunks, rc::gen::inRange(0, block_size)),
                        [block_size](const std::pair<std::vector<int>, int>& p) {
                            std::vector<TokenId> tokens;
                            for (int c : p.first)
                                for (int i = 0; i < block_size; ++i) tokens.push_back(10 * (c + 1) + i);
                            for (int i = 0; i < p.second; ++i) tokens.push_back(90 + i);
                            if (tokens.empty()) tokens.push_back(7);
                            return tokens;
                        });
}

using Cmd = rc::state::Command<Model, Sut>;

std::string pick_request(const Model& m) {
    RC_PRE(!m.reqs.empty());
    std::vector<std::string> ids;
    for (const auto& [id, r] : m.reqs) ids.push_back(id);
    return *rc::gen::elementOf(ids);
}

// A new request: prefix hits via get_computed_blocks, then allocate_slots for the rest.
struct Admit : Cmd {
    std::string id;
    std::vector<TokenId> tokens;
    explicit Admit(const Model& m) : id("q" + std::to_string(m.next_req)), tokens(*gen_tokens(m.bs())) {}

    void checkPreconditions(const Model& m) const override { RC_PRE(!m.reqs.contains(id)); }

    bool fits(const Model& m) const {
        const auto hits = m.hits_of(tokens);
        const int need = std::max((static_cast<int>(tokens.size()) + m.bs() - 1) / m.bs() - static_cast<int>(hits.size()), 0);
        return need + m.evictable(hits) <= m.num_free();
    }

    void apply(Model& m) const override {
        m.next_req = std::max(m.next_req, std::stoi(id.substr(1)) + 1);
        if (!fits(m)) return;  // stays waiting: nothing changes
        const auto hits = m.hits_of(tokens);
        ModelRequest r;
        r.tokens = tokens;
        m.touch(hits);
        r.blocks = hits;
        if (!hits.empty()) r.num_cached_blocks = static_cast<int>(hits.size());
        const int total = (static_cast<int>(tokens.size()) + m.bs() - 1) / m.bs();
        const auto fresh = m.take(total - static_cast<int>(hits.size()));
        r.blocks.insert(r.blocks.end(), fresh.begin(), fresh.end());
        m.cache(r, static_cast<int>(tokens.size()));
        r.num_computed = static_cast<int>(tokens.size());
        m.reqs[id] = std::move(r);
    }

    void run(const Model& m, Sut& s) const override {
        auto req = std::make_unique<Request>(id, tokens, 1 << 20, m.bs(), 0, KvTransferParams{});
        const ComputedBlocks hit = s.kvm.get_computed_blocks(*req);
        RC_ASSERT(hit.blocks == m.hits_of(tokens));
        const auto got = s.kvm.allocate_slots(*req, req->num_tokens() - hit.num_tokens, hit.num_tokens, hit.blocks);
        RC_ASSERT(got.has_value() == fits(m));
        if (got) {
            req->num_computed_tokens = req->num_tokens();
            s.reqs[id] = std::move(req);
        }
        check_equal(nextState(m), s);
    }

    void show(std::ostream& os) const override { os << "Admit " << id << " tokens=" << tokens.size(); }
};

// A new request whose prompt tail comes from outside (an async load): external tokens get blocks
// at once, caching is delayed until CacheBlocks.
struct AdmitExternal : Cmd {
    std::string id;
    std::vector<TokenId> tokens;
    int external = 1;
    explicit AdmitExternal(const Model& m) : id("q" + std::to_string(m.next_req)), tokens(*gen_tokens(m.bs())) {
        const int hit_tokens = static_cast<int>(m.hits_of(tokens).size()) * m.bs();
        const int room = static_cast<int>(tokens.size()) - hit_tokens;
        RC_PRE(room >= 1);
        external = *rc::gen::inRange(1, room + 1);
    }

    void checkPreconditions(const Model& m) const override {
        RC_PRE(!m.reqs.contains(id));
        const int hit_tokens = static_cast<int>(m.hits_of(tokens).size()) * m.bs();
        RC_PRE(hit_tokens + external <= static_cast<int>(tokens.size()));
    }

    bool fits(const Model& m) const {
        const auto hits = m.hits_of(tokens);
        const int total_tokens = static_cast<int>(hits.size()) * m.bs() + external;
        const int need = std::max((total_tokens + m.bs() - 1) / m.bs() - static_cast<int>(hits.size()), 0);
        return need + m.evictable(hits) <= m.num_free();
    }

    void apply(Model& m) const override {
        m.next_req = std::max(m.next_req, std::stoi(id.substr(1)) + 1);
        if (!fits(m)) return;
        const auto hits = m.hits_of(tokens);
        ModelRequest r;
        r.tokens = tokens;
        m.touch(hits);
        r.blocks = hits;
        r.num_cached_blocks = static_cast<int>(hits.size());
        const int total_tokens = static_cast<int>(hits.size()) * m.bs() + external;
        const auto fresh = m.take((total_tokens + m.bs() - 1) / m.bs() - static_cast<int>(hits.size()));
        r.blocks.insert(r.blocks.end(), fresh.begin(), fresh.end());
        r.num_computed = total_tokens;
        m.reqs[id] = std::move(r);
    }

    void run(const Model& m, Sut& s) const override {
        auto req = std::make_unique<Request>(id, tokens, 1 << 20, m.bs(), 0, KvTransferParams{});
        const ComputedBlocks hit = s.kvm.get_computed_blocks(*req);
        RC_ASSERT(hit.blocks == m.hits_of(tokens));
        const auto got = s.kvm.allocate_slots(*req, 0, hit.num_tokens, hit.blocks, 0, external, true);
        RC_ASSERT(got.has_value() == fits(m));
        if (got) {
            RC_ASSERT(got->empty());  // only external-token blocks: allocate_slots returns none of them
            req->num_computed_tokens = hit.num_tokens + external;
            s.reqs[id] = std::move(req);
        }
        check_equal(nextState(m), s);
    }

    void show(std::ostream& os) const override {
        os << "AdmitExternal " << id << " tokens=" << tokens.size() << " external=" << external;
    }
};

// Decode: append tokens, then allocate_slots for everything not yet computed.
struct Extend : Cmd {
    std::string id;
    std::vector<TokenId> added;
    explicit Extend(const Model& m) : id(pick_request(m)) {
        added = *rc::gen::container<std::vector<TokenId>>(static_cast<std::size_t>(*rc::gen::inRange(1, 2 * m.bs() + 1)),
                                                          rc::gen::inRange<TokenId>(100, 102));
    }

    void checkPreconditions(const Model& m) const override { RC_PRE(m.reqs.contains(id)); }

    int new_tokens(const ModelRequest& r) const {
        return static_cast<int>(r.tokens.size() + added.size()) - r.num_computed;
    }
    bool fits(const Model& m) const {
        const ModelRequest& r = m.reqs.at(id);
        const int total = r.num_computed + new_tokens(r);
        const int need = std::max((total + m.bs() - 1) / m.bs() - static_cast<int>(r.blocks.size()), 0);
        return need <= m.num_free();
    }

    void apply(Model& m) const override {
        const bool ok = fits(m);
        ModelRequest& r = m.reqs.at(id);
        r.tokens.insert(r.tokens.end(), added.begin(), added.end());
        if (!ok) return;
        const int total = static_cast<int>(r.tokens.size());
        const int need = std::max((total + m.bs() - 1) / m.bs() - static_cast<int>(r.blocks.size()), 0);
        const auto fresh = m.take(need);
        r.blocks.insert(r.blocks.end(), fresh.begin(), fresh.end());
        m.cache(r, total);
        r.num_computed = total;
    }

    void run(const Model& m, Sut& s) const override {
        Request& req = *s.reqs.at(id);
        for (TokenId t : added) req.append_output_token(t);
        const auto got = s.kvm.allocate_slots(req, req.num_tokens() - req.num_computed_tokens);
        RC_ASSERT(got.has_value() == fits(m));
        if (got) req.num_computed_tokens = req.num_tokens();
        check_equal(nextState(m), s);
    }

    void show(std::ostream& os) const override { os << "Extend " << id << " +" << added.size(); }
};

// After a load: cache the request's computed blocks (KVCacheManager.cache_blocks).
struct CacheBlocks : Cmd {
    std::string id;
    explicit CacheBlocks(const Model& m) : id(pick_request(m)) {}
    void checkPreconditions(const Model& m) const override { RC_PRE(m.reqs.contains(id)); }
    void apply(Model& m) const override {
        ModelRequest& r = m.reqs.at(id);
        m.cache(r, r.num_computed);
    }
    void run(const Model& m, Sut& s) const override {
        const Request& req = *s.reqs.at(id);
        s.kvm.cache_blocks(req, req.num_computed_tokens);
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "CacheBlocks " << id; }
};

// Finish or preempt: KVCacheManager.free, tail first.
struct Free : Cmd {
    std::string id;
    explicit Free(const Model& m) : id(pick_request(m)) {}
    void checkPreconditions(const Model& m) const override { RC_PRE(m.reqs.contains(id)); }
    void apply(Model& m) const override {
        const auto& blocks = m.reqs.at(id).blocks;
        m.release(std::vector<BlockId>(blocks.rbegin(), blocks.rend()));
        m.reqs.erase(id);
    }
    void run(const Model& m, Sut& s) const override {
        s.kvm.free(*s.reqs.at(id));
        s.reqs.erase(id);
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "Free " << id; }
};

// A store job's refs on a request's blocks (#52372): touch now, free later.
struct Pin : Cmd {
    std::string id;
    int pin = 0;
    explicit Pin(const Model& m) : id(pick_request(m)), pin(m.next_pin) {}
    void checkPreconditions(const Model& m) const override {
        RC_PRE(m.reqs.contains(id));
        RC_PRE(!m.pins.contains(pin));
    }
    void apply(Model& m) const override {
        const auto blocks = m.reqs.at(id).blocks;
        m.touch(blocks);
        m.pins[pin] = blocks;
        m.next_pin = std::max(m.next_pin, pin + 1);
    }
    void run(const Model& m, Sut& s) const override {
        const auto blocks = s.kvm.get_block_ids(id);
        s.kvm.block_pool().touch(blocks);
        s.pins[pin] = blocks;
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "Pin " << id << " as pin " << pin; }
};

struct Unpin : Cmd {
    int pin = 0;
    explicit Unpin(const Model& m) {
        RC_PRE(!m.pins.empty());
        std::vector<int> ids;
        for (const auto& [p, blocks] : m.pins) ids.push_back(p);
        pin = *rc::gen::elementOf(ids);
    }
    void checkPreconditions(const Model& m) const override { RC_PRE(m.pins.contains(pin)); }
    void apply(Model& m) const override {
        const auto& blocks = m.pins.at(pin);
        m.release(std::vector<BlockId>(blocks.rbegin(), blocks.rend()));
        m.pins.erase(pin);
    }
    void run(const Model& m, Sut& s) const override {
        const auto& blocks = s.pins.at(pin);
        s.kvm.block_pool().free_blocks(std::vector<BlockId>(blocks.rbegin(), blocks.rend()));
        s.pins.erase(pin);
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "Unpin " << pin; }
};

// BlockPool.evict_blocks: drop one block's hash (the block stays where it is).
struct Evict : Cmd {
    BlockId block = 1;
    explicit Evict(const Model& m) : block(static_cast<BlockId>(*rc::gen::inRange(1, m.cfg.num_blocks))) {}
    void apply(Model& m) const override { m.drop_hash(block); }
    void run(const Model& m, Sut& s) const override {
        s.kvm.block_pool().evict_blocks({block});
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "Evict " << block; }
};

// BlockPool.reset_prefix_cache: only when every block is free.
struct Reset : Cmd {
    explicit Reset(const Model&) {}
    bool resets(const Model& m) const { return m.num_free() == m.cfg.num_blocks - 1; }
    void apply(Model& m) const override {
        if (!resets(m)) return;
        m.prefix.clear();
        for (auto& h : m.hash) h.reset();
    }
    void run(const Model& m, Sut& s) const override {
        RC_ASSERT(s.kvm.block_pool().reset_prefix_cache() == resets(m));
        check_equal(nextState(m), s);
    }
    void show(std::ostream& os) const override { os << "ResetPrefixCache"; }
};

rc::Gen<PoolConfig> gen_pool_config() {
    return rc::gen::build<PoolConfig>(
        rc::gen::set(&PoolConfig::block_size, rc::gen::element(2, 1, 4)),
        rc::gen::set(&PoolConfig::num_blocks, rc::gen::inRange(2, 20)),
        rc::gen::set(&PoolConfig::caching, rc::gen::weightedElement<bool>({{4, true}, {1, false}})),
        rc::gen::set(&PoolConfig::order, rc::gen::element(FreeOrder::fresh_head_lifo, FreeOrder::fresh_head,
                                                          FreeOrder::append_all)));
}

TEST_CASE("block pool and kv cache manager match a reference model", "[property][model]") {
    require_property("block pool model", 500, [] {
        const PoolConfig cfg = *gen_pool_config();
        RC_TAG(std::string(name_of(cfg.order)) + (cfg.caching ? "" : " caching off"));
        Model model(cfg);
        Sut sut(cfg);
        rc::state::check(model, sut,
                         rc::state::gen::execOneOfWithArgs<Admit, Admit, AdmitExternal, Extend, Extend, CacheBlocks,
                                                           Free, Free, Pin, Unpin, Evict, Reset>());
    });
}

}  // namespace
}  // namespace kvsim::propgen
