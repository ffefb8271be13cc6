# Sourced by cmp.sh, btrun.sh and cyc.sh after they set name and shift to
# the cluster's arguments: brings the emulated cluster up (down at exit)
# and defines comp_for JOB, which sets comp to that job's mpirun arguments:
#   on     topoar over tuned (this tree's _install; coll_topoar_barrier
#          auto from stop 40, topoar's barrier always before)
#   always the same with coll_topoar_barrier always (topoar's, untimed)
#   off    the same with coll_topoar_barrier 0 (tuned's barrier)
#   leader the same with coll_topoar_allreduce_algorithm leader (no contest)
#   share0 topoar with coll_topoar_model_cpu_share 0 (the model before
#          stop 41: no per-message CPU at the ranks)
#   base   topoar from another install, $BASE (default /tmp/topoar-base:
#          a copy of _install made before a change)
#   alt    topoar from a third install, $ALT (another experiment's build)
#   x      on with the extra mpirun arguments in $XARGS (an experiment's
#          settings, e.g. XARGS="--mca coll_topoar_trial_max_size 1048576")
#   x1..x9 the same with $XARGS1..$XARGS9 (several experiments interleaved)
#   tuned  tuned alone;  ring  tuned's ring allreduce;  han  han over tuned
top=/work/main; tc=$top/tests/cluster/topoar-cluster
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
comp_for() {
  case $1 in
    on) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    always) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_barrier always);;
    leader) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm leader);;
    share0) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_model_cpu_share 0);;
    base) comp=(--mca mca_base_component_path "$P:${BASE:-/tmp/topoar-base}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    alt) comp=(--mca mca_base_component_path "$P:${ALT:?set ALT}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    off) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_barrier 0);;
    x) read -r -a xa <<<"${XARGS:-}"
       comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self "${xa[@]}");;
    x[1-9]) v=XARGS${1#x}; read -r -a xa <<<"${!v:-}"
       comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self "${xa[@]}");;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
    ring) comp=(--mca coll tuned,libnbc,basic,self --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4);;
  esac
}
