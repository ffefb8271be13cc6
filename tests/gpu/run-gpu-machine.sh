#!/bin/bash
# topoar on a machine with NVIDIA GPUs (not part of make check; CI has none).
#
#   tests/gpu/run-gpu-machine.sh SOURCE OUTDIR
#
# SOURCE: a `make dist` tarball (topoar-*.tar.gz) or a configured source
# tree; OUTDIR: where logs go.  Needs Open MPI with its development headers
# (mpicc, ompi_info), CUDA (nvcc) and NCCL.  Steps:
#   1. configure --with-cuda --with-nccl, build, install into OUTDIR/prefix;
#   2. topoar's reduction kernels against the host reduction, bit for bit,
#      every device op/type pair (tests/cuda/test_cuda_reduce), and their
#      bandwidth (--bench);
#   3. the correctness program on real device buffers at np 1, 2, 4:
#      through NCCL where every rank has its own GPU, otherwise (NCCL refuses
#      two ranks on one device) staged through pinned host memory -- the path
#      taken is asserted through MPI_T;
#   4. an osu_allreduce-style run with -d cuda: auto (ncclAllReduce within a
#      host), topoar's plans over NCCL (tree, ring), staging (coll_topoar_nccl
#      0) -- NCCL rows only with at least 2 GPUs;
#   5. the cost of the memory-type check on host buffers: per query with and
#      without the host-pointer cache (tests/gpu/mem_type_cost), and an 8 B
#      allreduce with coll_topoar_cuda 0, 1 without the cache and 1 with it,
#      interleaved jobs, medians.
set -u
src=${1:?usage: run-gpu-machine.sh SOURCE OUTDIR}
out=${2:?usage: run-gpu-machine.sh SOURCE OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log() { echo "== $*" | tee -a "$out/summary.txt"; }

# 1. build
work=$(mktemp -d /tmp/topoar-gpu.XXXXXX)
if [ -f "$src" ]; then
    tar -C "$work" -xzf "$src" && src=$(echo "$work"/topoar-*)
fi
prefix="$out/prefix"
mkdir -p "$work/build"
(cd "$work/build" && "$src/configure" --prefix="$prefix" --with-cuda --with-nccl >"$out/configure.log" 2>&1 &&
    make -j"$(nproc)" >"$out/make.log" 2>&1 && make install >>"$out/make.log" 2>&1 &&
    make -C tests -j"$(nproc)" mpi/test_allreduce cuda/test_cuda_reduce >>"$out/make.log" 2>&1) ||
    { log "build failed (see configure.log, make.log)"; tail -30 "$out/configure.log" "$out/make.log"; exit 1; }
build="$work/build"
tail -12 "$out/configure.log" >>"$out/summary.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
log "GPUs: $ngpu; $(nvidia-smi -L 2>/dev/null | head -1)"

pkglib=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
mpi_base=(mpirun --allow-run-as-root --oversubscribe
          --mca mca_base_component_path "$pkglib:$prefix/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self)
mpi=("${mpi_base[@]}" --bind-to none)
fails=0

# 2. kernels
if "$build/tests/cuda/test_cuda_reduce" --bench >"$out/kernels.log" 2>&1; then
    log "kernels: PASS ($(grep -c . "$out/kernels.log") lines; $(grep '^bench' "$out/kernels.log" | tr '\n' ';'))"
else
    log "kernels: FAIL"; tail -20 "$out/kernels.log"; fails=$((fails + 1))
fi

# 3. correctness on device buffers
for np in 1 2 4; do
    path=staged
    [ "$np" -le "$ngpu" ] && path=nccl
    expect=(--expect-topoar --expect-path $path)
    [ "$np" = 1 ] && expect=()
    if "${mpi[@]}" -np $np --mca coll_topoar_verbose 10 --mca coll_topoar_single_node_fallback 0 \
        "$build/tests/mpi/test_allreduce" --device "${expect[@]}" >"$out/device-np$np.log" 2>&1; then
        log "device buffers np=$np (expected path: ${expect[*]:-any}): PASS: $(grep 'passed,' "$out/device-np$np.log")"
    else
        log "device buffers np=$np: FAIL"; grep -v '^run case' "$out/device-np$np.log" | tail -20; fails=$((fails + 1))
    fi
done
if "${mpi[@]}" -np 2 "$build/tests/mpi/test_allreduce" --device-mixed >"$out/mixed-np2.log" 2>&1; then
    log "mixed host/device buffers np=2: PASS: $(grep 'passed,' "$out/mixed-np2.log")"
else
    log "mixed host/device buffers np=2: FAIL"; fails=$((fails + 1))
fi

# 4. benchmark on device buffers
np=$(( ngpu >= 2 ? (ngpu > 8 ? 8 : ngpu) : 2 ))
bench() {  # LABEL MCA...
    local label=$1; shift
    "${mpi[@]}" -np $np "$@" "$prefix/bin/topoar_osu_allreduce" -d cuda -a -m 8:268435456 -i 50 -x 5 -I 10 -X 2 \
        >"$out/bench-$label.log" 2>&1 || log "bench $label: FAIL"
}
bench staged --mca coll_topoar_nccl 0
if [ "$ngpu" -ge 2 ]; then
    bench auto
    bench tree --mca coll_topoar_allreduce_algorithm tree
    bench ring --mca coll_topoar_allreduce_algorithm ring
fi
log "device-buffer latency (us) at np=$np, columns: size $(ls "$out"/bench-*.log | sed 's/.*bench-//; s/.log//' | tr '\n' ' ')"
paste $(ls "$out"/bench-*.log) 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {line=$1; for (i=2; i<=NF; i++) if ($(i-1) ~ /^[0-9]+$/ && $i ~ /^[0-9.]+$/) line=line" "$i; print line}' \
    >>"$out/summary.txt"

# 5. the memory-type check's cost: per query, and on an 8 B allreduce of
#    host buffers (2 ranks, interleaved jobs)
if cc -O2 -I"$src/cuda" -o "$work/mem_type_cost" "$src/tests/gpu/mem_type_cost.c" -ldl &&
    "$work/mem_type_cost" "$prefix/lib/topoar/libtopoar_cuda.so" >"$out/mem_type_cost.log" 2>&1; then
    log "$(cat "$out/mem_type_cost.log")"
else
    log "mem_type_cost: FAIL: $(cat "$out/mem_type_cost.log" 2>/dev/null)"; fails=$((fails + 1))
fi
#    configurations: 0 GPU path off, 1 on without the host-pointer cache,
#    2 on with it (the default)
#    (DETECT_REPS jobs of each, default 15, ranks bound to cores: the
#    machine has cores to spare, and unbound ranks wander)
reps=${DETECT_REPS:-15}
mpib=("${mpi_base[@]}" --bind-to core)
for rep in $(seq "$reps"); do
    for conf in 0 1 2; do
        "${mpib[@]}" -np 2 --mca coll_topoar_cuda $((conf > 0)) --mca coll_topoar_mem_type_cache $((conf > 1)) \
            --mca coll_topoar_single_node_fallback 0 \
            "$prefix/bin/topoar_osu_allreduce" -m 8:8 -i 50000 -x 5000 2>/dev/null |
            awk -v c=$conf '$1 == 8 {print c, $2}' >>"$out/detect.txt"
    done
done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m0=$(awk '$1 == 0 {print $2}' "$out/detect.txt" | med)
m1=$(awk '$1 == 1 {print $2}' "$out/detect.txt" | med)
m2=$(awk '$1 == 2 {print $2}' "$out/detect.txt" | med)
log "8 B host allreduce, np=2, median of $reps interleaved jobs: GPU path off ${m0} us, on without the cache ${m1} us, on with it ${m2} us"

log "done: $fails failures"
rm -rf "$work"
[ "$fails" -eq 0 ]
