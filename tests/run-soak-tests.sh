#!/bin/bash
# Soak: tests/mpi/soak (communicator life cycles, then back-to-back small
# calls, every result checked, memory flat) with the just-built component:
#   - auto's default on one host (every call handed to tuned after set-up),
#     the full 10,000 cycles and 100,000 calls at np 3;
#   - topoar executing every call (forced tree), full counts at np 3;
#   - auto with single_node_fallback 0 (topoar executes; every set-up also
#     builds the cost-model table, about 1-4 ms a communicator here), 2,000
#     cycles and the full 100,000 calls at np 2.
# The full run of the last one (docs/testing.md) takes about a minute.
# glibc's per-thread cache is off (GLIBC_TUNABLES) so that "heap in use"
# counts only memory the program holds: the cache keeps up to ~230 KiB of
# freed blocks that mallinfo2 reports as in use, filling slowly.
# Environment (set by make check): TOPOAR_COMPONENT_DIR, OMPI_PKGLIBDIR,
# MPIRUN, TOPOAR_BUILDDIR.
set -u
build=${TOPOAR_BUILDDIR:?run through make check}
bin="$build/tests/mpi/soak"
mpirun=${MPIRUN:-mpirun}
path="${OMPI_PKGLIBDIR:?}:${TOPOAR_COMPONENT_DIR:?}"
logdir=$(mktemp -d /tmp/topoar-soak-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none
     --mca mpi_yield_when_idle 1 --mca btl self,vader
     --mca mca_base_component_path "$path"
     --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}"
     -x GLIBC_TUNABLES=glibc.malloc.tcache_count=0)

passed=0 failed=0
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
check() {  # check NAME COMMAND...: exits 0 and prints "0 failed"; the soak lines shown
    local name=$1; shift
    local log="$logdir/run.log" t0=$SECONDS
    if "$@" >"$log" 2>&1 && grep -q "soak: 3 passed, 0 failed" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
        grep -E "^soak: .*(cycles|allreduces): [0-9]+ in" "$log" | sed 's/^/    /'
    else
        fail_line "$name"; tail -n 25 "$log" | sed 's/^/    /'
    fi
}

check "soak: auto hands down (default), np=3, 10000 cycles, 100000 calls" \
    "${mpi[@]}" -np 3 "$bin" --expect-path down
check "soak: tree executed by topoar, np=3, 10000 cycles, 100000 calls" \
    "${mpi[@]}" --mca coll_topoar_allreduce_algorithm tree -np 3 "$bin" --expect-path host
check "soak: auto executed by topoar, np=2, 2000 cycles, 100000 calls" \
    "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 -np 2 "$bin" --cycles 2000 --expect-path host

echo "run-soak-tests: took $SECONDS s"
echo "run-soak-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-soak-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
