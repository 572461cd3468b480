#pragma once
// The readers of the connector check kinds (`store`, `p2p`, `multi`): the scheduler-side state of
// MooncakeStoreConnector, MooncakeConnector (P2P) and MultiConnector, found in the engine's connector
// stack (on its own or as a MultiConnector child). Each reads without changing anything and gives
// `absent` when the trace has no such connector (or the item does not exist).
#include <string>

#include "properties/step_checks/check_readers.h"

namespace kvsim {

std::string read_store_load(const std::string& id, const CheckedState& s);
std::string read_store_load_from(const std::string& id, const CheckedState& s);
std::string read_store_load_tokens(const std::string& id, const CheckedState& s);
std::string read_store_save(const std::string& id, const CheckedState& s);
std::string read_store_save_start(const std::string& id, const CheckedState& s);
std::string read_store_save_end(const std::string& id, const CheckedState& s);
std::string read_store_save_blocks(const std::string& id, const CheckedState& s);
std::string read_store_load_spec(const std::string& id, const CheckedState& s);
std::string read_store_tracked(const std::string& id, const CheckedState& s);
std::string read_store_tracked_tokens(const std::string& id, const CheckedState& s);
std::string read_store_saved(const std::string& id, const CheckedState& s);
std::string read_store_unfinished(const std::string& id, const CheckedState& s);
std::string read_store_pins(const std::string& id, const CheckedState& s);
std::string read_store_jobs(const std::string& id, const CheckedState& s);
std::string read_store_unfinished_ids(const std::string& id, const CheckedState& s);
std::string read_store_pinned(const std::string& id, const CheckedState& s);

std::string read_p2p_need_recv(const std::string& id, const CheckedState& s);
std::string read_p2p_need_send(const std::string& id, const CheckedState& s);
std::string read_p2p_not_processed(const std::string& id, const CheckedState& s);
std::string read_p2p_recv_blocks(const std::string& id, const CheckedState& s);
std::string read_p2p_send_blocks(const std::string& id, const CheckedState& s);

std::string read_multi_child(const std::string& id, const CheckedState& s);
std::string read_multi_child_name(const std::string& id, const CheckedState& s);

}  // namespace kvsim
