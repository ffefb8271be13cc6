#!/bin/bash
# Emulated multi-node clusters (network namespaces): needs root and iproute2.
# Runs the correctness program with topoar on the clusters of
# tests/cluster/run-ci.sh; skipped (exit 77) where namespaces cannot be made.
set -u
src=${TOPOAR_SRCDIR:?run through make check}
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: emulated clusters need root and iproute2"
    exit 77
fi
exec "$src/tests/cluster/run-ci.sh"
