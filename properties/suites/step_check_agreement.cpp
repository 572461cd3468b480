#include "properties/suites/step_check_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "properties/checkers/checker.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"

namespace kvsim::propgen {
namespace {

std::vector<std::string> described(const std::vector<Violation>& violations) {
    std::vector<std::string> out;
    for (const Violation& v : violations) out.push_back(describe(v));
    return out;
}

}  // namespace

std::string step_checks_disagree(const Trace& trace, const Variant& variant) {
    Engine engine(trace, variant);
    const auto incremental = make_core_checkers();
    const auto reference = make_core_checkers();
    for (int step = 0; step < trace.run.max_steps; ++step) {
        if (engine.quiet()) {
            if (engine.events_exhausted()) break;
            step = std::max(step, engine.next_event_step());
            if (step >= trace.run.max_steps) break;
        }
        try {
            engine.run_step(step);
        } catch (const UpstreamAssertion&) {
            break;
        } catch (const std::logic_error&) {
            break;
        }
        for (std::size_t c = 0; c < incremental.size(); ++c) {
            std::vector<Violation> judged, swept;
            incremental[c]->check_step(engine, judged, false);
            reference[c]->check(engine, swept);
            if (!judged.empty() && described(judged) != described(swept))
                return fmt::format("step {}: {} reported {} violation(s), the full sweep {}: first '{}'", step,
                                   incremental[c]->name(), judged.size(), swept.size(), describe(judged.front()));
        }
    }
    return {};
}

}  // namespace kvsim::propgen
