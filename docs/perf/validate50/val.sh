#!/bin/bash
# val.sh NAME MAP -- UPARGS: OSU 7.4 validation (-c) of osu_allreduce and osu_iallreduce with topoar
# auto, mpi_char, mpi_int and mpi_float, in place (-l) and not, 1 B to $MAX (262144) bytes, 12 calls
# after 2 per size, on a cluster brought up for it; MAP: "" or "--map-by node".
name=$1; map=$2; shift 3
tc=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
D=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
comp=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self)
for t in mpi_char mpi_int mpi_float; do
 for extra in "" "-l"; do
  for b in osu_allreduce osu_iallreduce; do
   out=$(timeout 300 $tc run --name $name $map -- "${comp[@]}" $D/$b -c -m 1:${MAX:-262144} -i 12 -x 2 -T $t $extra 2>&1); rc=$?
   np=$(echo "$out" | grep -c "Pass"); nf=$(echo "$out" | grep -c "Fail")
   echo "$name $b $t ${extra:-notinplace} rc=$rc pass=$np fail=$nf"
   [ $nf -gt 0 -o $rc -ne 0 ] && echo "$out" | grep -v "^#" | tail -n 30
  done
 done
done
