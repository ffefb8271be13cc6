/* The engine's set-up I/O (topoar_setup_io_t) over public MPI calls, for
 * tools that run the engine's set-up themselves (topoar_info,
 * topoar_probe): point-to-point on a communicator of the tool's own, and
 * MPI_Allgather.  The component uses the PML and the previous module
 * instead (coll_topoar_allreduce.c). */
#ifndef TOPOAR_MPI_IO_H
#define TOPOAR_MPI_IO_H

#include <mpi.h>
#include <stdlib.h>

#include "topoar_engine.h"

/* Requests are heap-allocated MPI_Requests: the engine holds void *. */
static int topoar_mpi_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    MPI_Request *r = (MPI_Request *) malloc(sizeof(MPI_Request));
    if (NULL == r || bytes > (size_t) 0x7fffffff) {
        free(r);
        return MPI_ERR_COUNT;
    }
    *req = r;
    return MPI_Isend(buf, (int) bytes, MPI_BYTE, peer, 0, *(MPI_Comm *) ctx, r);
}

static int topoar_mpi_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    MPI_Request *r = (MPI_Request *) malloc(sizeof(MPI_Request));
    if (NULL == r || bytes > (size_t) 0x7fffffff) {
        free(r);
        return MPI_ERR_COUNT;
    }
    *req = r;
    return MPI_Irecv(buf, (int) bytes, MPI_BYTE, peer, 0, *(MPI_Comm *) ctx, r);
}

static int topoar_mpi_wait(void *ctx, void **req)
{
    MPI_Request *r = (MPI_Request *) *req;
    int rc = MPI_Wait(r, MPI_STATUS_IGNORE);
    (void) ctx;
    free(r);
    *req = NULL;
    return rc;
}

static int topoar_mpi_test(void *ctx, void **req, int *done)
{
    MPI_Request *r = (MPI_Request *) *req;
    int rc = MPI_Test(r, done, MPI_STATUS_IGNORE);
    (void) ctx;
    if (*done) {
        free(r);
        *req = NULL;
    }
    return rc;
}

static void topoar_mpi_progress(void *ctx)
{
    (void) ctx; /* MPI_Test drives progress itself */
}

static int topoar_mpi_cancel(void *ctx, void **req)
{
    MPI_Cancel((MPI_Request *) *req);
    return topoar_mpi_wait(ctx, req);
}

static int topoar_mpi_allgather(void *ctx, const void *mine, size_t bytes, void *all)
{
    if (bytes > (size_t) 0x7fffffff) {
        return 1;
    }
    return MPI_SUCCESS != MPI_Allgather(mine, (int) bytes, MPI_BYTE, all, (int) bytes, MPI_BYTE,
                                        *(MPI_Comm *) ctx);
}

/* comm must outlive the structures (a communicator of the tool's own, so
 * its messages meet nothing else). */
static void topoar_mpi_setup_io(MPI_Comm *comm, topoar_transport_t *t, topoar_setup_io_t *io)
{
    t->ctx = comm;
    t->isend = topoar_mpi_isend;
    t->irecv = topoar_mpi_irecv;
    t->wait = topoar_mpi_wait;
    t->test = topoar_mpi_test;
    t->progress = topoar_mpi_progress;
    t->cancel = topoar_mpi_cancel;
    t->issend = NULL; /* the engine then uses isend */
    io->transport = t;
    io->ctx = comm;
    io->allgather = topoar_mpi_allgather;
}

/* What the component does at a communicator's first call, for a tool:
 * every rank's set-up record (an allgather over MPI_COMM_WORLD), then the
 * engine's set-up over a duplicate of it (*comm, kept for t and io: free it
 * after the engine), measuring the links where no file describes them.
 * Returns topoar_engine_setup_io's code; *engine is NULL (and the return
 * TOPOAR_ERR_INTERNAL) when out of memory. */
static int topoar_mpi_engine_setup(const topoar_config_t *cfg, MPI_Comm *comm, topoar_transport_t *t,
                                   topoar_setup_io_t *io, topoar_engine_t **engine)
{
    int rank = 0, size = 1, rc = TOPOAR_ERR_INTERNAL;
    topoar_rank_info_t mine, *all;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    topoar_local_rank_info(&mine);
    all = (topoar_rank_info_t *) malloc((size_t) size * sizeof(mine));
    if (NULL == all) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);
    MPI_Comm_dup(MPI_COMM_WORLD, comm);
    topoar_mpi_setup_io(comm, t, io);
    *engine = topoar_engine_create(rank, size, cfg);
    if (NULL != *engine) {
        rc = topoar_engine_setup_io(*engine, all, io);
    }
    free(all);
    return rc;
}

#endif
