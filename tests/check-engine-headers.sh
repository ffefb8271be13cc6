#!/bin/sh
# The engine's layers, checked from its #include lines.
#
# 1. common/ includes no MPI or Open MPI header, so every planner and the
#    executor are testable without MPI (STYLE.md).
# 2. Folders are layers, ranked below (lowest first).  A file may include
#    files of its own layer and of lower ones, never of a higher one, not
#    even through a defaults header: every quoted #include of every file
#    under common/ is resolved (beside the file, else from common/) and
#    the layers compared.  A folder missing from the ranking fails the check
#    (a new folder must take its place here).
#
#    0 core reduce   the status type, units, hashing, the algorithm table, the
#                    transport interface; topoar's typed reduction
#    1 topology      topology, discovery, the link probes
#    2 plan          plans and schedules (data)
#    3 planners      the planners and their registry (make_plan)
#    4 exec          the schedule policy, host and device executors
#    5 decide        rules, decision tables, the contest, a call's route
#    6 config        the parameter table and EngineConfig
#    7 model         the cost model and the default tables
#    8 engine (top)  the engine's parts (engine/: network set-up's
#                    caches, the plan cache, selection, adaptation), the
#                    engine (engine.*: the facade over them) and the C API
#                    (engine_c.cpp, topoar_engine.h)
#
# The top-level status.hpp belongs to layer 0 (everything reports Status).
src="${TOPOAR_SRCDIR:-$(dirname "$0")/..}"
common="$src/common"

bad=$(grep -rlE '#include *[<"](mpi\.h|ompi|opal|orte)' "$common" 2>/dev/null)
if [ -n "$bad" ]; then
    echo "FAIL: Open MPI headers included in the engine: $bad"
    exit 1
fi
echo "engine header check: common/ includes no MPI/Open MPI header"

# The layer of a path relative to common/ ("model/cost_model.hpp").
rank_of() {
    case "$1" in
    status.hpp) echo 0 ;;
    */*)
        case "${1%%/*}" in
        core | reduce) echo 0 ;;
        topology) echo 1 ;;
        plan) echo 2 ;;
        planners) echo 3 ;;
        exec) echo 4 ;;
        decide) echo 5 ;;
        config) echo 6 ;;
        model) echo 7 ;;
        engine) echo 8 ;;
        *) echo "?" ;;
        esac ;;
    *) echo 8 ;;
    esac
}

files=$(cd "$common" && find . \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.c' \) | sed 's|^\./||' | sort)
if [ -z "$files" ]; then
    echo "FAIL: no sources under $common"
    exit 1
fi
fail=0
checked=0
for f in $files; do
    from=$(rank_of "$f")
    if [ "$from" = "?" ]; then
        echo "FAIL: $f: the folder ${f%%/*}/ has no layer (rank it in $0)"
        fail=1
        continue
    fi
    dir=$(dirname "$f")
    # "N:name" for every quoted include
    for inc in $(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$common/$f" |
                 sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/'); do
        line=${inc%%:*}
        name=${inc#*:}
        if [ "$dir" != "." ] && [ -f "$common/$dir/$name" ]; then
            target="$dir/$name"
        elif [ -f "$common/$name" ]; then
            target="$name"
        else
            continue  # not part of the engine (a system or generated header)
        fi
        target=$(echo "$target" | sed -E 's|(^\|/)\./|\1|g')
        to=$(rank_of "$target")
        checked=$((checked + 1))
        if [ "$to" = "?" ] || [ "$to" -gt "$from" ]; then
            echo "FAIL: common/$f:$line includes $target: layer $to above its own layer $from (see $0)"
            fail=1
        fi
    done
done
if [ "$checked" -eq 0 ]; then
    echo "FAIL: no #include of the engine found (the check read nothing)"
    exit 1
fi
[ "$fail" -eq 0 ] || exit 1
echo "engine layer check: $checked includes in $(echo "$files" | wc -l) files, none from a lower layer to a higher one"

# The check must be able to fail: the same check on a copy of common/ with
# one upward include planted (core/ reaching the engine) has to say so.
if [ -z "$TOPOAR_LAYER_SELFTEST" ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/topoar-layers-XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    cp -R "$common" "$tmp/common"
    printf '#include "engine.hpp"\n' >> "$tmp/common/core/units.hpp"
    out=$(TOPOAR_LAYER_SELFTEST=1 TOPOAR_SRCDIR="$tmp" sh "$0" 2>&1)
    if [ $? -eq 0 ] || ! echo "$out" | grep -q "common/core/units.hpp:.* includes engine.hpp: layer 8 above its own layer 0"; then
        echo "FAIL: a planted upward include (core/units.hpp -> engine.hpp) was not reported:"
        echo "$out"
        exit 1
    fi
    echo "engine layer check: a planted upward include is reported ($(echo "$out" | grep -c '^FAIL') failure)"
fi
