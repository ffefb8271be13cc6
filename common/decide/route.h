/*
 * topoar: a call's route -- how one MPI_Allreduce runs -- as one value.
 *
 * One table, read by C and C++: the C enum TOPOAR_ROUTE_* (topoar_engine.h,
 * the glue's switch), the C++ enum topoar::Route (decide/route.hpp), the
 * MPI_T variable coll_topoar_allreduce_last_path (whose value is the route
 * and whose description the glue builds from this table) and route names
 * (topoar_route_name).  The numbers are the last_path values of the README:
 * never renumber; a new route takes the next number.
 *
 * Plain C (no C++), so the Open MPI glue includes it too.
 */
#ifndef TOPOAR_ROUTE_H
#define TOPOAR_ROUTE_H

#include <stddef.h>

/* X(number, identifier, IDENTIFIER, name, description) */
#define TOPOAR_ROUTES(X)                                                                                        \
    X(0, none, NONE, "none", "none")                                                                            \
    X(1, host, HOST, "host", "host buffers by topoar")                                                          \
    X(2, hand_down, HAND_DOWN, "down", "host buffers handed down")                                              \
    X(3, nccl_plan, NCCL_PLAN, "nccl", "device buffers by topoar's plan over NCCL")                            \
    X(4, nccl_allreduce, NCCL_ALLREDUCE, "nccl_allreduce", "device buffers by ncclAllReduce")                  \
    X(5, staged, STAGED, "staged", "device buffers staged through pinned host memory by topoar's plan")        \
    X(6, staged_down, STAGED_DOWN, "staged_down",                                                               \
      "device buffers staged through pinned host memory to the previous module")                                \
    X(7, device_down, DEVICE_DOWN, "device_down",                                                               \
      "device buffers given to the previous module as they are (CUDA-aware MPI)")                               \
    X(8, nccl_hier, NCCL_HIER, "nccl_hier",                                                                     \
      "device buffers by nccl_hier (NCCL inside the hosts, topoar's plans across them)")                        \
    X(9, contest_host, CONTEST_HOST, "contest_host",                                                            \
      "host buffers by topoar in a turn of the small-message contest")                                          \
    X(10, contest_down, CONTEST_DOWN, "contest_down",                                                           \
      "host buffers handed down in a turn of the small-message contest")                                        \
    X(11, local, LOCAL, "local", "device buffers on a one-rank communicator (the input is the result)")        \
    X(12, check_down, CHECK_DOWN, "check_down",                                                                 \
      "host buffers handed down in a turn of the large-message model check")

enum {
#define TOPOAR_ROUTE_ENUM_(num, ident, IDENT, name, text) TOPOAR_ROUTE_##IDENT = num,
    TOPOAR_ROUTES(TOPOAR_ROUTE_ENUM_)
#undef TOPOAR_ROUTE_ENUM_
#define TOPOAR_ROUTE_COUNT_(...) +1
    TOPOAR_ROUTE_COUNT = 0 TOPOAR_ROUTES(TOPOAR_ROUTE_COUNT_)
#undef TOPOAR_ROUTE_COUNT_
};

/* A call handed to the previous module with device buffers: as they are
 * under a CUDA-aware MPI, else staged through pinned host memory. */
static inline int topoar_route_device_down(int cuda_aware)
{
    return cuda_aware ? TOPOAR_ROUTE_DEVICE_DOWN : TOPOAR_ROUTE_STAGED_DOWN;
}

/* A route's name (text == 0) or description (the README's and MPI_T's
 * words); "?" outside the table. */
static inline const char *topoar_route_field_(int route, int text)
{
    switch (route) {
#define TOPOAR_ROUTE_FIELD_(num, ident, IDENT, name, desc) case num: return text ? desc : name;
        TOPOAR_ROUTES(TOPOAR_ROUTE_FIELD_)
#undef TOPOAR_ROUTE_FIELD_
    }
    return "?";
}
static inline const char *topoar_route_name(int route) { return topoar_route_field_(route, 0); }
static inline const char *topoar_route_text(int route) { return topoar_route_field_(route, 1); }

/* The power-of-two size class of a call of `bytes` bytes: floor(log2),
 * 0 for 0 and 1.  One definition for the contest (decide/trials.cpp) and
 * the glue's once-per-class log. */
static inline int topoar_size_class(size_t bytes)
{
    return bytes <= 1 ? 0 : 63 - __builtin_clzll((unsigned long long) bytes);
}

#endif /* TOPOAR_ROUTE_H */
