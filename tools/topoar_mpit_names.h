/*
 * Reading names out of topoar's MPI_T variable descriptions, for the
 * programs that show which algorithm ran (tools/topoar_osu_allreduce,
 * tests/mpi/test_allreduce).  Header-only: both are plain MPI programs
 * that do not link the engine.
 */
#ifndef TOPOAR_MPIT_NAMES_H
#define TOPOAR_MPIT_NAMES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The name listed after VALUE in the last_algorithm variable's description
 * ("...: 0 none, 1 ring, 2 leader, ..., 100 fallback (handed down)"), which
 * topoar generates from its algorithm table; 0 if it is not listed. */
static inline int topoar_name_in_description(const char *desc, int value, char *out, size_t len)
{
    const char *p = strchr(desc, ':');
    while (NULL != p) {
        char *end;
        long v;
        p++;
        while (' ' == *p) p++;
        v = strtol(p, &end, 10);
        if (end != p && ' ' == *end && v == value) {
            int n = (int) strcspn(end + 1, ", ");
            snprintf(out, len, "%.*s", n, end + 1);
            return 1;
        }
        p = strchr(p, ',');
    }
    return 0;
}

#endif /* TOPOAR_MPIT_NAMES_H */
