#!/bin/bash
# tests/compat/run.sh: topoar against another Open MPI than the system's
# (Open MPI 5.0.x, main), by hand; CI keeps Debian's 4.1.4.
#
#   tests/compat/run.sh [options] OMPI
#
# OMPI is an Open MPI installation prefix (bin/mpicc, bin/ompi_info) or an
# Open MPI source tree (configure.ac, ompi/, opal/; a git checkout with its
# submodules in 3rd-party/ and config/oac).  A source tree is built first,
# unless an earlier run already did (cached: WORK/NAME/ompi-install with
# its stamp), with
#   [./autogen.pl --no-3rdparty hwloc,libevent, when there is no configure]
#   ./configure --prefix=WORK/NAME/ompi-install --with-devel-headers
#               --with-pmix=internal --with-prrte=internal
#               --with-hwloc=external --with-libevent=external
#               --disable-mpi-fortran --disable-oshmem
#   nice make -j2 && make install          (about 30 min on 2 busy cores)
# Then topoar is configured and built against it in WORK/NAME/topoar-build
# (installed into WORK/NAME/topoar-install): never in the tree's _build,
# since every Open MPI's libmpi is libmpi.so.40 and a component built for
# one must not be loaded by another.  The tests run with that Open MPI's
# bin/ first in PATH and its lib/ in LD_LIBRARY_PATH:
#   1. ompi_info: topoar's component reports the coll API version of Open
#      MPI's own coll components (a component of another version loads and
#      is then silently never selected);
#   2. make check TESTS="$TESTS" in the build (default: the reduce-op map,
#      run-mpi-tests.sh, run-thread-tests.sh, run-soak-tests.sh), every
#      run with --expect-topoar failing unless the MPI_T counter
#      coll_topoar_allreduce_handled is above zero;
#   3. one emulated cluster (root, ip, tc; else skipped): 2 + 2 ranks on two
#      emulated hosts, test_allreduce --quick --expect-topoar with the
#      rack file, once with auto (its small-message contests against the
#      module below must end; with han in the coll list, han must be
#      enabled under topoar) and once forced to hring.
# The coll components allowed in 2 and 3 (TOPOAR_TEST_COLL of the test
# scripts): by default Open MPI 5.0's own default set with topoar added
# (topoar,han,tuned,libnbc,basic,self: han under topoar, so calls topoar
# hands down go to han where han takes the communicator).
#
# Options:
#   --name NAME      label for WORK/NAME and the logs (default: ompi-VERSION)
#   --source DIR     the source/build tree an installed OMPI came from
#                    (configure's --with-ompi-source; default: OMPI itself
#                    when it is a source tree)
#   --work DIR       build folder (default: $TOPOAR_COMPAT_WORK or
#                    /var/tmp/topoar-compat)
#   --logs DIR       where the logs are kept (default: docs/perf/compat)
#   --coll LIST      the coll components for the tests (see above)
#   --tests LIST     make check TESTS (space-separated)
#   --no-cluster     skip step 3
#   --jobs N         make -j (default 2)
# Environment: TOPOAR_CLUSTER_LOCK=FILE makes each emulated-cluster job hold
# flock FILE (one cluster or benchmark at a time on a shared machine).
# Exit status: 0 when every step passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
usage() { sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

name="" source="" work=${TOPOAR_COMPAT_WORK:-/var/tmp/topoar-compat} logs=$src/docs/perf/compat
coll=topoar,han,tuned,libnbc,basic,self cluster=1 jobs=2
tests="run-reduce-ops-test.sh run-mpi-tests.sh run-thread-tests.sh run-soak-tests.sh"
ompi=""
while [ $# -gt 0 ]; do
    case $1 in
        --name) name=${2:?}; shift 2 ;;
        --source) source=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --logs) logs=${2:?}; shift 2 ;;
        --coll) coll=${2?}; shift 2 ;;
        --tests) tests=${2:?}; shift 2 ;;
        --no-cluster) cluster=0; shift ;;
        --jobs) jobs=${2:?}; shift 2 ;;
        -h|--help) usage ;;
        -*) echo "compat: unknown option '$1'" >&2; usage ;;
        *) [ -z "$ompi" ] || { echo "compat: one OMPI only" >&2; usage; }; ompi=$1; shift ;;
    esac
done
[ -n "$ompi" ] || usage
[ -d "$ompi" ] || { echo "compat: $ompi: no such directory" >&2; exit 2; }
ompi=$(cd "$ompi" && pwd)

say() { echo "compat: $*"; }
die() { echo "compat: $*" >&2; exit 1; }

# ---- the Open MPI: an installation, or a source tree built once -----------
if [ -x "$ompi/bin/ompi_info" ] && [ -x "$ompi/bin/mpicc" ]; then
    prefix=$ompi
elif [ -f "$ompi/configure.ac" ] && [ -d "$ompi/ompi" ] && [ -d "$ompi/opal" ]; then
    source=${source:-$ompi}
    v() { sed -n "s/^$1=//p" "$ompi/VERSION"; }
    version="$(v major).$(v minor).$(v release)$(v greek)"
    name=${name:-ompi-$version}
    prefix=$work/$name/ompi-install
    if [ -f "$prefix/.topoar-compat-built" ] && [ -x "$prefix/bin/ompi_info" ]; then
        say "Open MPI $version already built in $prefix (remove it to rebuild)"
    else
        mkdir -p "$work/$name"
        blog=$work/$name/ompi-build.log
        say "building Open MPI $version from $ompi into $prefix (log: $blog)"
        (
            set -e
            cd "$ompi"
            command -v flex >/dev/null || { echo "flex is needed (apt-get install flex)"; exit 1; }
            [ -x configure ] || ./autogen.pl --no-3rdparty hwloc,libevent
            ./configure --prefix="$prefix" --with-devel-headers --with-pmix=internal --with-prrte=internal \
                --with-hwloc=external --with-libevent=external --disable-mpi-fortran --disable-oshmem
            nice -n 10 make -j"$jobs"
            make install
        ) >"$blog" 2>&1 || die "building Open MPI failed: tail of $blog:$(echo; tail -n 30 "$blog")"
        date -u +%FT%TZ >"$prefix/.topoar-compat-built"
    fi
else
    die "$ompi is neither an Open MPI installation (bin/ompi_info, bin/mpicc) nor a source tree (configure.ac, ompi/, opal/)"
fi
version=$("$prefix/bin/ompi_info" --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p')
[ -n "$version" ] || die "$prefix/bin/ompi_info does not run (LD_LIBRARY_PATH?)"
name=${name:-ompi-$version}
dir=$work/$name
mkdir -p "$dir" "$logs"
log=$logs/$name.log
: >"$log"
# Everything below also goes to the log kept in the repository.
exec > >(tee -a "$log") 2>&1
say "Open MPI $version in $prefix${source:+, source tree $source}; topoar $(git -C "$src" describe --always --dirty 2>/dev/null)"
say "machine: $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"

export PATH="$prefix/bin:$PATH" LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

failed=0
step() { # NAME COMMAND...: runs it, says PASS/FAIL
    local what=$1; shift
    local t0=$SECONDS
    if "$@"; then say "PASS: $what ($((SECONDS - t0)) s)"; else say "FAIL: $what"; failed=$((failed + 1)); fi
}

# ---- topoar against it ----------------------------------------------------
build=$dir/topoar-build install=$dir/topoar-install
build_topoar() {
    ( cd "$src" && { [ -x configure ] && [ configure -nt configure.ac ] || ./autogen.sh; } ) || return 1
    mkdir -p "$build"
    if [ ! -f "$build/config.status" ] || [ "$src/configure" -nt "$build/config.status" ]; then
        (cd "$build" && "$src/configure" --prefix="$install" --with-ompi="$prefix" \
            ${source:+--with-ompi-source="$source"} >configure.out 2>&1) || { tail -n 20 "$build/configure.out"; return 1; }
    fi
    grep -E '^(checking for Open MPI|checking for the coll framework|configure: building against)' "$build/configure.out"
    make -C "$build" -j"$jobs" >"$build/make.out" 2>&1 || { grep -E 'error|Error' "$build/make.out" | head -n 30; return 1; }
    make -C "$build" install >/dev/null 2>&1
}
step "topoar configured, built and installed against Open MPI $version ($build)" build_topoar || true
[ -f "$install/lib/openmpi/mca_coll_topoar.so" ] || { say "no component built: stopping"; exit 1; }
pkglib=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')

# ---- 1. the component's API version is Open MPI's own ----------------------
api_matches() {
    local info want got
    info=$(OMPI_MCA_mca_base_component_path="$pkglib:$install/lib/openmpi" ompi_info 2>&1)
    want=$(echo "$info" | sed -n 's/.*MCA coll: tuned (MCA v[0-9.]*, API \(v[0-9.]*\),.*/\1/p' | head -n1)
    got=$(echo "$info" | sed -n 's/.*MCA coll: topoar (MCA v[0-9.]*, API \(v[0-9.]*\),.*/\1/p' | head -n1)
    echo "$info" | grep -E 'MCA coll: (topoar|tuned|han) '
    [ -n "$want" ] && [ "$want" = "$got" ]
}
step "ompi_info: topoar's coll API is that of Open MPI's own components" api_matches

# ---- 2. the MPI tests ---------------------------------------------------------
say "make check TESTS='$tests' with TOPOAR_TEST_COLL=$coll"
run_tests() {
    # The fake CUDA runtime (a build with CUDA) is built without running
    # its own tests; the rest of make check runs only TESTS.
    { [ ! -d "$build/tests/fake_cuda" ] || make -C "$build/tests/fake_cuda" check TESTS=; } >"$dir/check.out" 2>&1
    TOPOAR_TEST_COLL=$coll make -C "$build/tests" check SUBDIRS=. TESTS="$tests" >>"$dir/check.out" 2>&1
    local rc=$?
    grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL)|^# ' "$dir/check.out"
    for t in $tests; do
        [ -f "$build/tests/$t.log" ] && grep -E '^(PASS|FAIL|SKIP)|took|passed, ' "$build/tests/$t.log"
    done
    return $rc
}
step "make check TESTS='$tests'" run_tests

# ---- 3. one emulated cluster -------------------------------------------------
cluster_test() {
    local tc=$src/tests/cluster/topoar-cluster bin=$build/tests/mpi/test_allreduce
    local mca=(--mca mca_base_component_path "$pkglib:$install/lib/openmpi" --mca coll_topoar_rack_file @RACKFILE@)
    [ -n "$coll" ] && mca+=(--mca coll "$coll")
    local ok=0 lock=""
    # TOPOAR_CLUSTER_LOCK=FILE: one emulated cluster (or benchmark) at a time
    # on a shared machine: each job waits for flock FILE.
    [ -n "${TOPOAR_CLUSTER_LOCK:-}" ] && lock="flock $TOPOAR_CLUSTER_LOCK"
    # coll_base_verbose 9: Open MPI names the modules it enables on each
    # communicator (han under topoar on the communicators across hosts);
    # verbose 10: auto's small-message contests (against the module below,
    # up to 64 KiB, so those calls may go either way) must have ended.
    $lock timeout -k 10 600 "$tc" exec --name compat --nodes 2,2 -- "${mca[@]}" --mca coll_base_verbose 9 \
        --mca coll_topoar_verbose 10 "$bin" --quick --expect-topoar --either-upto 65536 \
        >"$dir/cluster-auto.out" 2>&1 || ok=1
    grep -E 'passed, .* failed' "$dir/cluster-auto.out"
    grep -E 'comm_select: selecting +[a-z]+, priority' "$dir/cluster-auto.out" | sed 's/^\[[^]]*\] //' | sort | uniq -c
    grep "from now on" "$dir/cluster-auto.out" | sed 's/.*allreduce of /    contest: /' | head -n 6
    grep -q "from now on" "$dir/cluster-auto.out" || { echo "no small-message contest ended"; ok=1; }
    case ,$coll, in
        *,han,*) grep -qE 'selecting +han, priority +35, Enabled' "$dir/cluster-auto.out" ||
                     { echo "han was not enabled under topoar on any communicator"; ok=1; } ;;
    esac
    $lock timeout -k 10 600 "$tc" exec --name compat --nodes 2,2 -- "${mca[@]}" --mca coll_topoar_allreduce_algorithm hring \
        "$bin" --quick --expect-topoar >"$dir/cluster-hring.out" 2>&1 || ok=1
    grep -E 'passed, .* failed' "$dir/cluster-hring.out"
    return $ok
}
if [ "$cluster" = 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null; then
        step "emulated cluster 2+2: test_allreduce auto and hring, topoar executing" cluster_test
    else
        say "SKIP: emulated cluster (needs root, ip and tc)"
    fi
fi

say "$name: $failed step(s) failed; log $log"
[ "$failed" -eq 0 ]
