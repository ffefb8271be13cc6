#!/bin/sh
# run-np.sh - run the MPI_Allreduce correctness test for np = 1..8.
#
# usage: tests/mpi/run-np.sh [test options: --quick --expect-topoar ...]
#
# environment:
#   MPIRUN       mpirun prefix (default: mpirun --allow-run-as-root
#                --oversubscribe --mca mpi_yield_when_idle 1)
#   MPIRUN_ARGS  extra mpirun arguments, e.g. the topoar component selection:
#                "--mca mca_base_component_path /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PREFIX/lib/openmpi
#                 --mca coll topoar,tuned,libnbc,basic,self"
#   NP_LIST      rank counts to run (default: "1 2 3 4 5 6 7 8")
#   TEST_BIN     prebuilt test binary (default: built here with $MPICC)
#   MPICC        compiler wrapper (default: mpicc)
#   RUN_TIMEOUT  seconds allowed per run (default: 600), needs timeout(1)
#
# Prints each run's summary, then one line:
#   run-np: N passed, M failed (R of K runs failed)
# and exits nonzero if any case or run failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
MPIRUN=${MPIRUN:-"mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1"}
MPIRUN_ARGS=${MPIRUN_ARGS:-}
NP_LIST=${NP_LIST:-"1 2 3 4 5 6 7 8"}
MPICC=${MPICC:-mpicc}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/topoar-run-np.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ -z "${TEST_BIN:-}" ]; then
    TEST_BIN=$tmp/test_allreduce
    if ! $MPICC -std=c99 -O2 -Wall -o "$TEST_BIN" "$here/test_allreduce.c" -lm; then
        echo "run-np: build of test_allreduce.c failed"
        exit 2
    fi
fi

to=
if command -v timeout >/dev/null 2>&1; then to="timeout $RUN_TIMEOUT"; fi

passed=0 failed=0 runs=0 badruns=0
for np in $NP_LIST; do
    runs=$((runs + 1))
    log=$tmp/np$np.log
    # shellcheck disable=SC2086 # MPIRUN and MPIRUN_ARGS are word lists
    $to $MPIRUN $MPIRUN_ARGS -np "$np" "$TEST_BIN" "$@" >"$log" 2>&1
    rc=$?
    grep '^FAIL' "$log" | sed "s/^/np=$np: /"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$summary" ]; then
        echo "np=$np: no summary line (exit status $rc); last output:"
        tail -n 20 "$log" | sed "s/^/np=$np:   /"
        badruns=$((badruns + 1))
        continue
    fi
    p=${summary%% passed*}
    f=${summary#*passed, }
    f=${f%% failed*}
    passed=$((passed + p))
    failed=$((failed + f))
    grep '^note:' "$log" >>"$tmp/notes"
    extra=$(grep -E '^topoar last_algorithm' "$log" | tr '\n' ' ')
    echo "np=$np: $summary (exit status $rc) $extra"
    if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then badruns=$((badruns + 1)); fi
done

[ -f "$tmp/notes" ] && sort -u "$tmp/notes"
echo "run-np: $passed passed, $failed failed ($badruns of $runs runs failed)"
[ "$badruns" -eq 0 ] && [ "$failed" -eq 0 ]
