#include "properties/checkers/block_pool_checker.h"
#include "properties/checkers/lifecycle_checker.h"
#include "properties/checkers/request_state_checker.h"
#include "properties/checkers/store_save_computed_checker.h"

namespace kvsim {

std::vector<std::unique_ptr<Checker>> make_core_checkers() {
    std::vector<std::unique_ptr<Checker>> checkers;
    checkers.push_back(std::make_unique<BlockPoolChecker>());
    checkers.push_back(std::make_unique<RequestStateChecker>());
    checkers.push_back(std::make_unique<LifecycleChecker>());
    checkers.push_back(std::make_unique<StoreSaveComputedChecker>());
    return checkers;
}

}  // namespace kvsim
