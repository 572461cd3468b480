#pragma once
// What the property suites share: running a property under Catch2 with the settings of
// rc_support.h, and the clean-preset property of one invariant family.
#include <string>

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "properties/generators/rc_support.h"
#include "properties/generators/trace_gen.h"

namespace kvsim::propgen {

// Runs the property with rc_settings(default_cases) and fails the current Catch2 test with
// RapidCheck's report (the shrunk counterexample as a trace, what failed, the reproduction
// command, the RapidCheck seed). With KVSIM_RC_ARTIFACTS=DIR the counterexample is also
// written to DIR/<name>.trace. Prints one summary line (cases, known findings met).
template <class Testable>
void require_property(const std::string& name, int default_cases, Testable&& testable);

// The invariant families (tests/README.md, Property tests) over one clean preset: no finding of `family` (Family::other: no
// finding at all, i.e. the verdict is pass: every request finished, every pin released) other
// than a known finding (properties/findings/known_findings.txt).
void check_family_property(Family family, const std::string& variant, int default_cases);

// Implementation details of require_property.
void report_property(const std::string& name, const RcSettings& settings, const rc::detail::TestResult& result);

template <class Testable>
void require_property(const std::string& name, int default_cases, Testable&& testable) {
    const RcSettings settings = rc_settings(default_cases);
    const auto result = check_property(name, settings, std::forward<Testable>(testable));
    report_property(name, settings, result);
}

}  // namespace kvsim::propgen
