/*
 * MPI_Barrier on communicators that span hosts (coll_topoar_barrier):
 * no rank leaves a barrier before the last one has entered it.
 *
 *   test_barrier [--rounds N] [--expect-topoar | --expect-previous | --expect-one-kind]
 *
 * On MPI_COMM_WORLD, a copy whose ranks are reversed (other host leaders),
 * the even ranks and the odd ranks: before topoar's set-up the barrier is
 * the previous module's; after a few allreduces it is topoar's where the
 * communicator spans hosts.  Each round every rank
 * waits a pseudo-random 0-1.5 ms (a different rank last each time), notes
 * the monotonic clock (one clock: the emulated hosts share a kernel) as it
 * enters and as it leaves, and the entries and exits are gathered: the
 * latest entry must precede the earliest exit.  --expect-topoar also
 * asserts through MPI_T (coll_topoar_barrier_handled/_fallback) that
 * topoar ran every barrier after the set-up on the communicators that span
 * hosts (each barrier counted once, topoar's or handed down) and none on
 * the others (coll_topoar_barrier always); --expect-previous that topoar
 * ran none (coll_topoar_barrier never); --expect-one-kind (auto, which
 * times both and keeps one) that after the set-up every barrier of a
 * communicator was one kind, the same on every rank, none of the timed
 * ones counted, and that the world spans hosts.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static int find_pvar(const char *want)
{
    int num = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum e;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &e, desc, &dlen, &bind, &ro, &cont,
                                               &atomic) &&
            0 == strcmp(name, want)) {
            return i;
        }
    }
    return -1;
}

/* A communicator-bound counter of topoar's, read as its growth since the
 * handle was made (how Open MPI reports counters); -1 when unreadable. */
typedef struct {
    int ok;
    MPI_T_pvar_handle h;
} counter_t;

static void counter_begin(MPI_T_pvar_session s, int idx, MPI_Comm comm, counter_t *c)
{
    int cnt;
    MPI_Comm obj = comm;
    c->ok = idx >= 0 && MPI_SUCCESS == MPI_T_pvar_handle_alloc(s, idx, &obj, &c->h, &cnt);
}

static long long counter_read(MPI_T_pvar_session s, counter_t *c)
{
    unsigned long long v = 0;
    return c->ok && MPI_SUCCESS == MPI_T_pvar_read(s, c->h, &v) ? (long long) v : -1;
}

static void counter_end(MPI_T_pvar_session s, counter_t *c)
{
    if (c->ok) {
        MPI_T_pvar_handle_free(s, &c->h);
        c->ok = 0;
    }
}

/* Rounds of barriers: the number of rounds some rank left early. */
static int check_rounds(MPI_Comm comm, int rounds, unsigned seed)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double *in = malloc(sizeof(double) * (size_t) size), *out = malloc(sizeof(double) * (size_t) size);
    for (int r = 0; r < rounds; ++r) {
        unsigned h = (seed + (unsigned) r * 2654435761u) ^ ((unsigned) rank * 40503u);
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        useconds_t wait = (useconds_t) (h % 1500u);
        if (r % 7 == 3) {
            wait = rank == (r % size) ? 3000 : 0; /* one rank clearly last */
        }
        usleep(wait);
        double t_in = now();
        MPI_Barrier(comm);
        double t_out = now();
        MPI_Allgather(&t_in, 1, MPI_DOUBLE, in, 1, MPI_DOUBLE, comm);
        MPI_Allgather(&t_out, 1, MPI_DOUBLE, out, 1, MPI_DOUBLE, comm);
        double last_in = in[0], first_out = out[0];
        int who_in = 0, who_out = 0;
        for (int k = 1; k < size; ++k) {
            if (in[k] > last_in) {
                last_in = in[k];
                who_in = k;
            }
            if (out[k] < first_out) {
                first_out = out[k];
                who_out = k;
            }
        }
        if (first_out < last_in) {
            if (0 == rank) {
                printf("FAIL: round %d: rank %d left the barrier %.1f us before rank %d entered it\n", r, who_out,
                       1e6 * (last_in - first_out), who_in);
            }
            ++bad;
        }
    }
    free(in);
    free(out);
    return bad;
}

int main(int argc, char **argv)
{
    int rounds = 60, expect = 0, provided, rank, size, failures = 0;
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--expect-topoar")) {
            expect = 1;
        } else if (0 == strcmp(argv[i], "--expect-previous")) {
            expect = 2;
        } else if (0 == strcmp(argv[i], "--expect-one-kind")) {
            expect = 3;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int handled = find_pvar("coll_topoar_barrier_handled");
    const int fallback = find_pvar("coll_topoar_barrier_fallback");
    MPI_T_pvar_session sess;
    MPI_T_pvar_session_create(&sess);
    if (expect && (handled < 0 || fallback < 0)) {
        if (0 == rank) {
            printf("FAIL: topoar's barrier counters are not there (topoar not loaded?)\n");
        }
        MPI_Finalize();
        return 1;
    }

    MPI_Comm comms[4];
    const char *names[4] = {"world", "reversed", "even ranks", "odd ranks"};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 1 ? 0 : MPI_UNDEFINED, rank, &comms[3]);

    for (int c = 0; c < 4; ++c) {
        /* Every rank walks the four in the same order; a rank outside one
         * takes part in the failure count only. */
        int mine = 0;
        MPI_Comm comm = comms[c];
        if (MPI_COMM_NULL != comm) {
            int csize, crank, local_size;
            MPI_Comm shared;
            counter_t ch, cf;
            counter_begin(sess, handled, comm, &ch);
            counter_begin(sess, fallback, comm, &cf);
            MPI_Comm_size(comm, &csize);
            MPI_Comm_rank(comm, &crank);
            MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
            MPI_Comm_size(shared, &local_size);
            MPI_Comm_free(&shared);
            int spans = local_size < csize, spans_all;
            MPI_Allreduce(&spans, &spans_all, 1, MPI_INT, MPI_MAX, comm); /* also starts topoar's set-up */

            /* Before topoar is set up on it (the allreduces inside
             * MPI_Comm_split_type may have done that): the previous
             * module's. */
            mine += check_rounds(comm, 5, 17u * (unsigned) c);
            const long long h0 = counter_read(sess, &ch);
            /* A few allreduces: the set-up completes, the barrier's layout is made. */
            for (int k = 0; k < 3; ++k) {
                double x = crank, y;
                MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm);
                if (y != (double) csize * (csize - 1) / 2) {
                    ++mine;
                }
            }
            mine += check_rounds(comm, rounds, 1000u + 31u * (unsigned) c);
            const long long h1 = counter_read(sess, &ch), f1 = counter_read(sess, &cf);
            counter_end(sess, &ch);
            counter_end(sess, &cf);
            if ((1 == expect || 3 == expect) && 0 == c && !spans_all) {
                /* Else every check below would hold for want of a barrier to take. */
                if (0 == crank) {
                    printf("FAIL: the world spans one host: --expect-topoar and --expect-one-kind need ranks on several "
                           "hosts\n");
                }
                ++mine;
            }
            if (3 == expect) {
                /* One kind after the set-up, alike on every rank: all topoar's
                 * (where it spans hosts) or all handed down; each barrier
                 * counted once, the timed ones not at all. */
                const long long after = h1 - h0, mine_kind = spans_all && after == rounds ? 1 : 0;
                long long kinds[2] = {mine_kind, -mine_kind}, all[2];
                MPI_Allreduce(kinds, all, 2, MPI_LONG_LONG, MPI_MAX, comm);
                const int ok = (0 == after || (spans_all && after == rounds)) && h1 + f1 == rounds + 5 &&
                               all[0] == -all[1];
                if (!ok) {
                    printf("FAIL: %s (rank %d of %d, %s): after the set-up topoar ran %lld of %d barriers, %lld "
                           "counted in all (%d run), the ranks %s\n",
                           names[c], crank, csize, spans_all ? "spans hosts" : "one host", after, rounds, h1 + f1,
                           rounds + 5, all[0] == -all[1] ? "agree" : "disagree");
                    ++mine;
                }
            } else if (expect) {
                /* topoar's where the communicator spans hosts, after the set-up only. */
                const int ok = 1 == expect && spans_all ? h1 >= rounds && h1 + f1 == rounds + 5 : 0 == h1;
                if (!ok) {
                    printf("FAIL: %s (rank %d of %d, %s): topoar ran %lld barriers before the set-up and %lld "
                           "after (%lld handed down)\n",
                           names[c], crank, csize, spans_all ? "spans hosts" : "one host", h0, h1, f1);
                    ++mine;
                }
            }
            if (0 == crank) {
                printf("%s: %d ranks, %s: %d rounds checked, topoar ran %lld barriers, handed down %lld\n", names[c],
                       csize, spans_all ? "spans hosts" : "one host", rounds + 5, h1, f1);
            }
            MPI_Comm_free(&comms[c]);
        }
        failures += mine;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_barrier: %d failed\n", total);
    }
    MPI_T_pvar_session_free(&sess);
    MPI_T_finalize();
    MPI_Finalize();
    return total ? 1 : 0;
}
