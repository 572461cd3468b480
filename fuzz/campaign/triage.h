#pragma once
// The work behind `kvsim triage`: each artifact (a trace text, e.g. a libFuzzer crash-<sha1> of
// kvsim_fuzz_trace) is replayed under the campaign's variant, classified against the registry of
// known findings, grouped by cause (a registry entry's id, or a new finding's signature),
// minimised keeping that classification (the first artifact of a cause), and written to
// OUT/<variant>/<id or signature>/ (trace, log, repro.txt, result.json, triage.json,
// original-<name>, and the views of the minimal trace's run: page.html = `kvsim run trace --html`,
// explain.txt = `kvsim explain trace`); later artifacts of the same cause are listed in its
// duplicates.txt.
#include <filesystem>
#include <string>
#include <vector>

#include "properties/findings/registry.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct TriageConfig {
    Variant variant;
    std::filesystem::path out_dir;  // findings root
    const Registry* registry = &builtin_registry();
    int max_runs = 4000;            // minimiser budget
    std::string kvsim = "kvsim";    // how the repro command names the binary
};

// The files of a finding directory a reader opens, relative to it; empty when absent (an artifact
// that is not a trace has no page and no explanation).
struct FindingFiles {
    std::string trace;    // the minimal trace
    std::string page;     // its run's self-contained HTML page
    std::string explain;  // its finding's causal slice as text
};

inline constexpr const char* kFindingTraceFile = "trace";
inline constexpr const char* kFindingPageFile = "page.html";
inline constexpr const char* kFindingExplainFile = "explain.txt";

enum class TriageStatus { new_finding, known, unreproduced };
std::string_view to_string(TriageStatus status);

struct TriagedArtifact {
    std::string cause_set() const;  // the causes joined with '+'

    std::string artifact;   // the path given
    TriageStatus status = TriageStatus::new_finding;
    std::string verdict;    // a run verdict, "internal-error", "input-error" or "pass"
    std::string signature;  // the run's, internal-error:<words>, or unreproduced:<kind>_<why>
    std::vector<std::string> causes;  // the registry's causes in removal order (known; new: those before the residue)
    std::string residue;    // status new with causes: the failure no entry explains after their fixes
    std::string cause;      // the directory name: the cause set when known, else the signature
    std::filesystem::path dir;
    FindingFiles files;     // what dir holds (also for a duplicate: the first artifact's files)
    bool first = false;     // this artifact wrote the finding directory (else a duplicate)
    bool minimised = false;
    std::size_t events_before = 0, events_after = 0;
    std::string repro;      // the command that replays the finding's trace
    std::string message;
};

// Triages one artifact; throws std::runtime_error when the finding cannot be written.
TriagedArtifact triage_artifact(const std::string& artifact, const TriageConfig& config);

// One JSON object (one line) for a campaign's triage summary file.
std::string triage_summary_line(const TriagedArtifact& t, const std::string& variant);

// "triage: NEW v0.30.0 crash:x <- crash-ab (9 -> 1 events)" and the like.
std::string triage_report_line(const TriagedArtifact& t, const std::string& variant);

}  // namespace kvsim
