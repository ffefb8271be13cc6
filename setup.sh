#!/bin/bash
# topoar: set up (Debian packages, build, install into ./_install) and run.
#
#   ./setup.sh demo   set up, then run the demo job (4 ranks, topoar loaded)
#   ./setup.sh test   set up, then run every test (make check)
#   ./setup.sh build  set up only
#
# Environment: PREFIX (default ./_install), BUILD_DIR (default ./_build),
# CONFIGURE_FLAGS (extra ./configure arguments, e.g. --with-ompi=/opt/ompi).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")"
top=$PWD
action=${1:-demo}
prefix=${PREFIX:-$top/_install}
build=${BUILD_DIR:-$top/_build}

packages=(build-essential autoconf automake libtool pkg-config
          openmpi-bin libopenmpi-dev libhwloc-dev hwloc libucx-dev libcmocka-dev
          iproute2 valgrind python3 python3-matplotlib
          clang)  # libFuzzer for tests/run-fuzz-tests.sh

install_packages() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "setup: installing Debian packages: ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
        sudo=sudo
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build_and_install() {
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        ./autogen.sh
    fi
    mkdir -p "$build"
    if [ ! -f "$build/Makefile" ] || [ configure -nt "$build/config.status" ]; then
        (cd "$build" && "$top/configure" --prefix="$prefix" ${CONFIGURE_FLAGS:-})
    fi
    make -C "$build" -j"$(nproc)"
    make -C "$build" install >/dev/null
    echo "setup: installed into $prefix (component: $prefix/lib/openmpi/mca_coll_topoar.so)"
}

run_demo() {
    # shellcheck disable=SC1091
    . "$prefix/share/topoar/topoar-env.sh"
    local topoar=(--mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 20)
    if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null; then
        # Two emulated hosts (network namespaces, 1 Gbit/s links), 2 ranks
        # each, and no file describing them: topoar measures the links at
        # set-up (verbose 10 and up prints what it measured and the table).
        echo "+ tests/cluster/topoar-cluster exec --name demo --nodes 2,2 --node-rate 1gbit -- \\"
        echo "    ${topoar[*]} topoar_demo"
        tests/cluster/topoar-cluster exec --name demo --nodes 2,2 --node-rate 1gbit -- \
            "${topoar[@]}" "$prefix/bin/topoar_demo"
        echo
        # 100 warm-up calls per size: up to 64 KiB the first calls of a
        # size are auto's contest (coll_topoar_trial_calls), over by then.
        echo "+ the same cluster, topoar_osu_allreduce -a (Algorithm column read through MPI_T;"
        echo "  'fallback': the previous module, which won that size's small-message contest)"
        tests/cluster/topoar-cluster exec --name demo --nodes 2,2 --node-rate 1gbit -- \
            --mca coll topoar,tuned,libnbc,basic,self \
            "$prefix/bin/topoar_osu_allreduce" -m 8:4194304 -i 20 -x 100 -X 2 -a
    else
        # Not root: one host, where auto would hand every call to tuned.
        local mpirun=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np 4)
        echo "+ ${mpirun[*]} ${topoar[*]} --mca coll_topoar_single_node_fallback 0 topoar_demo"
        "${mpirun[@]}" "${topoar[@]}" --mca coll_topoar_single_node_fallback 0 "$prefix/bin/topoar_demo"
    fi
}

run_tests() {
    # Tests run from the build tree; -j1 keeps MPI jobs from competing for
    # the cores.  The summary of every suite is printed at the end.
    local rc=0
    make -C "$build" check -j1 || rc=$?
    for log in "$build"/tests/*.log "$build"/tests/unit/*.log; do
        case "$log" in *test-suite.log) continue ;; esac
        [ -f "$log" ] && grep -hE "^\[  (PASSED|FAILED)  \]|passed, [0-9]+ failed|^(PASS|FAIL|SKIP):" "$log" | tail -n 3 || true
    done
    cat "$build/tests/test-suite.log" | sed -n '1,12p'
    return $rc
}

install_packages
build_and_install
case "$action" in
    demo) run_demo ;;
    test) run_tests ;;
    build) ;;
    *) echo "usage: $0 demo|test|build" >&2; exit 2 ;;
esac
