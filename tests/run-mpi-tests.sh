#!/bin/bash
# MPI integration tests of the just-built component on this machine (one
# node): the correctness program under every algorithm and np = 1..8, the
# nonblocking and persistent program (np 1..6), the fallback paths, ompi_info, verbose output and a valgrind run.
# Environment (set by `make check`): TOPOAR_COMPONENT_DIR, OMPI_PKGLIBDIR,
# MPIRUN, TOPOAR_BUILDDIR, TOPOAR_SRCDIR.  TOPOAR_ALGORITHMS overrides the
# algorithm list; TOPOAR_MAX_NP the largest rank count.
set -u
build=${TOPOAR_BUILDDIR:?run through make check}
bin="$build/tests/mpi/test_allreduce"
mpirun=${MPIRUN:-mpirun}
path="${OMPI_PKGLIBDIR:?}:${TOPOAR_COMPONENT_DIR:?}"
# Every algorithm of the engine's table (common/core/algorithm.hpp), and auto.
algorithms=${TOPOAR_ALGORITHMS:-"auto $("$build/tools/topoar_plan" --list-algorithms | tr '\n' ' ')"}
max_np=${TOPOAR_MAX_NP:-8}
logdir=$(mktemp -d /tmp/topoar-mpi-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

mpi=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none
     --mca mpi_yield_when_idle 1 --mca btl self,vader
     --mca mca_base_component_path "$path"
     --mca coll "${TOPOAR_TEST_COLL:-topoar,tuned,libnbc,basic,self}")

passed=0 failed=0
failures=()  # fail_line TEXT: counts a failure and says FAIL: TEXT; the summary names them again
fail_line() { failed=$((failed + 1)); echo "FAIL: $1"; failures+=("$1"); }
# check NAME COMMAND...: runs it, passes when it exits 0.
check() {
    local name=$1; shift
    local log="$logdir/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
    local t0=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1)); echo "PASS: $name ($((SECONDS - t0)) s)"
    else  # exit 124 or 137 from timeout: it hung
        fail_line "$name (exit $rc after $((SECONDS - t0)) s)"; tail -n 25 "$log" | sed 's/^/    /'
    fi
}
# expect_output NAME PATTERN COMMAND...: passes when it exits 0 and prints PATTERN.
expect_output() {
    local name=$1 pattern=$2; shift 2
    local log="$logdir/out.log"
    if "$@" >"$log" 2>&1 && grep -qE -- "$pattern" "$log"; then
        passed=$((passed + 1)); echo "PASS: $name"
    else
        fail_line "$name (wanted /$pattern/)"; tail -n 25 "$log" | sed 's/^/    /'
    fi
}

# Every algorithm at np = 1..8 on this one host.  auto would hand
# single-host communicators down (coll_topoar_single_node_fallback), so here
# it is told to run them itself; the default is checked below.
for alg in $algorithms; do
    mode=--quick
    [ "$alg" = auto ] && mode=""
    for np in $(seq 1 "$max_np"); do
        check "correctness alg=$alg np=$np ${mode:-full}" \
            "${mpi[@]}" --mca coll_topoar_allreduce_algorithm "$alg" --mca coll_topoar_single_node_fallback 0 \
            -np "$np" "$bin" $mode --expect-topoar
    done
done
# Default auto on one host: calls are handed to tuned, said at verbose 50.
expect_output "auto hands single-host communicators down" "passed down \(auto on a single-node" \
    "${mpi[@]}" --mca coll_topoar_verbose 50 -np 3 "$bin" --quick

# Nonblocking and persistent allreduce (tests/mpi/test_nonblocking.c): every
# algorithm forced at np = 1..6 (--quick), auto told to run single-host
# communicators itself (the full matrix, np 2 and 4) and auto's default
# (np 3).  nb_expect asserts through topoar's counters that topoar ran the
# calls it should (TOPOAR_NB_EXPECT= turns that off, e.g. to check the tests
# themselves against libnbc).
nb="$build/tests/mpi/test_nonblocking"
nb_expect=${TOPOAR_NB_EXPECT---expect-topoar}
nb_max_np=$(( max_np < 6 ? max_np : 6 ))
for alg in $algorithms; do
    [ "$alg" = auto ] && continue
    for np in $(seq 1 "$nb_max_np"); do
        check "nonblocking alg=$alg np=$np quick" timeout -k 10 120 \
            "${mpi[@]}" --mca coll_topoar_allreduce_algorithm "$alg" --mca coll_topoar_single_node_fallback 0 \
            -np "$np" "$nb" --quick $nb_expect
    done
done
for np in 2 4; do
    [ "$np" -le "$max_np" ] || continue
    check "nonblocking alg=auto np=$np full" timeout -k 10 300 \
        "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 -np "$np" "$nb" $nb_expect
done
# auto's default hands single-host communicators down: no counter assertion.
check "nonblocking auto default np=3 quick" timeout -k 10 120 "${mpi[@]}" -np 3 "$nb" --quick

# A tiny segment size makes every message a long train of segments.
check "correctness segment_size=64 pipeline_size=200 np=5" \
    "${mpi[@]}" --mca coll_topoar_segment_size 64 --mca coll_topoar_pipeline_size 200 \
    --mca coll_topoar_allreduce_algorithm tree -np 5 "$bin" --quick --expect-topoar
check "correctness segment_size=0 pipeline_size=0 np=4" \
    "${mpi[@]}" --mca coll_topoar_segment_size 0 --mca coll_topoar_pipeline_size 0 \
    --mca coll_topoar_allreduce_algorithm flexreduce -np 4 "$bin" --quick --expect-topoar

# Chunked calls (coll_topoar_chunk_size): a 1000-byte chunk cuts most
# counts into many chunks and a remainder, every algorithm, uneven sizes.
for alg in $algorithms; do
    [ "$alg" = auto ] && continue
    check "chunked calls alg=$alg chunk_size=1000 np=5" \
        "${mpi[@]}" --mca coll_topoar_allreduce_algorithm "$alg" --mca coll_topoar_single_node_fallback 0 \
        --mca coll_topoar_chunk_size 1000 -np 5 "$bin" --quick --expect-topoar
done

# Above 2 GiB (1.1 G shorts, in place) with every algorithm, and above
# 4 GiB (1.1 G ints) once, on 2 ranks: offsets, message sizes and scratch
# beyond 32 bits (the ring broke at 2.4 GB before chunking).  Needs the
# memory: 2 ranks x the message, plus chunk scratch; skipped when short.
large="$build/tests/mpi/test_large"
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
large_check() {  # NAME BYTES_PER_RANK ALGORITHM TEST_LARGE_ARGS...
    local name=$1 need_kb=$(( ($2 / 1024) * 2 + 1048576 )) alg=$3; shift 3
    if [ "${avail_kb:-0}" -lt "$need_kb" ]; then
        echo "SKIP: $name (needs $((need_kb / 1024)) MiB available, have $((avail_kb / 1024)))"
        return
    fi
    check "$name" "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 --mca coll_topoar_allreduce_algorithm "$alg" \
        -np 2 "$large" "$@"
}
for alg in $algorithms; do
    [ "$alg" = auto ] && continue
    large_check "above 2 GiB alg=$alg np=2 (2.2 GB shorts)" 2200000000 "$alg" --type short --count 1100000000
done
large_check "above 4 GiB alg=ring np=2 (4.4 GB ints)" 4400000000 ring --type int --count 1100000000

# The latency algorithm's deprecated name still selects it (number 2).
expect_output "deprecated name recursive_doubling selects leader" "last_algorithm: leader \(value 2" \
    "${mpi[@]}" --mca coll_topoar_allreduce_algorithm recursive_doubling --mca coll_topoar_single_node_fallback 0 \
    -np 3 "$bin" --quick --expect-topoar

# Settings that decide message pairing must agree: a rank with another
# value makes every rank fall back at set-up, said once with both values
# (rank 0's and the differing rank's), and the answers stay right.
expect_output "mismatched segment_size falls back" \
    "coll_topoar_segment_size differs across ranks: rank 0 has '4096', rank 1 has '32768'.* 0 failed" \
    bash -c '"$@" 2>&1 | tr "\n" " "' _ "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 \
    -np 1 env OMPI_MCA_coll_topoar_segment_size=4096 "$bin" --quick : -np 2 "$bin" --quick
expect_output "mismatched algorithm falls back" \
    "coll_topoar_allreduce_algorithm differs across ranks: rank 0 has 'auto', rank 2 has 'ring'.* 0 failed" \
    bash -c '"$@" 2>&1 | tr "\n" " "' _ "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 \
    -np 2 "$bin" --quick : -np 1 env OMPI_MCA_coll_topoar_allreduce_algorithm=ring "$bin" --quick
# The glue's own settings that must agree are compared too: a rank that
# would time or take its barriers differently would wait on the others in
# its first MPI_Barrier after set-up.
expect_output "mismatched barrier falls back" \
    "coll_topoar_barrier differs across ranks: rank 0 has 'auto', rank 2 has 'never'.* 0 failed" \
    bash -c '"$@" 2>&1 | tr "\n" " "' _ "${mpi[@]}" --mca coll_topoar_single_node_fallback 0 \
    -np 2 "$bin" --quick : -np 1 env OMPI_MCA_coll_topoar_barrier=never "$bin" --quick
# One host: ranks that hand every call down run the first call at once,
# beside the agreement (coll_topoar_module.c); a rank that would run topoar
# there instead makes that call the previous module's on every rank and
# the next one the full set-up, which names the difference.
expect_output "one host: a rank that does not hand down is found" \
    "coll_topoar_single_node_fallback differs across ranks: rank 0 has '1', rank 2 has '0'.* 0 failed" \
    bash -c '"$@" 2>&1 | tr "\n" " "' _ "${mpi[@]}" \
    -np 2 "$bin" --quick : -np 1 env OMPI_MCA_coll_topoar_single_node_fallback=0 "$bin" --quick
# Unreadable topology file: one clear message, previous module, right answers.
expect_output "unreadable topology file falls back" "set-up failed .*/nonexistent/topo" \
    "${mpi[@]}" --mca coll_topoar_topology_file /nonexistent/topo -np 3 "$bin" --quick
# Malformed rack file: file:line in the message.
bad="$logdir/bad-rack"
printf 'vm rack0\nthis line is wrong bw=fast\n' >"$bad"
expect_output "malformed rack file names file and line" "set-up failed .*bad-rack:2" \
    "${mpi[@]}" --mca coll_topoar_rack_file "$bad" -np 2 "$bin" --quick
# Bad enum value: Open MPI reports it (its message does not always survive
# mpirun's forwarding); auto stays and topoar keeps handling the calls.
expect_output "bad algorithm name keeps auto" " 0 failed" \
    "${mpi[@]}" --mca coll_topoar_allreduce_algorithm bogus --mca coll_topoar_single_node_fallback 0 \
    -np 2 "$bin" --quick --expect-topoar
# Verbose: the topology and auto's cost-model table on rank 0, and the
# algorithm per size class with what decided it.
expect_output "verbose prints the cost-model table" "auto's default table \(cost model, built in" \
    "${mpi[@]}" --mca coll_topoar_verbose 20 --mca coll_topoar_single_node_fallback 0 -np 3 "$bin" --quick \
    --expect-topoar
expect_output "verbose prints choices from the cost model" "allreduce of .* bytes .* -> [a-z_]+ \(cost model\)" \
    "${mpi[@]}" --mca coll_topoar_verbose 20 --mca coll_topoar_single_node_fallback 0 -np 3 "$bin" --quick \
    --expect-topoar
expect_output "model_table 0 uses the fixed choice" "allreduce of .* bytes .* -> [a-z_]+ \(default\)" \
    "${mpi[@]}" --mca coll_topoar_verbose 20 --mca coll_topoar_single_node_fallback 0 \
    --mca coll_topoar_model_table 0 -np 3 "$bin" --quick --expect-topoar
# The small-message contest's outcomes kept for the job: rotating split
# groups (tools/topoar_comm_churn, 20 calls of 8 B per group) on two
# emulated hosts (TOPOAR_HOSTNAME via tests/gpu/fake-hosts.sh; the rack file
# makes the full set-up run), whose members' histories differ.  A group
# takes only the outcomes every member holds alike, agreed at set-up: later
# groups of a shape start decided (said at verbose 10), the sums stay
# right (the tool exits 1 otherwise) and nothing hangs (timeout).
churn_racks="$logdir/churn-racks"
printf 'fakehost0 r0\nfakehost1 r0\n' >"$churn_racks"
expect_output "rotating groups start decided from agreed contest outcomes" \
    "small-message contest: [0-9]+ size class(es)? start decided" \
    timeout -k 10 120 "${mpi[@]}" --mca coll_topoar_rack_file "$churn_racks" --mca coll_topoar_trial_calls 3 \
    --mca coll_topoar_verbose 10 -np 6 "${TOPOAR_SRCDIR:?}/tests/gpu/fake-hosts.sh" 3,3 \
    "$build/tools/topoar_comm_churn" -m 8 -g 4 -c 20 -n 12 -w 0
# The outcomes kept across jobs (coll_topoar_contest_cache_dir): a first
# job settles the 8 B class of a 2 + 2 group and rank 0 writes the file
# (atomically: no temporary file is left); a second job's group starts that
# class decided from rank 0's file.
cache_dir="$logdir/contest-cache"
mkdir -p "$cache_dir"
cache_job=(timeout -k 10 120 "${mpi[@]}" --mca coll_topoar_rack_file "$churn_racks" --mca coll_topoar_trial_calls 3
           --mca coll_topoar_contest_cache_dir "$cache_dir" --mca coll_topoar_verbose 10 -np 4
           "$TOPOAR_SRCDIR/tests/gpu/fake-hosts.sh" 2,2 "$build/tools/topoar_comm_churn" -m 8 -g 4 -f -c 20 -n 1 -w 0)
check "contest cache: the first job writes one file" \
    bash -c '"${@:2}" && [ "$(ls -A "$1")" = "$(cd "$1" && ls topoar-contest-*.txt)" ] && [ "$(ls "$1" | wc -l)" = 1 ]' \
    _ "$cache_dir" "${cache_job[@]}"
expect_output "contest cache: the second job starts decided from it" "1 from rank 0's cache file" "${cache_job[@]}"
# A bad model overhead: one message naming the parameter, previous module.
expect_output "bad model_overhead falls back" "set-up failed .*coll_topoar_model_overhead 'fast'" \
    "${mpi[@]}" --mca coll_topoar_model_overhead fast -np 3 "$bin" --quick
expect_output "bad model_margin falls back" "set-up failed .*coll_topoar_model_margin '150%'.*outside" \
    "${mpi[@]}" --mca coll_topoar_model_margin 150% -np 3 "$bin" --quick
expect_output "bad model_cpu_share falls back" "set-up failed .*coll_topoar_model_cpu_share '60%': more than 50%" \
    "${mpi[@]}" --mca coll_topoar_model_cpu_share 60% -np 3 "$bin" --quick
# ompi_info lists the parameters and performance variables.
expect_output "ompi_info lists parameters" "coll_topoar_allreduce_algorithm.*auto" \
    env OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll topoar --level 9
expect_output "ompi_info lists the contest cache directory" "coll_topoar_contest_cache_dir" \
    env OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll topoar --level 9
expect_output "ompi_info lists the model parameters" "coll_topoar_model_margin" \
    env OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll topoar --level 9
expect_output "ompi_info lists the CPU share" "coll_topoar_model_cpu_share" \
    env OMPI_MCA_mca_base_component_path="$path" ompi_info --param coll topoar --level 9
# valgrind: no invalid accesses or leaks from topoar's frames.
if command -v valgrind >/dev/null; then
    # The suppressions of the Open MPI whose mpirun runs the tests (Debian's
    # /usr/share/openmpi/, or another installation's: tests/compat).
    supp="$(dirname "$(command -v "$mpirun")")/../share/openmpi/openmpi-valgrind.supp"
    [ -f "$supp" ] || supp=/usr/share/openmpi/openmpi-valgrind.supp
    # --keep-debuginfo: Open MPI dlcloses the components it does not select;
    # without it their leaks are reported under whatever is mapped there later.
    vg=(valgrind -q --keep-debuginfo=yes --leak-check=full --show-leak-kinds=definite --suppressions="$supp")
    check "valgrind np=2" bash -c '
        out=$("$@" 2>&1)
        echo "$out" | grep -E "topoar|passed" | tail -n 40
        # Only frames of topoar count: Open MPI itself is not valgrind-clean.
        if echo "$out" | grep -E "^==[0-9]+== .*(topoar|coll_topoar)" >/dev/null; then exit 1; fi
        echo "$out" | grep -q " 0 failed" ' _ \
        "${mpi[@]}" --mca coll_topoar_allreduce_algorithm tree -np 2 "${vg[@]}" "$bin" --quick --expect-topoar
fi

echo "run-mpi-tests: took $SECONDS s"
echo "run-mpi-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || printf "run-mpi-tests: failed: %s\n" "${failures[@]}"
[ "$failed" -eq 0 ]
