#!/bin/sh
# The glue's op/datatype map (coll_topoar_ops.c) against Open MPI's own
# reductions: tests/mpi/test_reduce_ops on one rank.
build=${TOPOAR_BUILDDIR:?run through make check}
exec "${MPIRUN:-mpirun}" --allow-run-as-root -np 1 "$build/tests/mpi/test_reduce_ops"
