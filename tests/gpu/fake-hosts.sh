#!/bin/bash
# Emulated hosts on one machine, for topoar's discovery only:
#
#   mpirun ... tests/gpu/fake-hosts.sh SIZES PROGRAM [ARGS...]
#
# SIZES ("3,2,1") lists how many consecutive ranks of MPI_COMM_WORLD each
# emulated host holds; this rank (OMPI_COMM_WORLD_RANK) gets
# TOPOAR_HOSTNAME=fakehost<i> for the host i it falls in, then the program
# runs.  Open MPI and NCCL still see one real host (shared memory, device
# numbers by local rank); topoar's topology -- and so nccl_hier's hosts,
# shards and per-host NCCL communicators -- follows the emulated ones.
# The sizes must add up to the job's size.
set -eu
sizes=${1:?usage: fake-hosts.sh SIZES PROGRAM [ARGS...]}
shift
rank=${OMPI_COMM_WORLD_RANK:?not started by mpirun of Open MPI}
first=0 i=0 host=
IFS=, read -r -a per <<<"$sizes"
for n in "${per[@]}"; do
    if [ "$rank" -ge "$first" ] && [ "$rank" -lt $((first + n)) ]; then host=fakehost$i; fi
    first=$((first + n)); i=$((i + 1))
done
if [ -n "${OMPI_COMM_WORLD_SIZE:-}" ] && [ "$first" -ne "$OMPI_COMM_WORLD_SIZE" ]; then
    echo "fake-hosts.sh: sizes $sizes add up to $first, the job has $OMPI_COMM_WORLD_SIZE ranks" >&2
    exit 2
fi
[ -n "$host" ] || { echo "fake-hosts.sh: rank $rank is in none of the hosts $sizes" >&2; exit 2; }
export TOPOAR_HOSTNAME=$host
exec "$@"
