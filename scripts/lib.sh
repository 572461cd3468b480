# Helpers shared by the scripts in scripts/. Source it, do not run it:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Messages are prefixed with the calling script's name. Safe under `set -euo pipefail`.
# shellcheck shell=bash

lib_script_name=$(basename "$0")
kvsim_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# usage: prints the calling script's header comment (its lines 2.. up to the first line that is
# not a comment, without the leading '# ') to stderr and exits 64 (EX_USAGE).
usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit 64
}

# quietly CMD...: runs CMD with its output captured; shows the output only if CMD fails, and
# returns CMD's exit code.
quietly() {
  local log rc=0
  log=$(mktemp "${TMPDIR:-/tmp}/kvsim-$lib_script_name.XXXXXX")
  "$@" >"$log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "$lib_script_name: '$*' failed (exit $rc):" >&2
    cat "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}

# build_quietly PRESET [TARGET...]: configures and builds a CMake preset (only TARGETs when
# given) from the current directory, which must be the repository root; output only on failure.
build_quietly() {
  local preset=$1
  shift
  local targets=()
  (($# == 0)) || targets=(--target "$@")
  quietly cmake --preset "$preset" && quietly cmake --build --preset "$preset" "${targets[@]}"
}

# kvsim_binary [PRESET]: the path of the kvsim binary a preset builds (default: release).
kvsim_binary() {
  printf 'build/%s/kvsim\n' "${1:-release}"
}

# find_traces PATH...: every *.trace file under the PATHs (files or directories), one per line,
# in byte order (LC_ALL=C), so every machine lists them alike. Use:
#   mapfile -t traces < <(find_traces corpus)
find_traces() {
  find "$@" -type f -name '*.trace' | LC_ALL=C sort
}

# fuzz_trace_options: the libFuzzer flags of fuzz/kvsim_fuzz_trace.options that shape the search
# (entropic, use_counters, use_cmp, len_control, max_len), as "-key=value" words for a command line. libFuzzer
# reads a .options file only under ClusterFuzz: every local run (scripts/nightly, scripts/bench-fuzz)
# takes these from here, so that one file holds them.
fuzz_trace_options() {
  awk -F' *= *' '/^(entropic|use_counters|use_cmp|len_control|max_len) *=/ { printf "-%s=%s ", $1, $2 }' \
    "$kvsim_lib_dir/../fuzz/kvsim_fuzz_trace.options"
}

# print_tally LABEL PASSED FAILED: the summary line scripts/test collects, "LABEL: N passed, M failed".
print_tally() {
  echo "$1: $2 passed, $3 failed"
}
