#!/bin/bash
# The parsers under libFuzzer (tests/fuzz/, docs/fuzzing.md): builds the
# harnesses with clang (libFuzzer, AddressSanitizer, UBSan) into
# $TOPOAR_BUILDDIR/tests/fuzz-bin and runs each for a bounded time on a
# temporary copy of its checked-in corpus (tests/fuzz/corpus/HARNESS), so
# the corpus is never modified.  A crash, sanitizer report, broken
# invariant, slow input (over 10 s) or memory blow-up (over 2 GiB) fails the
# test; the input is kept in $TOPOAR_BUILDDIR/tests/fuzz-crashes/HARNESS/.
# Skipped (77) where clang cannot build libFuzzer programs.
# Environment (set by `make check`): TOPOAR_BUILDDIR, TOPOAR_SRCDIR.
#   TOPOAR_FUZZ_SECONDS    seconds per harness (default 20)
#   TOPOAR_FUZZ_HARNESSES  which ones (default: rules topology discovery units measured)
#   TOPOAR_FUZZ_CXX        the compiler (default clang++)
#   TOPOAR_FUZZ_JOBS       parallel compiles (default 2)
set -u
src=${TOPOAR_SRCDIR:?run through make check}
build=${TOPOAR_BUILDDIR:?run through make check}
cxx=${TOPOAR_FUZZ_CXX:-clang++}
seconds=${TOPOAR_FUZZ_SECONDS:-20}
harnesses=${TOPOAR_FUZZ_HARNESSES:-"rules topology discovery units measured"}
bin="$build/tests/fuzz-bin"
keep="$build/tests/fuzz-crashes"
tmp=$(mktemp -d /tmp/topoar-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# libFuzzer comes with clang (Debian: libclang-rt-14-dev, pulled in by clang).
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "SKIP: $cxx not found (Debian: apt-get install clang)"
    exit 77
fi
cat >"$tmp/probe.cpp" <<'EOF'
#include <stddef.h>
#include <stdint.h>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
EOF
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$tmp/probe.cpp" -o "$tmp/probe" >"$tmp/probe.log" 2>&1; then
    echo "SKIP: $cxx cannot build libFuzzer programs:"
    sed 's/^/    /' "$tmp/probe.log"
    exit 77
fi

t0=$SECONDS
mkdir -p "$bin"
targets=""
for h in $harnesses; do targets="$targets fuzz_$h"; done
# A make of its own: not the jobserver of a surrounding `make check`.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$bin" -f "$src/tests/fuzz/fuzz.mk" \
        TOP="$src" FUZZ_CXX="$cxx" -j"${TOPOAR_FUZZ_JOBS:-2}" $targets; then
    echo "FAIL: building the fuzz harnesses"
    exit 1
fi
echo "built$targets in $((SECONDS - t0)) s"

failed=0
for h in $harnesses; do
    corpus="$tmp/corpus-$h" artifacts="$tmp/artifacts-$h" log="$tmp/$h.log"
    mkdir -p "$corpus" "$artifacts"
    cp "$src/tests/fuzz/corpus/$h/"* "$corpus/"
    t1=$SECONDS
    # -error_exitcode: libFuzzer's default, 77, would read as "skipped".
    "$bin/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -error_exitcode=1 \
        -dict="$src/tests/fuzz/dict/$h.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
        "$corpus" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -eq 0 ] && [ -z "$(ls -A "$artifacts")" ]; then
        echo "PASS: fuzz_$h ($((SECONDS - t1)) s, ${runs:-?} inputs, corpus $(ls "$corpus" | wc -l) files)"
        continue
    fi
    failed=$((failed + 1))
    echo "FAIL: fuzz_$h (exit $rc)"
    grep -v '^#[0-9]' "$log" | tail -n 40 | sed 's/^/    /'
    mkdir -p "$keep/$h"
    for f in "$artifacts"/*; do
        [ -e "$f" ] || continue
        cp "$f" "$keep/$h/"
        echo "    input kept in $keep/$h/$(basename "$f") (rerun: $bin/fuzz_$h FILE):"
        od -A d -c "$f" | head -n 20 | sed 's/^/      /'
    done
done
echo "fuzzing took $((SECONDS - t0)) s in all"
[ $failed -eq 0 ]
