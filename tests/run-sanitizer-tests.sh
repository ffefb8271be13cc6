#!/bin/bash
# The component built a second time with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC), in a temporary build tree, and the MPI
# correctness program (tests/mpi/test_allreduce --quick) and the thread
# test (tests/mpi/test_threads) run against it on a small matrix: auto and
# a few forced algorithms at np 1..4, the fallback and bad-input cases of
# run-mpi-tests.sh that are cheap.  Fails on any ASan error, any UB (fatal:
# -fno-sanitize-recover), and any leak whose allocation stack has a topoar
# frame; leaks entirely inside Open MPI and the libraries it brings are
# tolerated (tests/sanitizer/lsan.supp says how, and why LSan's own
# suppressions cannot be used for that).
#
# Open MPI is not built with ASan, so the runtime is preloaded into every
# MPI process (mpirun -x LD_PRELOAD=libasan.so); the component is preloaded
# too, so its frames are still symbolized when LSan reports at exit (Open
# MPI dlcloses components in MPI_Finalize and 4.1 cannot be told not to).
#
# Environment (set by make check): TOPOAR_SRCDIR, OMPI_PKGLIBDIR, MPIRUN.
# TOPOAR_SANITIZER_DIR=DIR builds in DIR instead of a temporary folder,
# keeps it, and on the next run only rebuilds what changed (for working on
# a failure by hand).  Skips (77) when the compiler has no ASan/UBSan
# runtime.  TOPOAR_SANITIZER_ONLY=REGEX runs only the checks it matches.
#
# -Og -g1 rather than -O1 -g: the compile is most of this test's time, and
# with UBSan GCC 12 compiles the engine 2.2 times faster at -Og than at -O1
# (and -g1, line tables and function names, all a report needs, a third
# faster than -g); every check is still there.
set -u
src=${TOPOAR_SRCDIR:?run through make check}
src=$(cd "$src" && pwd)
mpirun=${MPIRUN:-mpirun}
pkglib=${OMPI_PKGLIBDIR:?run through make check}
cc=${CC:-gcc}
cxx=${CXX:-g++}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1 -Og"
t_start=$SECONDS

asan_rt=$("$cc" -print-file-name=libasan.so)
ubsan_rt=$("$cc" -print-file-name=libubsan.so)
if [ ! -f "$asan_rt" ] || [ ! -f "$ubsan_rt" ]; then
    echo "SKIP: $cc has no ASan/UBSan runtime (libasan.so: '$asan_rt', libubsan.so: '$ubsan_rt'); on Debian: apt-get install libasan8 libubsan1"
    exit 77
fi
if [ -f "$src/config.status" ]; then
    echo "SKIP: $src is configured in place; a second build tree needs a clean source tree (make distclean there, build in a folder such as _build)"
    exit 77
fi
if [ -n "${TOPOAR_SANITIZER_DIR:-}" ]; then
    tmp=$TOPOAR_SANITIZER_DIR
    mkdir -p "$tmp"
    echo "run-sanitizer-tests: building in $tmp (kept)"
else
    tmp=$(mktemp -d /tmp/san-build.XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
fi
if ! echo 'int main(void) { return 0; }' | "$cc" $flags -x c - -o "$tmp/probe" 2>"$tmp/probe.log" ||
   ! "$tmp/probe"; then
    echo "SKIP: $cc cannot build and run a program with $flags:"; sed 's/^/    /' "$tmp/probe.log"
    exit 77
fi

# ---- build: the engine, the component, the MPI test programs -------------
build="$tmp/build" prefix="$tmp/prefix"
mkdir -p "$build"
step() {  # step NAME COMMAND...: run quietly, show the log's tail on failure
    local name=$1; shift
    if ! "$@" >"$tmp/$name.log" 2>&1; then
        echo "FAIL: sanitizer build: $name"; tail -n 30 "$tmp/$name.log" | sed 's/^/    /'
        exit 1
    fi
}
t0=$SECONDS
# a build of its own: nothing from the make that runs this test (make
# check's command-line variables such as CFLAGS, its jobserver)
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
[ -f "$build/Makefile" ] || step configure sh -c 'cd "$1" && "$2/configure" --prefix="$3" --without-cuda --without-nccl \
    CC="$5" CXX="$6" CFLAGS="$4" CXXFLAGS="$4"' _ "$build" "$src" "$prefix" "$flags" "$cc" "$cxx"
step build-engine make -C "$build/common" -j2
step build-component make -C "$build/ompi_coll_topoar" -j2 install
step build-tests make -C "$build/tests" -j2 mpi/test_allreduce mpi/test_threads
echo "run-sanitizer-tests: built with $flags in $((SECONDS - t0)) s"
component="$prefix/lib/openmpi/mca_coll_topoar.so"
[ -f "$component" ] || { echo "FAIL: $component was not installed"; exit 1; }

# ---- runs ------------------------------------------------------------------
bin="$build/tests/mpi/test_allreduce"
threads="$build/tests/mpi/test_threads"
logs="$tmp/logs"
mkdir -p "$logs"
# Per app context (mpirun applies -x to the context it precedes).
san=(-x LD_PRELOAD="$asan_rt:$component"
     # full stacks for leaks (Open MPI has no frame pointers: the fast
     # unwinder would stop at its first frame)
     -x ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0:detect_stack_use_after_return=1"
     # leaks are judged below from the report, so LSan itself exits 0
     -x LSAN_OPTIONS="exitcode=0:max_leaks=0"
     # UB is reported on stderr (the ASan runtime ignores UBSan's log_path)
     -x UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none
     --mca mpi_yield_when_idle 1 --mca btl self,vader
     --mca mca_base_component_path "$pkglib:$prefix/lib/openmpi"
     --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}" "${san[@]}")

# A frame of topoar: its functions (topoar::, topoar_*, mca_coll_topoar_*)
# or its sources (static C functions, anonymous namespaces).  Not the
# module name: the in-process symbolizer maps mca_coll_topoar.so's file
# (debug info) into the address range of components Open MPI unloaded at
# MPI_Finalize, so their frames print as "mca_coll_topoar.so+0x1f...".
src_re=$(printf '%s' "$src" | sed 's/[][\\.^$*+?(){}|]/\\&/g')
ours="in (topoar::|topoar_|mca_coll_topoar_)| $src_re/(common|ompi_coll_topoar)/"
# Libraries whose own leaks are tolerated: the leak: lines of lsan.supp;
# and frames of unloaded modules (topoar's is preloaded, never unloaded).
outside="<unknown module>|$(sed -n 's/^leak://p' "$src/tests/sanitizer/lsan.supp" | sed 's/[.]/\\./g' | paste -sd'|')"

# verdict: what the sanitizers wrote for one run; prints problems, 1 if any.
verdict() {
    local bad=0 f
    for f in "$logs"/asan.*; do
        [ -f "$f" ] || continue
        if grep -qE "ERROR: AddressSanitizer" "$f"; then
            echo "    sanitizer error in $(basename "$f"):"; grep -vE "^\s*$" "$f" | head -n 40 | sed 's/^/    /'
            bad=1
        fi
        # the patterns through the environment: awk -v would eat backslashes
        if ! OURS=$ours OUTSIDE=$outside FILE=$(basename "$f") awk '
            function flush() {
                if (!inrec) return
                if (mine) { print "    leak with a topoar frame (" ENVIRON["FILE"] "):\n" rec; bad = 1 }
                else if (!known) {
                    print "    leak outside the libraries lsan.supp tolerates (" ENVIRON["FILE"] "):\n" rec
                    bad = 1
                }
                inrec = 0
            }
            /^(Direct|Indirect) leak of/ { flush(); inrec = 1; rec = "      " $0; mine = 0; known = 0; next }
            inrec && /^ *#[0-9]+ / {
                rec = rec "\n      " $0
                if ($0 ~ ENVIRON["OURS"]) mine = 1
                if ($0 ~ ENVIRON["OUTSIDE"]) known = 1
                next
            }
            { flush() }
            END { flush(); exit bad }' "$f"; then
            bad=1
        fi
    done
    return $bad
}

passed=0 failed=0
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
# check NAME PATTERN COMMAND...: exits 0, prints PATTERN, sanitizers silent.
check() {
    local name=$1 pattern=$2; shift 2
    local out="$tmp/run.out" t0=$SECONDS ok=1
    [[ "$name" =~ ${TOPOAR_SANITIZER_ONLY:-.} ]] || return 0
    rm -f "$logs"/*
    "$@" >"$out" 2>&1 || ok=0
    grep -qE -- "$pattern" "$out" || ok=0
    verdict >"$tmp/verdict" 2>&1 || ok=0
    # UB, and anything from a process that missed the options, is on the
    # job's output
    if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$out"; then
        { echo "    sanitizer report on the job's output:"
          grep -m1 -A25 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$out" | sed 's/^/    /'; } >>"$tmp/verdict"
        ok=0
    fi
    if [ $ok = 1 ]; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else
        fail_line "$name"
        head -n 60 "$tmp/verdict"
        grep -vE "^\s*$" "$out" | tail -n 15 | sed 's/^/    /'
    fi
}
sn0=(--mca coll_topoar_single_node_fallback 0)

for np in 1 2 3; do
    check "asan+ubsan: auto np=$np" " 0 failed" \
        "${mpi[@]}" "${sn0[@]}" -np "$np" "$bin" --quick --expect-topoar
done
for alg_np in ring:3 leader:3 hring:4 flexreduce:2 tree:3; do
    alg=${alg_np%:*} np=${alg_np#*:}
    check "asan+ubsan: $alg np=$np" " 0 failed" \
        "${mpi[@]}" "${sn0[@]}" --mca coll_topoar_allreduce_algorithm "$alg" -np "$np" "$bin" --quick --expect-topoar
done
check "asan+ubsan: segment_size=64 pipeline_size=200 tree np=3" " 0 failed" \
    "${mpi[@]}" --mca coll_topoar_segment_size 64 --mca coll_topoar_pipeline_size 200 \
    --mca coll_topoar_allreduce_algorithm tree -np 3 "$bin" --quick --expect-topoar
check "asan+ubsan: auto hands single-host communicators down np=3" "passed down \(auto on a single-node" \
    "${mpi[@]}" --mca coll_topoar_verbose 50 -np 3 "$bin" --quick
check "asan+ubsan: mismatched segment_size falls back" "coll_topoar_segment_size differs across ranks.* 0 failed" \
    bash -c '"$@" 2>&1 | tr "\n" " "' _ "${mpi[@]}" "${sn0[@]}" \
    -np 1 env OMPI_MCA_coll_topoar_segment_size=4096 "$bin" --quick : "${san[@]}" -np 1 "$bin" --quick
check "asan+ubsan: unreadable topology file falls back" "set-up failed .*/nonexistent/topo" \
    "${mpi[@]}" --mca coll_topoar_topology_file /nonexistent/topo -np 2 "$bin" --quick
printf 'vm rack0\nthis line is wrong bw=fast\n' >"$tmp/bad-rack"
check "asan+ubsan: malformed rack file falls back" "set-up failed .*bad-rack:2" \
    "${mpi[@]}" --mca coll_topoar_rack_file "$tmp/bad-rack" -np 2 "$bin" --quick
check "asan+ubsan: bad model_margin falls back" "set-up failed .*coll_topoar_model_margin '150%'" \
    "${mpi[@]}" --mca coll_topoar_model_margin 150% -np 2 "$bin" --quick
check "asan+ubsan: MPI_THREAD_MULTIPLE, 4 threads np=2" " 0 failed" \
    "${mpi[@]}" "${sn0[@]}" -np 2 "$threads" --threads 4 --rounds 3 --calls 12 --expect-path host

echo "run-sanitizer-tests: took $((SECONDS - t_start)) s"
echo "run-sanitizer-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-sanitizer-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
