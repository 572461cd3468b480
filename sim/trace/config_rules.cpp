// The table of upstream's configuration rules (config_rules.h), one row per check upstream makes.
#include "sim/trace/config_rules.h"

#include <fmt/format.h>

#include <array>

#include "sim/trace/trace_schema.h"

namespace kvsim {
namespace {

int line_of(const std::vector<int>& lines, std::size_t i) { return i < lines.size() ? lines[i] : 0; }

std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// ---- what each rule looks at ------------------------------------------------------------------

std::optional<RuleBreach> several_connectors_without_role(const Trace& t) {
    if (t.multi || t.connectors.size() < 2) return std::nullopt;
    return RuleBreach{.field = "multi.role",
                      .line = line_of(t.lines.connectors, 1),
                      .detail = fmt::format("{} connector lines form a MultiConnector, and no multi line gives its "
                                            "kv_role",
                                            t.connectors.size())};
}

// MooncakeStoreConnector.__init__ @ 003df2961dd8830c317a61f9745ccd557da9fa06 and MooncakeStoreWorker.start_load_kv @
// 01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103: a kv_consumer that neither looks up nor saves decode blocks runs no
// load or save path, and returns before the assertion.
bool capacity_only(const ConnectorSpec& c) {
    return c.role == KvRole::kv_consumer && !c.enable_lookup && !c.save_decode_cache;
}

std::optional<RuleBreach> store_loads_synchronously(const Trace& t) {
    for (std::size_t i = 0; i < t.connectors.size(); ++i) {
        const ConnectorSpec& c = t.connectors[i];
        if (c.kind != kConnectorStore || c.load_async || capacity_only(c)) continue;
        return RuleBreach{.field = "connector.load_async",
                          .line = line_of(t.lines.connectors, i),
                          .detail = fmt::format("connector store role={} sets load_async=off", to_string(c.role))};
    }
    return std::nullopt;
}

std::optional<RuleBreach> whole_prompts_over_budget(const Trace& t) {
    const EngineConfig& e = t.engine;
    if (e.chunked_prefill || e.max_batched_tokens >= e.max_model_len) return std::nullopt;
    return RuleBreach{.field = "engine.max_batched_tokens",
                      .line = t.lines.engine,
                      .detail = fmt::format("chunked_prefill=off with max_batched_tokens={} < max_model_len={}",
                                            e.max_batched_tokens, e.max_model_len)};
}

std::optional<RuleBreach> budget_below_max_num_seqs(const Trace& t) {
    const EngineConfig& e = t.engine;
    if (e.max_batched_tokens >= e.max_running) return std::nullopt;
    return RuleBreach{.field = "engine.max_batched_tokens",
                      .line = t.lines.engine,
                      .detail = fmt::format("max_batched_tokens={} < max_running={}", e.max_batched_tokens,
                                            e.max_running)};
}

// The blocks one request of max_model_len tokens needs (FullAttentionSpec.max_memory_usage_bytes, one group).
std::int64_t max_model_len_blocks(const EngineConfig& e) { return cdiv(e.max_model_len, e.block_size); }

RuleBreach pool_breach(const Trace& t, std::int64_t usable, std::string_view counted) {
    const EngineConfig& e = t.engine;
    return RuleBreach{.field = "engine.num_blocks",
                      .line = t.lines.engine,
                      .detail = fmt::format("num_blocks={} ({}) of {} tokens hold {} tokens, less than one request of "
                                            "max_model_len={} ({} blocks); lower max_model_len or raise num_blocks",
                                            e.num_blocks, counted, e.block_size, usable * e.block_size,
                                            e.max_model_len, max_model_len_blocks(e))};
}

std::optional<RuleBreach> pool_below_max_model_len(const Trace& t) {
    const EngineConfig& e = t.engine;
    if (e.num_blocks >= max_model_len_blocks(e)) return std::nullopt;
    return pool_breach(t, e.num_blocks, "the null block counted");
}

std::optional<RuleBreach> usable_pool_below_max_model_len(const Trace& t) {
    const EngineConfig& e = t.engine;
    if (e.num_blocks - 1 >= max_model_len_blocks(e)) return std::nullopt;
    return pool_breach(t, e.num_blocks - 1, "without the null block");
}

bool store_worker_asserts(const Variant& v) {
    return v.flag<&Variant::store_sync_load>() == StoreSyncLoad::asserts;
}
bool null_block_reserved(const Variant& v) {
    return v.flag<&Variant::kv_cache_check>() == KvCacheCheck::max_model_len_and_null_block;
}

// ---- the table ----------------------------------------------------------------------------------

constexpr std::array kRules = {
    ConfigRule{
        .id = "kv_role_required",
        .rejects = "two or more connector lines (a MultiConnector) without a multi line giving its own kv_role",
        .upstream = "vllm/config/kv_transfer.py KVTransferConfig.__post_init__ @ "
                    "9dc4946457fb6963f05e08b04382013a745cad8a",
        .message = "Please specify kv_role when kv_connector is set, supported roles are ('kv_producer', "
                   "'kv_consumer', 'kv_both')",
        .variants = "every variant",
        .breach = &several_connectors_without_role},
    ConfigRule{
        .id = "store_load_async",
        .rejects = "a store connector with load_async=off that looks prompts up or saves (any but a kv_consumer "
                   "with enable_lookup=off and save_decode_cache=off)",
        .upstream = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py "
                    "MooncakeStoreWorker.get_finished @ 003df2961dd8830c317a61f9745ccd557da9fa06 (start_load_kv @ "
                    "01529cf1294f2aaf6f1d01ebcf6b7cf9da7c0103), on every step the worker executes",
        .message = "AssertionError: load_async must be True for better performance.",
        .variants = "store_sync_load=asserts: every release; +sync_store_load_hotfix lifts it",
        .applies = &store_worker_asserts,
        .breach = &store_loads_synchronously},
    ConfigRule{
        .id = "chunked_prefill_budget",
        .rejects = "chunked_prefill=off with max_batched_tokens below max_model_len",
        .upstream = "vllm/config/scheduler.py SchedulerConfig.verify_max_model_len @ "
                    "01230b40128e570a58e54e75f7e55c4d5cd9246d",
        .message = "ValueError: max_num_batched_tokens is smaller than max_model_len. This effectively limits the "
                   "maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences.",
        .variants = "every variant",
        .breach = &whole_prompts_over_budget},
    ConfigRule{
        .id = "batched_tokens_below_max_num_seqs",
        .rejects = "max_batched_tokens below max_running (max_num_seqs)",
        .upstream = "vllm/config/scheduler.py SchedulerConfig.verify_max_model_len @ "
                    "01230b40128e570a58e54e75f7e55c4d5cd9246d",
        .message = "ValueError: max_num_batched_tokens must be greater than or equal to max_num_seqs.",
        .variants = "every variant",
        .breach = &budget_below_max_num_seqs},
    ConfigRule{
        .id = "kv_cache_holds_max_model_len",
        .rejects = "num_blocks (num_gpu_blocks_override) below the blocks of one request of max_model_len tokens",
        .upstream = "vllm/v1/core/kv_cache_utils.py get_kv_cache_configs, _check_enough_kv_cache_memory @ "
                    "003df2961dd8830c317a61f9745ccd557da9fa06 (the override checked since #41069)",
        .message = "ValueError: To serve at least one request with the model's max seq len, KV cache is needed, "
                   "which is larger than the available KV cache memory.",
        .variants = "every variant",
        .breach = &pool_below_max_model_len},
    ConfigRule{
        .id = "kv_cache_reserves_null_block",
        .rejects = "num_blocks - 1 (the null block is never usable) below the blocks of one request of max_model_len "
                   "tokens",
        .upstream = "#47272 (get_kv_cache_configs reserves the null block when validating max_model_len)",
        .message = "ValueError: To serve at least one request with the model's max seq len, KV cache is needed, "
                   "which is larger than the available KV cache memory.",
        .variants = "kv_cache_check=max_model_len_and_null_block: v0.29.0 and later (derived); +pre47272 lifts it",
        .applies = &null_block_reserved,
        .breach = &usable_pool_below_max_model_len},
};

}  // namespace

std::span<const ConfigRule> config_rules() { return kRules; }

std::string ConfigRejection::message() const {
    return fmt::format("upstream rejects this configuration (rule {}): {}; upstream: {} ({})", rule->id, breach.detail,
                       rule->message, rule->upstream);
}

std::optional<ConfigRejection> upstream_rejects(const Trace& trace, const Variant& variant, FlagReads* reads) {
    Variant judged = variant;
    judged.reads = reads;
    for (const ConfigRule& rule : kRules) {
        if (rule.applies != nullptr && !rule.applies(judged)) continue;
        if (auto breach = rule.breach(trace)) return ConfigRejection{.rule = &rule, .breach = std::move(*breach)};
    }
    return std::nullopt;
}

std::string config_rules_help() {
    std::string out =
        "\nUpstream's configuration rules: a trace one rejects under the run's variant does not run (verdict\n"
        "rejected, signature rejected:RULE, exit 78), as upstream refuses to start it or dies on its first step.\n";
    for (const ConfigRule& rule : kRules)
        out += fmt::format("  {}\n    rejects: {}\n    upstream: {}\n    applies: {}\n", rule.id, rule.rejects,
                           rule.upstream, rule.variants);
    return out;
}

}  // namespace kvsim
