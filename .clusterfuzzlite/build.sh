#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build script for kvsim (fuzz/README.md). Follows the OSS-Fuzz
# contract: compile with $CXX and $CXXFLAGS, link the fuzz targets with $LIB_FUZZING_ENGINE, and
# put into $OUT each target's binary, <target>_seed_corpus.zip (every corpus/**/*.trace),
# <target>.dict and <target>.options. Intermediate files go to $WORK.
#
# The source tree: $KVSIM_SRC when set; otherwise the tree this script sits in (run in place as
# .clusterfuzzlite/build.sh); otherwise the working directory (the Dockerfile's WORKDIR, where
# OSS-Fuzz runs $SRC/build.sh); otherwise $SRC/kvsim.
# scripts/fuzz-smoke runs this script locally (no Docker) with CXX=clang++-14.
#
# Two builds, as CMakePresets.json has them: with SANITIZER=address or undefined (project.yaml) the
# sanitizer build (the `fuzz` preset), kept for a share of the campaign and for replaying findings;
# with SANITIZER=none the throughput build (the `fuzz-fast` preset: libFuzzer's coverage, no
# sanitizer). In both, libFuzzer's comparison tracing is left out (-fsanitize=fuzzer-no-link becomes
# the coverage it implies without trace-cmp), since the .options set use_cmp=0;
# KVSIM_CMP_TRACING=1 keeps $CXXFLAGS as given. The coverage ignorelist (fuzz/coverage_ignorelist.txt:
# the standard library and the formatting code get no counters) is on; KVSIM_COVERAGE_IGNORELIST=OFF
# leaves it out.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -n "${KVSIM_SRC:-}" ]]; then
  src=$KVSIM_SRC
elif [[ -f "$here/../fuzz/CMakeLists.txt" ]]; then
  src=$(cd "$here/.." && pwd)
elif [[ -f "$PWD/fuzz/CMakeLists.txt" ]]; then
  src=$PWD
else
  src=$SRC/kvsim
fi
out=$(cd "$OUT" && pwd)
targets=(kvsim_fuzz_trace kvsim_fuzz_parser)
build=$WORK/kvsim-build

cxxflags=$CXXFLAGS
if [[ "${KVSIM_CMP_TRACING:-0}" != 1 ]]; then
  cxxflags=${cxxflags//-fsanitize=fuzzer-no-link/-fsanitize-coverage=inline-8bit-counters,pc-table}
fi

# No CMAKE_BUILD_TYPE: $CXXFLAGS alone set optimisation, debug info and instrumentation.
cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_CXX_FLAGS="$cxxflags" \
  -DKVSIM_FUZZ=ON \
  -DKVSIM_BUILD_TESTS=OFF \
  -DKVSIM_BENCH=OFF \
  -DKVSIM_COVERAGE_IGNORELIST="${KVSIM_COVERAGE_IGNORELIST:-ON}" \
  -DKVSIM_FUZZING_ENGINE="$LIB_FUZZING_ENGINE"
cmake --build "$build" --target "${targets[@]}"

# The seed corpus: every trace under corpus/, flattened (examples/01_x.trace -> examples_01_x.trace).
seeds=$WORK/kvsim-seeds
rm -rf "$seeds"
mkdir -p "$seeds"
while IFS= read -r -d '' trace; do
  rel=${trace#"$src/corpus/"}
  cp "$trace" "$seeds/${rel//\//_}"
done < <(find "$src/corpus" -name '*.trace' -type f -print0)

make_zip() {  # make_zip ZIP DIR: the files of DIR at the zip's top level
  rm -f "$1"
  if command -v zip >/dev/null 2>&1; then
    (cd "$2" && zip -q -X -r "$1" .)
  else
    python3 - "$1" "$2" <<'PY'
import os, sys, zipfile
out, root = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(root)):
        z.write(os.path.join(root, name), name)
PY
  fi
}

for target in "${targets[@]}"; do
  cp "$build/fuzz/$target" "$out/"
  cp "$src/fuzz/$target.dict" "$src/fuzz/$target.options" "$out/"
  make_zip "$out/${target}_seed_corpus.zip" "$seeds"
done
