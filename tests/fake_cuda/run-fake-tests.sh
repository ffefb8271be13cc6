#!/bin/bash
# Runs the fake CUDA/NCCL tests (tests/fake_cuda/); builds nothing.
#   FAKE_BUILDDIR  the build folder holding fake/ and the test programs
#                  (default: this script's folder)
#   MPIRUN         mpirun to use (default: mpirun on PATH)
# Exit status: 0 when every test passed, 1 otherwise, 77 (skip) when the
# programs are not built.
set -u
dir=${FAKE_BUILDDIR:-$(dirname "$(readlink -f "$0")")}
mpirun=${MPIRUN:-mpirun}
if [[ ! -x $dir/test_fake_cuda || ! -f $dir/fake/libcudart.so.13 ]]; then
    echo "run-fake-tests: $dir/test_fake_cuda or $dir/fake/libcudart.so.13 not built (make -C tests/fake_cuda fakes)" >&2
    exit 77
fi
export LD_LIBRARY_PATH="$dir/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0
ok()  { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# the programs are linked against the real libraries; the fakes must win
if LD_LIBRARY_PATH=$LD_LIBRARY_PATH ldd "$dir/test_fake_cuda" | grep -q "=> $dir/fake/libcudart.so.13"; then
    ok "test_fake_cuda resolves libcudart.so.13 to the fake"
else
    bad "test_fake_cuda does not resolve libcudart.so.13 to $dir/fake"
fi

# the runtime test, with leak checking on (it must free everything)
if FAKECUDA_DEVICES=2 FAKECUDA_CHECK_LEAKS=1 timeout 120 "$dir/test_fake_cuda" >"$dir/test_fake_cuda.log" 2>&1; then
    ok "test_fake_cuda"
else
    bad "test_fake_cuda (log: $dir/test_fake_cuda.log)"
    grep -E "FAILED|LEAK" "$dir/test_fake_cuda.log"
fi

if [[ -x $dir/test_fake_nccl && -f $dir/fake/libnccl.so.2 ]]; then
    mpi=(timeout 180 "$mpirun" --oversubscribe --mca mpi_yield_when_idle 1
         -x LD_LIBRARY_PATH -x FAKECUDA_DEVICES=4 -x FAKECUDA_CHECK_LEAKS=1)
    for np in 2 3 4; do
        log=$dir/test_fake_nccl.np$np.log
        if "${mpi[@]}" -np $np "$dir/test_fake_nccl" >"$log" 2>&1 && grep -q "all checks passed" "$log"; then
            ok "test_fake_nccl, $np ranks"
        else
            bad "test_fake_nccl, $np ranks (log: $log)"
            grep -E "FAILED|FATAL|LEAK" "$log"
        fi
    done
    # expected failure: a send of 10 floats met by a receive of 8
    log=$dir/test_fake_nccl.mismatch.log
    if "${mpi[@]}" -np 2 "$dir/test_fake_nccl" mismatch >"$log" 2>&1; then
        bad "test_fake_nccl mismatch: the job succeeded, the mismatch went unnoticed (log: $log)"
    elif grep -q "send/recv mismatch on comm .*: rank 0 called ncclSend(count=10, float32) to rank 1 .* ncclRecv(count=8, float32) from rank 0" "$log"; then
        ok "test_fake_nccl mismatch: the job failed with the fake's message"
    else
        bad "test_fake_nccl mismatch: failed without the expected message (log: $log)"
    fi
    # expected failure: ncclReduceScatter of 10 elements per rank met by 8
    log=$dir/test_fake_nccl.mismatch-rs.log
    if "${mpi[@]}" -np 2 "$dir/test_fake_nccl" mismatch-rs >"$log" 2>&1; then
        bad "test_fake_nccl mismatch-rs: the job succeeded, the mismatch went unnoticed (log: $log)"
    elif grep -q "collective mismatch on comm .*ncclReduceScatter(count=10, float32, op=sum, root=0) as its collective #1, but rank [01] called ncclReduceScatter(count=8, float32" "$log" ||
         grep -q "collective mismatch on comm .*ncclReduceScatter(count=8, float32, op=sum, root=0) as its collective #1, but rank [01] called ncclReduceScatter(count=10, float32" "$log"; then
        ok "test_fake_nccl mismatch-rs: the job failed with the fake's message"
    else
        bad "test_fake_nccl mismatch-rs: failed without the expected message (log: $log)"
    fi
    log=$dir/test_fake_nccl.duplicate.log
    if "${mpi[@]}" -np 2 "$dir/test_fake_nccl" duplicate >"$log" 2>&1 && grep -q "all checks passed" "$log"; then
        ok "test_fake_nccl duplicate: both ranks on device 0 refused"
    else
        bad "test_fake_nccl duplicate (log: $log)"
    fi
else
    echo "SKIP: test_fake_nccl (not built: no NCCL)"
fi
exit $fail
