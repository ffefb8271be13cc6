#!/bin/bash
# MPI_THREAD_MULTIPLE: tests/mpi/test_threads (4 threads per rank, each on
# its own communicators, set-ups and calls racing) with the just-built
# component, under auto and forced algorithms, asserting through MPI_T that
# topoar executed every call (or, auto's default on one host, none); and
# with nonblocking calls first on every communicator (--nb-first), so that
# nonblocking set-ups finished by other threads' progress race the
# communicator's own blocking calls.
# Skips (77) when the MPI library does not provide MPI_THREAD_MULTIPLE.
# Environment (set by make check): TOPOAR_COMPONENT_DIR, OMPI_PKGLIBDIR,
# MPIRUN, TOPOAR_BUILDDIR.
set -u
build=${TOPOAR_BUILDDIR:?run through make check}
bin="$build/tests/mpi/test_threads"
mpirun=${MPIRUN:-mpirun}
path="${OMPI_PKGLIBDIR:?}:${TOPOAR_COMPONENT_DIR:?}"
logdir=$(mktemp -d /tmp/topoar-thread-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none
     --mca mpi_yield_when_idle 1 --mca btl self,vader
     --mca mca_base_component_path "$path"
     --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}")

out="$logdir/probe.log"
"${mpi[@]}" -np 1 "$bin" --threads 1 --rounds 0 --calls 1 >"$out" 2>&1
if grep -q "^SKIP" "$out"; then
    grep "^SKIP" "$out"
    exit 77
fi

passed=0 failed=0
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
check() {  # check NAME COMMAND...: exits 0 and prints " 0 failed"
    local name=$1; shift
    local log="$logdir/run.log" t0=$SECONDS
    if "$@" >"$log" 2>&1 && grep -q " 0 failed" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else
        fail_line "$name"; tail -n 25 "$log" | sed 's/^/    /'
    fi
}
sn0=(--mca coll_topoar_single_node_fallback 0)

check "threads: auto np=2" "${mpi[@]}" "${sn0[@]}" -np 2 "$bin" --expect-path host
check "threads: auto np=3" "${mpi[@]}" "${sn0[@]}" -np 3 "$bin" --expect-path host
for alg in tree hring; do
    check "threads: $alg np=3" \
        "${mpi[@]}" --mca coll_topoar_allreduce_algorithm "$alg" -np 3 "$bin" --expect-path host
done
check "threads: tiny segments (segment_size=64) ring np=2" \
    "${mpi[@]}" --mca coll_topoar_segment_size 64 --mca coll_topoar_allreduce_algorithm ring \
    -np 2 "$bin" --rounds 2 --calls 12 --expect-path host
check "threads: auto hands down (default) np=2" "${mpi[@]}" -np 2 "$bin" --expect-path down
# Nonblocking calls first on every communicator (--nb-first): the set-up
# runs as a nonblocking allgather that any thread's progress may finish
# while the communicator's thread is already in its first blocking call.
# Before the fix (finish_setup published the state before preparing the
# queued calls on the engine) about half of such runs failed, hung or
# crashed; six runs, each under a timeout.
for spec in "tree 2 1" "ring 3 2" "auto 3 3" "tree 4 4" "ring 2 5" "auto 4 6"; do
    set -- $spec
    algopt=(); [ "$1" != auto ] && algopt=(--mca coll_topoar_allreduce_algorithm "$1")
    check "threads: nonblocking first, $1 np=$2 seed $3" timeout -k 5 40 \
        "${mpi[@]}" "${sn0[@]}" "${algopt[@]}" -np "$2" "$bin" --nb-first 4 --seed "$3" --expect-path host
done
# The same with the first calls handed to libnbc (--nb-down: a
# non-commutative user op): topoar's blocking set-up runs while they are
# outstanding and other threads' progress advances them.
check "threads: libnbc calls first, tree np=3" timeout -k 5 40 \
    "${mpi[@]}" "${sn0[@]}" --mca coll_topoar_allreduce_algorithm tree -np 3 "$bin" --nb-first 4 --nb-down \
    --expect-path host
check "threads: libnbc calls first, auto np=4" timeout -k 5 40 \
    "${mpi[@]}" "${sn0[@]}" -np 4 "$bin" --nb-first 4 --nb-down --expect-path host

echo "run-thread-tests: took $SECONDS s"
echo "run-thread-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-thread-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
