#!/bin/bash
# Emulated multi-node clusters (network namespaces, tc-shaped links):
#   a  2 nodes, 2+3 ranks, 200 Mbit/s node links
#   b  3 nodes, 1+2+3 ranks, 200 Mbit/s
#   c  2 racks x 2 nodes, 1+2 | 2+3 ranks, 1 Gbit/s node links, 200 Mbit/s
#      between the racks, ranks round-robin over nodes (--map-by node)
# On each: the tree topoar discovers (with the cluster's rack file) must
# match where the ranks run, the tree it measures without the file must
# group hosts as the cluster does, and the correctness program must pass
# with every algorithm, executed by topoar, and with auto on measured links;
# on a and c, overflowing integer sums stay right during auto's contests,
# and nonblocking and persistent allreduce are right (auto, hring).
# Needs root; skipped (77) otherwise.
# Environment as in run-mpi-tests.sh; TOPOAR_ALGORITHMS overrides the list.
set -u
src=${TOPOAR_SRCDIR:?run through make check}
build=${TOPOAR_BUILDDIR:?run through make check}
path="${OMPI_PKGLIBDIR:?}:${TOPOAR_COMPONENT_DIR:?}"
# Every algorithm of the engine's table (common/core/algorithm.hpp), and auto.
algorithms=${TOPOAR_ALGORITHMS:-"auto $("$build/tools/topoar_plan" --list-algorithms | tr '\n' ' ')"}
tc="$src/tests/cluster/topoar-cluster"
# --expect-topoar for test_nonblocking (run-mpi-tests.sh has the same
# variable; TOPOAR_NB_EXPECT= turns it off).
nb_expect=${TOPOAR_NB_EXPECT---expect-topoar}

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo "SKIP: emulated clusters need root, ip and tc"
    exit 77
fi

tmp=$(mktemp -d /tmp/topoar-cluster-tests.XXXXXX)
name="ct$$"; name=${name:0:10}
cleanup() { "$tc" down --name "$name" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mpicc -O2 -o "$tmp/hostinfo" "$src/tests/cluster/hostinfo.c" || exit 1
passed=0 failed=0
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
result() {  # result NAME RC LOG
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1)); echo "PASS: $1"
    else
        fail_line "$1"; tail -n 30 "$3" | sed 's/^/    /'
    fi
}
topoar=(--mca mca_base_component_path "$path" --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}"
        --mca coll_topoar_rack_file @RACKFILE@)

clusters=(
    "a|--nodes 2,3 --node-rate 200mbit||2,3"
    "b|--nodes 1,2,3 --node-rate 200mbit||1,2,3"
    "c|--racks 1,2;2,3 --node-rate 1gbit --rack-rate 200mbit|--map-by node|1,2;2,3"
)
for c in "${clusters[@]}"; do
    IFS='|' read -r label spec mapping shape <<<"$c"
    echo "=== cluster $label: $spec $mapping"
    # shellcheck disable=SC2086
    if ! "$tc" up --name "$name" $spec >"$tmp/up.log" 2>&1; then
        result "cluster $label comes up" 1 "$tmp/up.log"
        continue
    fi
    run() { timeout -k 10 300 "$tc" run --name "$name" $mapping -- "$@"; }

    # 1. The discovered tree matches the placement.
    run "${topoar[@]}" "$build/tools/topoar_info" --text >"$tmp/tree.txt" 2>"$tmp/tree.err"
    rc=$?
    run "$tmp/hostinfo" >"$tmp/hosts.txt" 2>&1 || rc=1
    rack="/tmp/topoar-cluster-$name/rackfile"
    if [ $rc -eq 0 ]; then
        "$src/tests/cluster/check_tree.py" "$tmp/tree.txt" "$tmp/hosts.txt" "$rack" "$shape" >"$tmp/check.txt" 2>&1
        rc=$?
    fi
    cat "$tmp/tree.txt" "$tmp/check.txt" 2>/dev/null | sed 's/^/    /'
    cat "$tmp/tree.err" "$tmp/hosts.txt" "$tmp/check.txt" >"$tmp/tree.log" 2>/dev/null
    result "cluster $label: discovered tree matches the placement" $rc "$tmp/tree.log"

    # 1b. auto's cost-model table: topoar_info prints the one set-up builds
    # for this tree; topoar_sim must compute the same from the tree's text.
    rc=0
    run "${topoar[@]}" "$build/tools/topoar_info" >"$tmp/info.txt" 2>&1 || rc=1
    grep '^allreduce ' "$tmp/info.txt" >"$tmp/table.component" || rc=1
    "$build/tools/topoar_sim" --topology "$tmp/tree.txt" --overhead 40us --default-table --sizes 8 \
        >"$tmp/sim.txt" 2>&1 || rc=1
    sed -n '/^default table/,/^$/p' "$tmp/sim.txt" | grep '^allreduce ' >"$tmp/table.sim" || rc=1
    if [ $rc -eq 0 ] && ! diff "$tmp/table.component" "$tmp/table.sim" >"$tmp/table.diff"; then rc=1; fi
    sed 's/^/    table: /' "$tmp/table.component"
    cat "$tmp/info.txt" "$tmp/sim.txt" "$tmp/table.diff" >"$tmp/table.log" 2>/dev/null
    result "cluster $label: auto's table is the cost model's for this tree" $rc "$tmp/table.log"

    # 1c. No file: set-up measures the links (coll_topoar_probe); the
    # measured tree must group hosts into racks as the cluster does, and
    # the correctness program passes on it with auto.
    measured=(--mca mca_base_component_path "$path" --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}")
    run "${measured[@]}" "$build/tools/topoar_info" >"$tmp/probe-info.txt" 2>&1
    rc=$?
    run "${measured[@]}" "$build/tools/topoar_info" --text >"$tmp/probe-tree.txt" 2>>"$tmp/probe-info.txt" || rc=1
    if [ $rc -eq 0 ]; then
        "$src/tests/cluster/check_tree.py" --measured "$tmp/probe-tree.txt" "$tmp/hosts.txt" "$rack" "$shape" \
            >"$tmp/probe-check.txt" 2>&1 || rc=1
        grep -q "links between hosts: measured at this set-up" "$tmp/probe-info.txt" || rc=1
    fi
    sed -n '/links between hosts/,/^auto/p' "$tmp/probe-info.txt" | sed 's/^/    /'
    cat "$tmp/probe-check.txt" 2>/dev/null | sed 's/^/    /'
    cat "$tmp/probe-info.txt" "$tmp/probe-tree.txt" "$tmp/probe-check.txt" >"$tmp/probe.log" 2>/dev/null
    result "cluster $label: no file: measured links group the hosts as the cluster does" $rc "$tmp/probe.log"
    t0=$SECONDS
    # auto's small-message contest (coll_topoar_trial_calls) may hand calls
    # of up to 64 KiB to the previous module: those may count either way.
    run "${measured[@]}" "$build/tests/mpi/test_allreduce" --quick --expect-topoar --either-upto 65536 \
        >"$tmp/probe-alg.log" 2>&1
    result "cluster $label: no file: correctness alg=auto on measured links ($((SECONDS - t0)) s)" $? "$tmp/probe-alg.log"
    if [ "$label" = a ]; then
        # Online adaptation measures the links again inside a call, through
        # the transport set-up handed the engine (its context once lived in
        # set-up's stack frame: every re-measurement crashed).  A threshold
        # of almost 0 makes it happen at once, up to adapt_max (4) times:
        # as soon as a window is slower than the first, which on a loaded
        # machine can take more than 8 windows (once none of 8 was, after a
        # slow first window), so 24 windows per size.  The model check is
        # off here: where every plan runs far slower than predicted it
        # would hand a class to the previous module (ModelCheck::kLost),
        # whose calls adaptation does not time.
        t0=$SECONDS
        run "${measured[@]}" --mca coll_topoar_adapt_interval 2 --mca coll_topoar_adapt_threshold 0.000001 \
            --mca coll_topoar_model_check 0 \
            --mca coll_topoar_verbose 10 "$build/tools/topoar_osu_allreduce" -m 1048576:2097152 -i 48 -x 1 \
            >"$tmp/adapt.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q "links measured again" "$tmp/adapt.log"; then
            echo "no re-measurement happened" >>"$tmp/adapt.log"
            rc=1
        fi
        result "cluster $label: no file: online adaptation measures the links again during calls ($((SECONDS - t0)) s)" \
            $rc "$tmp/adapt.log"

        # A new communicator's first call: small data travels with the
        # ranks' records in one allgather (8 B); larger, up to
        # trial_max_size, goes to the previous module while the records
        # travel (coll_topoar_deferred_setup; 16 KiB in groups of 4); the
        # next call completes the set-up.  Rotating groups of 4 across both
        # hosts: said at verbose 20/50, sums right (the tool exits 1
        # otherwise), nothing hangs.  Then groups freed right after their
        # first call (-c 1): MPI_Comm_free completes a set-up in flight.
        t0=$SECONDS
        run "${measured[@]}" --mca coll_topoar_verbose 50 "$build/tools/topoar_comm_churn" -m 8 -g 4 -c 2 -n 4 \
            -w 0 >"$tmp/defer.log" 2>&1
        rc=$?
        run "${measured[@]}" --mca coll_topoar_verbose 50 "$build/tools/topoar_comm_churn" -m 16384 -g 4 -c 2 \
            -n 4 -w 0 >>"$tmp/defer.log" 2>&1 || rc=1
        for m in 8 16384; do
            run "${measured[@]}" --mca coll_topoar_verbose 20 "$build/tools/topoar_comm_churn" -m $m -g 4 -c 1 \
                -n 6 -w 0 >>"$tmp/defer.log" 2>&1 || rc=1
        done
        for want in "x MPI_FLOAT with the ranks' records (one allgather" \
                    "passed down (set-up under way (coll_topoar_deferred_setup))" \
                    "set up again at its first blocking allreduce"; do
            [ $rc -eq 0 ] && ! grep -qF "$want" "$tmp/defer.log" && { echo "missing: $want" >>"$tmp/defer.log"; rc=1; }
        done
        result "cluster $label: a new communicator's first small call carries or runs beside its set-up ($((SECONDS - t0)) s)" \
            $rc "$tmp/defer.log"
        # A rank that would not defer is found by the same records: every
        # rank falls back, said by that rank, and the answers stay right.
        t0=$SECONDS
        run "${measured[@]}" -np 4 "$build/tests/mpi/test_allreduce" --quick : \
            -np 1 env OMPI_MCA_coll_topoar_deferred_setup=0 "$build/tests/mpi/test_allreduce" --quick \
            >"$tmp/defer-mismatch.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            grep -q "coll_topoar_deferred_setup differs between rank 0 and rank 4" "$tmp/defer-mismatch.log" || rc=1
            grep -q " 0 failed" "$tmp/defer-mismatch.log" || rc=1
        fi
        result "cluster $label: a rank with another coll_topoar_deferred_setup is found ($((SECONDS - t0)) s)" \
            $rc "$tmp/defer-mismatch.log"
    fi

    # 2. Correctness with every algorithm, executed by topoar; auto with its
    # small-message contests, which must have ended (verbose 10 says how)
    # with every call still right.
    for alg in $algorithms; do
        t0=$SECONDS
        extra=()
        [ "$alg" = auto ] && extra=(--mca coll_topoar_verbose 10)
        run "${topoar[@]}" --mca coll_topoar_allreduce_algorithm "$alg" "${extra[@]}" \
            "$build/tests/mpi/test_allreduce" --quick --expect-topoar ${extra[0]:+--either-upto 65536} \
            >"$tmp/alg.log" 2>&1
        rc=$?
        if [ "$alg" = auto ] && [ $rc -eq 0 ]; then
            grep -q "from now on" "$tmp/alg.log" || { echo "no small-message contest ended" >>"$tmp/alg.log"; rc=1; }
            grep "from now on" "$tmp/alg.log" | sed 's/.*allreduce of /    contest: /' | head -4
        fi
        result "cluster $label: correctness alg=$alg ($((SECONDS - t0)) s)" $rc "$tmp/alg.log"
    done
    if [ "$label" = a ]; then
        # 2b. The flight bound at one pipelining unit (32 KiB): one round
        # open on every rank that sends a unit per peer, four where a round
        # is larger than the bound; results as with four rounds open.
        t0=$SECONDS
        run "${topoar[@]}" --mca coll_topoar_allreduce_algorithm tree --mca coll_topoar_flight_size 32768 \
            "$build/tests/mpi/test_allreduce" --quick --expect-topoar >"$tmp/flight.log" 2>&1
        result "cluster $label: correctness alg=tree, flight_size 32K ($((SECONDS - t0)) s)" $? "$tmp/flight.log"
        # 2b'. The contest's winner watched (coll_topoar_trial_watch): after
        # each class's contest (one round: trial_calls 3) its winner's
        # window is timed and pooled on every rank at the same call; every
        # result checked (-c), nothing hangs, verbose 10 says what each
        # window ran.
        t0=$SECONDS
        run "${topoar[@]}" --mca coll_topoar_trial_calls 3 --mca coll_topoar_verbose 10 \
            "$build/tools/topoar_osu_allreduce" -m 1024:4096 -i 120 -x 0 -c >"$tmp/watch.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            n=$(grep -c "watched after the contest" "$tmp/watch.log")
            [ "$n" -ge 3 ] || { echo "watched windows: $n, want one per size class at least (3)" >>"$tmp/watch.log"; rc=1; }
            [ "$(grep -cw Pass "$tmp/watch.log")" -eq 3 ] && ! grep -qw Fail "$tmp/watch.log" ||
                { echo "validation: want Pass at 1, 2 and 4 KiB" >>"$tmp/watch.log"; rc=1; }
            grep "watched after the contest" "$tmp/watch.log" | sed 's/.*allreduce of /    watch: /' | head -3
        fi
        result "cluster $label: the contest's winner watched, results right ($((SECONDS - t0)) s)" $rc "$tmp/watch.log"
    fi
    # 2c. MPI_Barrier across hosts (coll_topoar_barrier): no rank leaves
    # before the last enters, on the world, reversed, even and odd ranks;
    # with always topoar's after the set-up where the communicator spans
    # hosts (MPI_T); with auto (the default: both timed, the faster kept)
    # one kind after the set-up, alike on every rank; with never (0)
    # the previous module's (cluster a).
    t0=$SECONDS
    run "${topoar[@]}" --mca coll_topoar_barrier always "$build/tests/mpi/test_barrier" --expect-topoar \
        >"$tmp/barrier.log" 2>&1
    result "cluster $label: MPI_Barrier across hosts ($((SECONDS - t0)) s)" $? "$tmp/barrier.log"
    t0=$SECONDS
    run "${topoar[@]}" --mca coll_topoar_verbose 20 "$build/tests/mpi/test_barrier" --rounds 20 --expect-one-kind \
        >"$tmp/barrier.log" 2>&1 && grep -q "MPI_Barrier timed" "$tmp/barrier.log"
    result "cluster $label: MPI_Barrier auto: timed, one kind kept alike on every rank ($((SECONDS - t0)) s)" $? \
        "$tmp/barrier.log"
    if [ "$label" = a ]; then
        t0=$SECONDS
        run "${topoar[@]}" --mca coll_topoar_barrier 0 "$build/tests/mpi/test_barrier" --rounds 20 \
            --expect-previous >"$tmp/barrier.log" 2>&1
        result "cluster $label: coll_topoar_barrier 0 leaves MPI_Barrier to the previous module ($((SECONDS - t0)) s)" \
            $? "$tmp/barrier.log"
    fi
    if [ "$label" != b ]; then
        # 3. Correctness does not depend on the contest: integer sums and
        # products that overflow, every integer type, OSU-style (not in
        # place), while auto's contests run with the previous module as a
        # contender (whose op/avx saturates 8- and 16-bit sums, ompi#8045).
        t0=$SECONDS
        run "${topoar[@]}" --mca coll_topoar_verbose 10 "$build/tests/mpi/test_int_validate" --reps 6 \
            >"$tmp/int.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            grep -q "from now on" "$tmp/int.log" || { echo "no small-message contest ended" >>"$tmp/int.log"; rc=1; }
        fi
        result "cluster $label: wrapping integer sums stay right during auto's contests ($((SECONDS - t0)) s)" \
            $rc "$tmp/int.log"

        # 4. Nonblocking and persistent allreduce across hosts
        # (tests/mpi/test_nonblocking.c), auto and hring forced, --quick.
        # nb_expect: as in run-mpi-tests.sh.
        for alg in auto hring; do
            t0=$SECONDS
            # single_node_fallback 0: the splits within one host are
            # topoar's too (auto would hand them down: not counted then).
            run "${topoar[@]}" --mca coll_topoar_allreduce_algorithm "$alg" \
                --mca coll_topoar_single_node_fallback 0 \
                "$build/tests/mpi/test_nonblocking" --quick $nb_expect >"$tmp/nb.log" 2>&1
            result "cluster $label: nonblocking and persistent alg=$alg ($((SECONDS - t0)) s)" $? "$tmp/nb.log"
        done
    fi
    "$tc" down --name "$name" >/dev/null 2>&1
done

left=$(ip netns list | grep -c "topoar-$name" || true)
[ "$left" -eq 0 ] || fail_line "namespaces left behind"
echo "run-cluster-tests: took $SECONDS s"
echo "run-cluster-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-cluster-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
