// The readers of the connector check kinds: store, p2p, multi (connector_check_readers.h).
#include "properties/step_checks/connector_check_readers.h"

#include <fmt/format.h>

#include <vector>

#include "properties/step_checks/check_values.h"
#include "sim/connector/mooncake/mooncake_connector_scheduler.h"
#include "sim/connector/mooncake/store/scheduler.h"
#include "sim/connector/multi_connector.h"

namespace kvsim {
namespace {

const MultiConnectorScheduler* multi_of(const CheckedState& s) {
    return dynamic_cast<const MultiConnectorScheduler*>(s.engine.connector());
}

// The connector of type C in the stack (the top one or a MultiConnector child), with its child
// index (-1 at the top); null when the stack has none.
template <class C>
const C* connector_of(const CheckedState& s, int* child = nullptr) {
    if (child) *child = -1;
    if (const auto* top = dynamic_cast<const C*>(s.engine.connector())) return top;
    const MultiConnectorScheduler* multi = multi_of(s);
    if (multi == nullptr) return nullptr;
    for (std::size_t i = 0; i < multi->num_children(); ++i)
        if (const auto* c = dynamic_cast<const C*>(&multi->child(i))) {
            if (child) *child = static_cast<int>(i);
            return c;
        }
    return nullptr;
}

// The store's part of the metadata build_connector_meta emitted in the step (null: none).
const StoreMetadata* store_metadata_of(const CheckedState& s) {
    int child = -1;
    if (connector_of<MooncakeStoreScheduler>(s, &child) == nullptr) return nullptr;
    const ConnectorMetadata* meta = s.engine.last_connector_metadata();
    if (child < 0) return metadata_as<StoreMetadata>(meta);
    const auto* multi = metadata_as<MultiKVConnectorMetadata>(meta);
    if (multi == nullptr || static_cast<std::size_t>(child) >= multi->metadata.size()) return nullptr;
    return metadata_as<StoreMetadata>(multi->metadata[static_cast<std::size_t>(child)].get());
}

// The first ReqMeta of request `id` in the step's store metadata with a load (load=true) or a save.
const ReqMeta* req_meta_of(const std::string& id, const CheckedState& s, bool load) {
    const StoreMetadata* meta = store_metadata_of(s);
    if (meta == nullptr) return nullptr;
    for (const ReqMeta& m : meta->requests)
        if (m.req_id == id && (load ? m.load_spec.has_value() : m.can_save)) return &m;
    return nullptr;
}

std::vector<BlockId> flat(const GroupBlockIds& groups) {
    std::vector<BlockId> out;
    for (const auto& group : groups) out.insert(out.end(), group.begin(), group.end());
    return out;
}

template <class T, class F>
std::string or_absent(const T* item, F&& text) {
    return item ? text(*item) : std::string(kAbsent);
}

template <class V>
std::vector<std::string> keys_of(const OrderedMap<V>& map) {
    std::vector<std::string> out;
    for (const auto& entry : map) out.push_back(entry.first);
    return out;
}

std::string integer(int n) { return fmt::format("{}", n); }

const RequestTracker* tracker_of(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? store->tracker(id) : nullptr;
}

}  // namespace

std::string read_store_load(const std::string& id, const CheckedState& s) {
    return check_on_off(req_meta_of(id, s, true) != nullptr);
}
std::string read_store_load_from(const std::string& id, const CheckedState& s) {
    return or_absent(req_meta_of(id, s, true),
                     [](const ReqMeta& m) { return integer(m.load_spec->vllm_cached_tokens); });
}
std::string read_store_load_tokens(const std::string& id, const CheckedState& s) {
    return or_absent(req_meta_of(id, s, true),
                     [](const ReqMeta& m) { return integer(m.load_spec->kvpool_cached_tokens); });
}
std::string read_store_save(const std::string& id, const CheckedState& s) {
    return check_on_off(req_meta_of(id, s, false) != nullptr);
}
std::string read_store_save_start(const std::string& id, const CheckedState& s) {
    return or_absent(req_meta_of(id, s, false), [](const ReqMeta& m) { return integer(m.token_ids_start); });
}
std::string read_store_save_end(const std::string& id, const CheckedState& s) {
    return or_absent(req_meta_of(id, s, false), [](const ReqMeta& m) { return integer(m.token_len_chunk); });
}
std::string read_store_save_blocks(const std::string& id, const CheckedState& s) {
    return or_absent(req_meta_of(id, s, false), [](const ReqMeta& m) { return check_blocks(flat(m.block_ids)); });
}
std::string read_store_load_spec(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? check_on_off(store->load_specs().contains(id)) : std::string(kAbsent);
}
std::string read_store_tracked(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? check_on_off(store->tracker(id) != nullptr) : std::string(kAbsent);
}
std::string read_store_tracked_tokens(const std::string& id, const CheckedState& s) {
    return or_absent(tracker_of(id, s), [](const RequestTracker& t) { return integer(t.token_len); });
}
std::string read_store_saved(const std::string& id, const CheckedState& s) {
    return or_absent(tracker_of(id, s), [](const RequestTracker& t) { return integer(t.num_saved_tokens); });
}
std::string read_store_unfinished(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? check_on_off(store->unfinished_entry(id) != nullptr) : std::string(kAbsent);
}
std::string read_store_pins(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    if (store == nullptr) return std::string(kAbsent);
    std::vector<BlockId> out;
    for (const auto& [job, pin] : store->pinned_saves())
        if (pin.req_id == id) out.insert(out.end(), pin.block_ids.begin(), pin.block_ids.end());
    return check_blocks(out);
}
std::string read_store_jobs(const std::string& id, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    if (store == nullptr) return std::string(kAbsent);
    int n = 0;
    for (const auto& [job, pin] : store->pinned_saves()) n += pin.req_id == id ? 1 : 0;
    return integer(n);
}
std::string read_store_unfinished_ids(const std::string&, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? check_names(store->unfinished_request_ids()) : std::string(kAbsent);
}
std::string read_store_pinned(const std::string&, const CheckedState& s) {
    const auto* store = connector_of<MooncakeStoreScheduler>(s);
    return store ? check_blocks(store->pinned_blocks()) : std::string(kAbsent);
}

std::string read_p2p_need_recv(const std::string&, const CheckedState& s) {
    const auto* p2p = connector_of<MooncakeConnectorScheduler>(s);
    return p2p ? check_names(keys_of(p2p->reqs_need_recv())) : std::string(kAbsent);
}
std::string read_p2p_need_send(const std::string&, const CheckedState& s) {
    const auto* p2p = connector_of<MooncakeConnectorScheduler>(s);
    return p2p ? check_names(keys_of(p2p->reqs_need_send())) : std::string(kAbsent);
}
std::string read_p2p_not_processed(const std::string&, const CheckedState& s) {
    const auto* p2p = connector_of<MooncakeConnectorScheduler>(s);
    return p2p ? check_names(p2p->reqs_not_processed()) : std::string(kAbsent);
}
std::string read_p2p_recv_blocks(const std::string& id, const CheckedState& s) {
    const auto* p2p = connector_of<MooncakeConnectorScheduler>(s);
    const GroupBlockIds* blocks = p2p ? p2p->reqs_need_recv().find(id) : nullptr;
    return or_absent(blocks, [](const GroupBlockIds& b) { return check_blocks(flat(b)); });
}
std::string read_p2p_send_blocks(const std::string& id, const CheckedState& s) {
    const auto* p2p = connector_of<MooncakeConnectorScheduler>(s);
    const GroupBlockIds* blocks = p2p ? p2p->reqs_need_send().find(id) : nullptr;
    return or_absent(blocks, [](const GroupBlockIds& b) { return check_blocks(flat(b)); });
}

std::string read_multi_child(const std::string& id, const CheckedState& s) {
    const MultiConnectorScheduler* multi = multi_of(s);
    if (multi == nullptr) return std::string(kAbsent);
    const auto it = multi->requests_to_connector().find(id);
    return it == multi->requests_to_connector().end() ? "-" : integer(it->second);
}
std::string read_multi_child_name(const std::string& id, const CheckedState& s) {
    const MultiConnectorScheduler* multi = multi_of(s);
    if (multi == nullptr) return std::string(kAbsent);
    const auto it = multi->requests_to_connector().find(id);
    if (it == multi->requests_to_connector().end()) return "-";
    return std::string(multi->child(static_cast<std::size_t>(it->second)).name());
}

}  // namespace kvsim
