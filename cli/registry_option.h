#pragma once
// --registry FILE, shared by the subcommands that classify findings.
#include <string>

#include "properties/findings/registry.h"

namespace kvsim::cli {

// The built-in registry for an empty path, else the file's, kept for the process. On a bad file
// prints its one-line error ("FILE:LINE: FIELD: MESSAGE"), sets *failure to the input-error exit
// code and returns nullptr.
const Registry* registry_from_option(const std::string& path, int* failure);

}  // namespace kvsim::cli
