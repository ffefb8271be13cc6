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
#      nccl_hier across emulated hosts (tests/gpu/fake-hosts.sh) at np
#      2..8; the CUDA-aware-MPI decision and the memory-type cache;
#   3. (as root) the same across the hosts of an emulated cluster, the fake
#      NCCL talking TCP between network namespaces.
# Environment (set by make check): TOPOAR_BUILDDIR, TOPOAR_SRCDIR,
# TOPOAR_COMPONENT_DIR, OMPI_PKGLIBDIR, MPIRUN; TOPOAR_NO_CLUSTER=1 skips
# part 3 (on a machine shared with other emulated clusters).
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
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
check() {  # check NAME PATTERN COMMAND...: exit 0 and output matching PATTERN
    local name=$1 pattern=$2; shift 2
    local log="$logdir/run.log" t0=$SECONDS
    if "$@" >"$log" 2>&1 && grep -qE -- "$pattern" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else
        fail_line "$name"; grep -v "^run case" "$log" | tail -n 25 | sed 's/^/    /'
    fi
}

check2() {  # check2 NAME PATTERN1 PATTERN2 COMMAND...: exit 0 and output matching both
    local name=$1 p1=$2 p2=$3; shift 3
    local log="$logdir/run.log" t0=$SECONDS
    if "$@" >"$log" 2>&1 && grep -qE -- "$p1" "$log" && grep -qE -- "$p2" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else
        fail_line "$name"; grep -v "^run case" "$log" | tail -n 25 | sed 's/^/    /'
    fi
}

# 1. Real CUDA, no driver: off, and the host path as before.
check "real CUDA without a device: GPU path off, host results unchanged" \
    "GPU path off: no usable CUDA device.*|0 failed" \
    "${mpi[@]}" -np 2 --mca coll_topoar_verbose 10 "$bin" --quick
grep -q "GPU path off: no usable CUDA device" "$logdir/run.log" ||
    { fail_line "the real runtime's missing device was not reported"; }

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
# Nonblocking and persistent calls on device buffers: staged through host
# memory and run by topoar (NCCL is for blocking calls), or on a one-host
# communicator that auto hands down, run blocking by the device path and
# returned complete (docs/nonblocking.md).
nbdev="$build/tests/gpu/nb_device"
for np in 2 3; do
    check2 "fake: nonblocking and persistent on device buffers, staged by topoar, np=$np" \
        "0 failed in all" "iallreduce of 100000 x MPI_FLOAT by topoar" \
        "${mpi[@]}" "${fakeenv[@]}" -np $np --mca coll_topoar_single_node_fallback 0 \
        --mca coll_topoar_verbose 50 "$nbdev"
done
check "fake: nonblocking on device buffers with auto's one-host hand-down, np=3" "0 failed in all" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 "$nbdev"
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

# nccl_hier across emulated hosts (tests/gpu/fake-hosts.sh gives each rank
# a host name for topoar's discovery; Open MPI and the fake NCCL still see
# one machine): uneven hosts at np 2..8, NCCL's reduce-scatter/all-gather
# on the per-host communicators (ncclCommSplit), the shard plans across
# them; the sub-communicators of the test (parity, without rank 0,
# reversed) make further layouts.  The path of every call is asserted:
# 8 for the pairs NCCL reduces, topoar's plan over NCCL for the others.
check "ompi_info lists nccl_hier" "7:\"nccl_hier\"" \
    env OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll topoar --level 9
hosts="$src/tests/gpu/fake-hosts.sh"
for spec in 1,1 2,1 1,3 2,3 3,2,1 4,3 1,4,3 3,3,2; do
    np=$(( ${spec//,/+} ))
    check "fake: nccl_hier forced, emulated hosts of $spec ranks, np=$np" " 0 failed" \
        timeout -k 10 300 "${mpi[@]}" "${fakeenv[@]}" -np $np --mca coll_topoar_allreduce_algorithm nccl_hier \
        "$hosts" "$spec" "$bin" --quick --device --expect-topoar --expect-path nccl_hier
done
check2 "fake: nccl_hier, chunked calls (coll_topoar_chunk_size 4000), hosts 2,3" \
    "nccl_hier" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 5 --mca coll_topoar_allreduce_algorithm nccl_hier \
    --mca coll_topoar_chunk_size 4000 "$hosts" 2,3 "$bin" --quick --device --expect-topoar --expect-path nccl_hier
# No room for the per-host NCCL communicator (nccl_max_comms 1: world's
# first NCCL communicator takes it): nccl_hier is off on that communicator,
# said at verbose 1, and its calls run the built-in plan (results checked).
check2 "fake: nccl_hier without its per-host communicator (nccl_max_comms 1): the built-in plan, reported" \
    "MPI_COMM_WORLD: nccl_hier off on this communicator.*nccl_max_comms" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 4 --mca coll_topoar_allreduce_algorithm nccl_hier --mca coll_topoar_verbose 1 \
    --mca coll_topoar_nccl_max_comms 1 "$hosts" 2,2 "$bin" --quick --device --expect-topoar
# auto: the device table (cost model) takes nccl_hier where it predicts it
# faster by the margin -- on two hosts of 3 PCIe GPUs for 64K-256K
# (docs/gpu.md); the 64 KiB calls of 8-bit types go there.
check2 "fake: auto chooses nccl_hier from the device table (hosts 3,3, gpu_link pcie)" \
    "-> nccl_hier \(cost model\)" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 6 --mca coll_topoar_gpu_link pcie --mca coll_topoar_verbose 20 \
    "$hosts" 3,3 "$bin" --quick --device --expect-topoar --expect-path nccl
# Without emulated hosts nccl_hier still runs (one host: NCCL's collectives
# inside it, nothing across); NCCL off: staged like any plan.
check "fake: nccl_hier forced on one host, np=3" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_allreduce_algorithm nccl_hier \
    "$bin" --quick --device --expect-topoar --expect-path nccl_hier
check "fake: nccl_hier forced, NCCL off: staged, hosts 2,1" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" -np 3 --mca coll_topoar_allreduce_algorithm nccl_hier --mca coll_topoar_nccl 0 \
    "$hosts" 2,1 "$bin" --quick --device --expect-topoar --expect-path staged

# CUDA-aware MPI underneath (coll_topoar_cuda_aware_mpi): Debian's Open MPI
# says no, so what topoar hands down is staged; "always" gives device
# pointers to the previous module as they are -- with the fake's device
# memory made host-accessible (what a CUDA-aware MPI can use) it works, with
# the usual PROT_NONE device memory tuned faults: proof they went unstaged.
# A topology file that cannot be read turns topoar off on every
# communicator, so every device call is handed down.
down=(--mca coll_topoar_topology_file /nonexistent/topoar-topology)
check2 "fake: CUDA-aware MPI asked at open: no, hand-downs staged (every call path 6), np=3" \
    "CUDA-aware MPI underneath: no \(MPIX_Query_cuda_support\(\) returned 0\)" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" "${down[@]}" -np 3 --mca coll_topoar_verbose 10 "$bin" --quick --device \
    --expect-path down
check2 "fake: coll_topoar_cuda_aware_mpi never: not asked, staged, np=2" \
    "CUDA-aware MPI underneath: no \(not asked: coll_topoar_cuda_aware_mpi never\)" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" "${down[@]}" -np 2 --mca coll_topoar_verbose 10 --mca coll_topoar_cuda_aware_mpi never \
    "$bin" --quick --device --expect-path down
check2 "fake: coll_topoar_cuda_aware_mpi always, host-accessible device memory: unstaged (path 7), np=3" \
    "CUDA-aware MPI underneath: yes \(assumed without asking" " 0 failed" \
    "${mpi[@]}" "${fakeenv[@]}" "${down[@]}" -x FAKECUDA_HOST_ACCESSIBLE=1 -np 3 --mca coll_topoar_verbose 10 \
    --mca coll_topoar_cuda_aware_mpi always "$bin" --quick --device --expect-path device-down
log="$logdir/unstaged.log"
if timeout -k 10 120 "${mpi[@]}" "${fakeenv[@]}" "${down[@]}" -np 2 --mca coll_topoar_cuda_aware_mpi always \
    "$bin" --quick --device >"$log" 2>&1; then
    fail_line "cuda_aware_mpi always with PROT_NONE device memory: the job passed (staged?)"
elif grep -qE "signal 11|Segmentation fault" "$log"; then
    passed=$((passed + 1)); echo "PASS: cuda_aware_mpi always with PROT_NONE device memory: the previous module faults"
else
    fail_line "cuda_aware_mpi always with PROT_NONE device memory: failed, but not by a fault"
    tail -n 15 "$log" | sed 's/^/    /'
fi

# The memory-type question's cache of host pointers (tests/gpu/mem_type_cost:
# the fake counts cudaPointerGetAttributes calls), and the parameter that
# turns it off reaching the library: back-to-back calls on the same host
# buffers query a handful of pointers with the cache, two per call without.
memcost="$build/tests/gpu/mem_type_cost"
check "fake: memory-type cache: host pointers queried once, device pointers on every call" "all answers right" \
    env LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKECUDA_DEVICES=2 "$memcost" --quick "$cudalib"
sed 's/^/    /' "$logdir/run.log" | grep "ns/call"
soak="$build/tests/mpi/soak"
for cache in 1 0; do
    log="$logdir/cache$cache.log"
    if "${mpi[@]}" "${fakeenv[@]}" -x FAKECUDA_TRACE=1 -np 2 --mca coll_topoar_mem_type_cache $cache \
        "$soak" --cycles 0 --calls 2000 >"$log" 2>&1; then
        q=$(grep -c "cudaPointerGetAttributes" "$log")
        # at least one query per call and rank without the cache (soak
        # alternates MPI_IN_PLACE: one or two pointers a call)
        if { [ $cache = 1 ] && [ "$q" -lt 200 ]; } || { [ $cache = 0 ] && [ "$q" -ge 4000 ]; }; then
            passed=$((passed + 1)); echo "PASS: fake: mem_type_cache $cache: $q pointer queries for 2 x 2000 host calls"
        else
            fail_line "fake: mem_type_cache $cache: $q pointer queries for 2 x 2000 host calls"
        fi
    else
        fail_line "fake: soak with mem_type_cache $cache"; tail -5 "$log"
    fi
done

# 3. Two emulated hosts (2 + 3 ranks): the fake NCCL over TCP between them.
if [ -n "${TOPOAR_NO_CLUSTER:-}" ]; then
    echo "SKIP: emulated cluster (TOPOAR_NO_CLUSTER is set)"
elif [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null; then
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
        fail_line "emulated cluster up"; tail -5 "$logdir/up.log"
    fi
else
    echo "SKIP: emulated cluster (needs root, ip, tc)"
fi

echo "run-gpu-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-gpu-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
