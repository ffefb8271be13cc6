#!/bin/sh
# The engine (common/) must stay free of MPI and Open MPI headers, so every
# planner and the executor are testable without MPI (STYLE.md).  grep -r
# scans every folder of common/.
src="${TOPOAR_SRCDIR:-$(dirname "$0")/..}"
bad=$(grep -rlE '#include *[<"](mpi\.h|ompi|opal|orte)' "$src/common" 2>/dev/null)
if [ -n "$bad" ]; then
    echo "FAIL: Open MPI headers included in the engine: $bad"
    exit 1
fi
echo "engine header check: common/ includes no MPI/Open MPI header"

# Folders are layers below the engine: none of them includes engine.hpp
# (the per-communicator object on top); what a layer needs from above
# moves down into it.
layers="topology plan planners model decide exec reduce core"
for l in $layers; do
    if [ ! -d "$src/common/$l" ]; then
        echo "FAIL: layer folder common/$l is missing (update $0)"
        exit 1
    fi
done
up=$(cd "$src/common" && grep -rlE '#include *[<"]([./]*/)?engine\.hpp[>"]' $layers 2>/dev/null)
if [ -n "$up" ]; then
    echo "FAIL: a layer below the engine includes engine.hpp:" $up
    exit 1
fi
echo "engine layer check: no file under common/{$(echo $layers | tr ' ' ,)}/ includes engine.hpp"
