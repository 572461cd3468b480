#include "cli/registry_option.h"

#include <iostream>
#include <map>

#include "properties/findings/classify.h"
#include "properties/harness/exit_codes.h"
#include "sim/trace/input_error.h"

namespace kvsim::cli {

const Registry* registry_from_option(const std::string& path, int* failure) {
    static std::map<std::string, Registry> loaded;
    try {
        if (path.empty()) return &builtin_registry();
        if (auto it = loaded.find(path); it != loaded.end()) return &it->second;
        return &loaded.emplace(path, load_registry(path)).first->second;
    } catch (const InputError& bad) {
        std::cerr << "kvsim: " << bad.what() << "\n";
        *failure = exit_code::kInputError;
        return nullptr;
    }
}

std::vector<std::string> causes_of_run(const Registry& registry, const Trace& trace, const Variant& variant,
                                       const RunResult& result) {
    return expectation_causes(classify(registry, trace, variant, result));
}

}  // namespace kvsim::cli
