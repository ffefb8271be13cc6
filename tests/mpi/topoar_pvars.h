/*
 * topoar's MPI_T performance variables for the soak and thread tests
 * (tests/mpi/soak.c, tests/mpi/test_threads.c): the path of this process's
 * last call (coll_topoar_allreduce_last_path) and the calls topoar executed
 * on a communicator (coll_topoar_allreduce_handled).  Header-only: these
 * are plain MPI programs.  Each user holds its own session, so threads
 * need not share one.
 */
#ifndef TOPOAR_TEST_PVARS_H
#define TOPOAR_TEST_PVARS_H

#include <mpi.h>
#include <string.h>

/* coll_topoar_allreduce_last_path values (README.md, coll_topoar.h) */
enum { TP_PATH_NONE = 0, TP_PATH_HOST = 1, TP_PATH_HAND_DOWN = 2 };

typedef struct {
    int ok;                     /* session made and both variables found */
    MPI_T_pvar_session sess;
    int idx_path, idx_handled;
    int cont_path, cont_handled;
    MPI_T_pvar_handle path;
} tp_pvars;

static inline int tp_find(const char *want, int *idx, int *cont)
{
    int num = 0;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS) return 0;
    for (int i = 0; i < num; i++) {
        char name[256], desc[2048];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, atomic;
        MPI_Datatype dt;
        MPI_T_enum e;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &e, desc, &dlen, &bind, &ro, cont, &atomic) ==
                MPI_SUCCESS &&
            strcmp(name, want) == 0) {
            *idx = i;
            return 1;
        }
    }
    return 0;
}

/* After MPI_T_init_thread.  0: topoar's variables are not there (not loaded). */
static inline int tp_open(tp_pvars *p)
{
    int cnt;
    memset(p, 0, sizeof(*p));
    if (!tp_find("coll_topoar_allreduce_last_path", &p->idx_path, &p->cont_path) ||
        !tp_find("coll_topoar_allreduce_handled", &p->idx_handled, &p->cont_handled))
        return 0;
    if (MPI_T_pvar_session_create(&p->sess) != MPI_SUCCESS) return 0;
    if (MPI_T_pvar_handle_alloc(p->sess, p->idx_path, NULL, &p->path, &cnt) != MPI_SUCCESS) {
        MPI_T_pvar_session_free(&p->sess);
        return 0;
    }
    if (!p->cont_path) MPI_T_pvar_start(p->sess, p->path);
    p->ok = 1;
    return 1;
}

static inline void tp_close(tp_pvars *p)
{
    if (!p->ok) return;
    MPI_T_pvar_handle_free(p->sess, &p->path);
    MPI_T_pvar_session_free(&p->sess);
    p->ok = 0;
}

/* The path of this process's last allreduce (-1: unknown). */
static inline int tp_last_path(tp_pvars *p)
{
    int v = -1;
    if (!p->ok || MPI_T_pvar_read(p->sess, p->path, &v) != MPI_SUCCESS) return -1;
    return v;
}

/* coll_topoar_allreduce_handled bound to one communicator: calls topoar
 * executed itself on it since tp_count_begin (Open MPI reports a counter
 * as its growth since the handle was started). */
typedef struct {
    int ok;
    MPI_T_pvar_handle h;
} tp_count;

static inline void tp_count_begin(tp_pvars *p, MPI_Comm comm, tp_count *c)
{
    int cnt;
    MPI_Comm obj = comm;
    c->ok = p->ok && MPI_T_pvar_handle_alloc(p->sess, p->idx_handled, &obj, &c->h, &cnt) == MPI_SUCCESS;
    if (c->ok && !p->cont_handled) MPI_T_pvar_start(p->sess, c->h);
}

/* The count so far and the handle freed; -1: unknown. */
static inline long long tp_count_end(tp_pvars *p, tp_count *c)
{
    unsigned long long v = 0;
    if (!c->ok) return -1;
    int rc = MPI_T_pvar_read(p->sess, c->h, &v);
    MPI_T_pvar_handle_free(p->sess, &c->h);
    c->ok = 0;
    return rc == MPI_SUCCESS ? (long long)v : -1;
}

#endif /* TOPOAR_TEST_PVARS_H */
