#!/bin/bash
# The GPU path of the just-built component, on a machine without a GPU:
#   1. with the real CUDA runtime and NCCL and no device, the component
#      loads, says the GPU path is off, and host results are unchanged;
#   2. with tests/fake_cuda's libcudart.so.13 and libnccl.so.2 put first
#      through LD_LIBRARY_PATH (device memory the host cannot touch, stream
#      work deferred to synchronization, NCCL's pairing rules checked), the
#      correctness program runs on device buffers (--device, --device-mixed)
#      at np 1..4 with auto and every algorithm forced, asserting through
#      MPI_T which path ran: NCCL, or staged through pinned host memory (NCCL
#      off, a shared device that NCCL refuses) over ob1 and the UCX PML;
#   3. (as root) the same across the hosts of an emulated cluster, the fake
#      NCCL talking TCP between network namespaces.
# Environment (set by make check): TOPOAR_BUILDDIR, TOPOAR_SRCDIR,
# TOPOAR_COMPONENT_DIR, OMPI_PKGLIBDIR, MPIRUN.
set -u
build=${TOPOAR_BUILDDIR:?run through make check}
src=${TOPOAR_SRCDIR:?run through make check}
bin="$build/tests/mpi/test_allreduce"
fake="$build/tests/fake_cuda/fake"
cudalib="$build/cuda/libtopoar_cuda.so"
path="${OMPI_PKGLIBDIR:?}:${TOPOAR_COMPONENT_DIR:?}"
mpirun=${MPIRUN:-mpirun}

if [ ! -f "$cudalib" ] || [ ! -f "$fake/libcudart.so.13" ] || [ ! -f "$fake/libnccl.so.2" ]; then
    echo "SKIP: built without CUDA/NCCL ($cudalib, $fake/libcudart.so.13, $fake/libnccl.so.2)"
    exit 77
fi
logdir=$(mktemp -d /tmp/topoar-gpu-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1
     --mca mca_base_component_path "$path" --mca coll topoar,tuned,libnbc,basic,self
     --mca coll_topoar_cuda_library "$cudalib")
# The fakes first; every rank its own fake device (NCCL's rule), leaks fatal.
fakeenv=(-x LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" -x FAKECUDA_DEVICES=8
         -x FAKECUDA_CHECK_LEAKS=1)

passed=0 failed=0
check() {  # check NAME PATTERN COMMAND...: exit 0 and output matching PATTERN
    local name=$1 pattern=$2; shift 2
    local log="$logdir/run.log" t0=$SECONDS
    if "$@" >"$log" 2>&1 && grep -qE -- "$pattern" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1)); echo "FAIL: $name"; grep -v "^run case" "$log" | tail -n 25 | sed 's/^/    /'
    fi
}

# 1. Real CUDA, no driver: off, and the host path as before.
check "real CUDA without a device: GPU path off, host results unchanged" \
    "GPU path off: no usable CUDA device.*|0 failed" \
    "${mpi[@]}" -np 2 --mca coll_topoar_verbose 10 "$bin" --quick
grep -q "GPU path off: no usable CUDA device" "$logdir/run.log" ||
    { failed=$((failed + 1)); echo "FAIL: the real runtime's missing device was not reported"; }

# 2. The fake runtime, one host.
check "fake: the GPU path is on" "GPU path on .*NCCL" \
    "${mpi[@]}" "${fakeenv[@]}" -np 2 --mca coll_topoar_verbose 10 "$bin" --quick --device
for np in 1 2 3 4; do
    check "fake: device buffers, auto, np=$np" " 0 failed" \
        "${mpi[@]}" "${fakeenv[@]}" -np $np --mca coll_topoar_single_node_fallback 0 \
        "$bin" --quick --device --expect-topoar --expect-path nccl
done
for alg in ring leader flexreduce hring tree; do
    check "fake: device buffers, $alg over NCCL, np=3" " 0 failed" \
        "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_allreduce_algorithm $alg \
        "$bin" --quick --device --expect-topoar --expect-path nccl
done
check "fake: device buffers, nccl forced (ncclAllReduce, the built-in plan for other pairs), np=3" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_allreduce_algorithm nccl \
    "$bin" --quick --device --expect-topoar --expect-path nccl
check "fake: host buffers with nccl forced: handed down, np=3" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_allreduce_algorithm nccl "$bin" --quick
check "fake: mixed host/device buffers, np=3" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_single_node_fallback 0 \
    "$bin" --quick --device-mixed --expect-topoar --expect-path nccl
check "fake: device buffers with auto's one-host hand-down (staged), np=4" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 4 "$bin" --quick --device
check "fake: check_mem_type, np=3" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_check_mem_type 1 "$bin" --quick --device-mixed
for pml in ob1 ucx; do
    extra=()
    [ $pml = ucx ] && extra=(--mca pml_ucx_tls any --mca pml_ucx_devices any)
    check "fake: NCCL off, staged over pml $pml, tree, np=3" " 0 failed" \
        "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca pml $pml "${extra[@]}" --mca coll_topoar_nccl 0 \
        --mca coll_topoar_allreduce_algorithm tree "$bin" --quick --device --expect-topoar --expect-path staged
done
check "fake: two ranks on one device, NCCL refuses, staged, np=3" "NCCL off on this communicator.*Duplicate GPU" \
    "${mpi[@]}" -x LD_LIBRARY_PATH="$fake" -x FAKECUDA_DEVICES=1 -np 3 --mca coll_topoar_verbose 1 \
    --mca coll_topoar_single_node_fallback 0 "$bin" --quick --device --expect-topoar --expect-path staged

# 3. Two emulated hosts (2 + 3 ranks): the fake NCCL over TCP between them.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null; then
    tc="$src/tests/cluster/topoar-cluster"
    name="gt$$"; name=${name:0:10}
    trap '"$tc" down --name "$name" >/dev/null 2>&1; rm -rf "$logdir"' EXIT
    if "$tc" up --name "$name" --nodes 2,3 --node-rate 1gbit >"$logdir/up.log" 2>&1; then
        for alg in auto flexreduce; do
            check "emulated 2+3 hosts: device buffers, $alg over the fake NCCL" " 0 failed" \
                timeout -k 10 300 "$tc" run --name "$name" -- \
                --mca mca_base_component_path "$path" --mca coll topoar,tuned,libnbc,basic,self \
                --mca coll_topoar_cuda_library "$cudalib" --mca coll_topoar_rack_file @RACKFILE@ \
                --mca coll_topoar_allreduce_algorithm $alg "${fakeenv[@]}" \
                "$bin" --quick --device --expect-topoar --expect-path nccl
        done
        check "emulated 2+3 hosts: device buffers staged over the network" " 0 failed" \
            timeout -k 10 300 "$tc" run --name "$name" -- \
            --mca mca_base_component_path "$path" --mca coll topoar,tuned,libnbc,basic,self \
            --mca coll_topoar_cuda_library "$cudalib" --mca coll_topoar_rack_file @RACKFILE@ \
            --mca coll_topoar_nccl 0 "${fakeenv[@]}" "$bin" --quick --device --expect-topoar --expect-path staged
        "$tc" down --name "$name" >/dev/null 2>&1
    else
        failed=$((failed + 1)); echo "FAIL: emulated cluster up"; tail -5 "$logdir/up.log"
    fi
else
    echo "SKIP: emulated cluster (needs root, ip, tc)"
fi

echo "run-gpu-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
