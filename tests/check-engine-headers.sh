#!/bin/sh
# The engine (common/) must stay free of MPI and Open MPI headers, so every
# planner and the executor are testable without MPI (STYLE.md).
src="${TOPOAR_SRCDIR:-$(dirname "$0")/..}"
bad=$(grep -rlE '#include *[<"](mpi\.h|ompi|opal|orte)' "$src/common" 2>/dev/null)
if [ -n "$bad" ]; then
    echo "FAIL: Open MPI headers included in the engine: $bad"
    exit 1
fi
echo "engine header check: common/ includes no MPI/Open MPI header"
