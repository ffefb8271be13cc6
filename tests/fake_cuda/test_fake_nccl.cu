/*
 * Multi-process test of the fake NCCL (run under mpirun, 2-4 ranks; MPI only
 * broadcasts the unique id and gathers the verdict).  Compiled by nvcc
 * against the REAL nccl.h and linked against the REAL libnccl.so.2; run with
 * LD_LIBRARY_PATH naming the fakes and FAKECUDA_DEVICES >= ranks.
 *
 *   test_fake_nccl              correctness (exit 0 when every check passed)
 *   test_fake_nccl mismatch     rank 0 sends 10 floats to rank 1, which
 *                               receives 8: the fake must abort the job
 *   test_fake_nccl mismatch-rs  rank 0 calls ncclReduceScatter with 10
 *                               elements per rank, the others with 8: the
 *                               fake must abort the job
 *   test_fake_nccl duplicate    every rank on device 0: init must fail with
 *                               ncclInvalidUsage on every rank (exit 0 if so)
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

static int rank_ = 0, nranks_ = 1, failures = 0;

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            fprintf(stderr, "test_fake_nccl rank %d: FAILED %s:%d: %s\n", rank_, __FILE__, __LINE__, #cond); \
            failures++;                                                                               \
        }                                                                                             \
    } while (0)
#define CU(call) CHECK((call) == cudaSuccess)
#define NC(call) CHECK((call) == ncclSuccess)

static ncclComm_t init_comm(int device, ncclResult_t *res) {
    ncclUniqueId id;
    if (rank_ == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    cudaSetDevice(device);
    ncclComm_t c = NULL;
    *res = ncclCommInitRank(&c, nranks_, id, rank_);
    return c;
}

template <class T> static T *dalloc(size_t n) {
    T *p = NULL;
    CU(cudaMalloc(&p, n * sizeof(T) + 1));
    return p;
}

template <class T> static void put(T *d, const std::vector<T> &h) {
    CU(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    /* a pageable H2D cudaMemcpy may return before its DMA is done; the
     * non-blocking streams below do not wait for the legacy stream */
    CU(cudaDeviceSynchronize());
}

template <class T> static std::vector<T> get(const T *d, size_t n) {
    std::vector<T> h(n);
    CU(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static float bf16f(uint16_t b) {
    uint32_t f = (uint32_t)b << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}
static uint16_t f2bf16(float x) { /* exact for the small integers used here */
    uint32_t f;
    memcpy(&f, &x, 4);
    return (uint16_t)(f >> 16);
}
static uint16_t f2half_int(int v) { /* small non-negative integers */
    if (v == 0) return 0;
    int e = 0;
    while ((1 << (e + 1)) <= v) e++;
    return (uint16_t)(((e + 15) << 10) | ((v - (1 << e)) << (10 - e)));
}

static void test_ring(ncclComm_t comm, cudaStream_t s) {
    const size_t n = 1000;
    int *sb = dalloc<int>(n), *rb = dalloc<int>(n);
    std::vector<int> h(n);
    for (size_t i = 0; i < n; i++) h[i] = rank_ * 100000 + (int)i;
    put(sb, h);
    CU(cudaMemset(rb, 0, n * sizeof(int)));
    int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
    NC(ncclGroupStart());
    if (rank_ % 2) { /* recv first on odd ranks: any order works in a group */
        NC(ncclRecv(rb, n, ncclInt32, prev, comm, s));
        NC(ncclSend(sb, n, ncclInt32, next, comm, s));
    } else {
        NC(ncclSend(sb, n, ncclInt32, next, comm, s));
        NC(ncclRecv(rb, n, ncclInt32, prev, comm, s));
    }
    NC(ncclGroupEnd());
    std::vector<int> got = get(rb, n); /* the legacy stream does not wait for s (non-blocking) */
    CHECK(got[0] == 0 && got[n - 1] == 0);
    CU(cudaStreamSynchronize(s));
    got = get(rb, n);
    CHECK(got[0] == prev * 100000 && got[n - 1] == prev * 100000 + (int)n - 1);
    CU(cudaFree(sb));
    CU(cudaFree(rb));
}

static void test_allreduce(ncclComm_t comm, cudaStream_t s) {
    const size_t n = 513;
    int N = nranks_;
    /* float32 sum, out of place */
    {
        float *sb = dalloc<float>(n), *rb = dalloc<float>(n);
        std::vector<float> h(n);
        for (size_t i = 0; i < n; i++) h[i] = (float)(rank_ + 1) * 0.5f + (float)i;
        put(sb, h);
        NC(ncclAllReduce(sb, rb, n, ncclFloat32, ncclSum, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<float> got = get(rb, n);
        bool ok = true;
        for (size_t i = 0; i < n; i++) {
            float ref = 0;
            for (int r = 0; r < N; r++) ref += (float)(r + 1) * 0.5f + (float)i;
            ok &= fabsf(got[i] - ref) < 1e-3f;
        }
        CHECK(ok);
        CU(cudaFree(sb));
        CU(cudaFree(rb));
    }
    /* int32 max, in place */
    {
        int *b = dalloc<int>(n);
        std::vector<int> h(n);
        for (size_t i = 0; i < n; i++) h[i] = (int)((i * 7 + (size_t)rank_ * 13) % 29) - 10;
        put(b, h);
        NC(ncclAllReduce(b, b, n, ncclInt32, ncclMax, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<int> got = get(b, n);
        bool ok = true;
        for (size_t i = 0; i < n; i++) {
            int ref = -1000;
            for (int r = 0; r < N; r++) ref = std::max(ref, (int)((i * 7 + (size_t)r * 13) % 29) - 10);
            ok &= got[i] == ref;
        }
        CHECK(ok);
        CU(cudaFree(b));
    }
    /* int64 prod, uint8 min, float64 avg, float16 sum, bfloat16 sum */
    {
        int64_t *b = dalloc<int64_t>(4);
        put(b, std::vector<int64_t>{rank_ + 2, -1, 3, (int64_t)1 << 20});
        NC(ncclAllReduce(b, b, 4, ncclInt64, ncclProd, comm, s));
        uint8_t *u = dalloc<uint8_t>(3);
        put(u, std::vector<uint8_t>{(uint8_t)(200 - rank_), (uint8_t)(rank_ + 5), 255});
        NC(ncclAllReduce(u, u, 3, ncclUint8, ncclMin, comm, s));
        double *d = dalloc<double>(2);
        put(d, std::vector<double>{(double)rank_, 1.0});
        NC(ncclAllReduce(d, d, 2, ncclFloat64, ncclAvg, comm, s));
        uint16_t *hf = dalloc<uint16_t>(2), *bf = dalloc<uint16_t>(2);
        put(hf, std::vector<uint16_t>{f2half_int(rank_ + 1), f2half_int(3)});
        NC(ncclAllReduce(hf, hf, 2, ncclFloat16, ncclSum, comm, s));
        put(bf, std::vector<uint16_t>{f2bf16((float)(rank_ + 1)), f2bf16(-2.0f)});
        NC(ncclAllReduce(bf, bf, 2, ncclBfloat16, ncclSum, comm, s));
        CU(cudaStreamSynchronize(s));
        int64_t p = 1, m1 = 1, p3 = 1, big = 1;
        for (int r = 0; r < N; r++) { p *= r + 2; m1 *= -1; p3 *= 3; big = r ? big << 20 : (int64_t)1 << 20; }
        std::vector<int64_t> gi = get(b, 4);
        CHECK(gi[0] == p && gi[1] == m1 && gi[2] == p3 && gi[3] == big);
        std::vector<uint8_t> gu = get(u, 3);
        CHECK(gu[0] == 200 - (N - 1) && gu[1] == 5 && gu[2] == 255);
        std::vector<double> gd = get(d, 2);
        CHECK(fabs(gd[0] - (N - 1) / 2.0) < 1e-12 && gd[1] == 1.0);
        std::vector<uint16_t> gh = get(hf, 2), gb = get(bf, 2);
        CHECK(gh[0] == f2half_int(N * (N + 1) / 2) && gh[1] == f2half_int(3 * N));
        CHECK(bf16f(gb[0]) == (float)(N * (N + 1) / 2) && bf16f(gb[1]) == -2.0f * N);
        CU(cudaFree(b));
        CU(cudaFree(u));
        CU(cudaFree(d));
        CU(cudaFree(hf));
        CU(cudaFree(bf));
    }
    /* premulsum: each rank's input times its own scalar */
    {
        float *b = dalloc<float>(2);
        put(b, std::vector<float>{1.0f, 2.0f});
        float scalar = (float)(rank_ + 1);
        ncclRedOp_t op;
        NC(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
        NC(ncclAllReduce(b, b, 2, ncclFloat32, op, comm, s));
        CU(cudaStreamSynchronize(s));
        NC(ncclRedOpDestroy(op, comm));
        std::vector<float> g = get(b, 2);
        float ref = (float)(N * (N + 1) / 2);
        CHECK(g[0] == ref && g[1] == 2 * ref);
        CU(cudaFree(b));
    }
}

static void test_other_collectives(ncclComm_t comm, cudaStream_t s) {
    int N = nranks_;
    const size_t c = 100;
    /* reduce-scatter */
    {
        float *sb = dalloc<float>(c * N), *rb = dalloc<float>(c);
        std::vector<float> h(c * N);
        for (size_t i = 0; i < c * N; i++) h[i] = (float)(i + (size_t)rank_ * 1000);
        put(sb, h);
        NC(ncclReduceScatter(sb, rb, c, ncclFloat32, ncclSum, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<float> g = get(rb, c);
        bool ok = true;
        for (size_t i = 0; i < c; i++) {
            float ref = 0;
            for (int r = 0; r < N; r++) ref += (float)((size_t)rank_ * c + i + (size_t)r * 1000);
            ok &= g[i] == ref;
        }
        CHECK(ok);
        CU(cudaFree(sb));
        CU(cudaFree(rb));
    }
    /* all-gather, in place */
    {
        int *b = dalloc<int>(c * N);
        CU(cudaMemset(b, 0xff, c * N * sizeof(int)));
        std::vector<int> mine(c);
        for (size_t i = 0; i < c; i++) mine[i] = rank_ * 1000 + (int)i;
        CU(cudaMemcpy(b + (size_t)rank_ * c, mine.data(), c * sizeof(int), cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize());
        NC(ncclAllGather(b + (size_t)rank_ * c, b, c, ncclInt32, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<int> g = get(b, c * N);
        bool ok = true;
        for (int r = 0; r < N; r++)
            for (size_t i = 0; i < c; i++) ok &= g[(size_t)r * c + i] == r * 1000 + (int)i;
        CHECK(ok);
        CU(cudaFree(b));
    }
    /* reduce-scatter and all-gather in place, as nccl_hier uses them:
     * recvbuff = sendbuff + rank * count, sendbuff = recvbuff + rank * count;
     * any other overlap is refused */
    {
        int *b = dalloc<int>(c * N);
        std::vector<int> h(c * N);
        for (size_t i = 0; i < c * N; i++) h[i] = (int)i * (rank_ + 1);
        put(b, h);
        NC(ncclReduceScatter(b, b + (size_t)rank_ * c, c, ncclInt32, ncclSum, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<int> g = get(b + (size_t)rank_ * c, c);
        bool ok = true;
        for (size_t i = 0; i < c; i++) ok &= g[i] == (int)((size_t)rank_ * c + i) * (N * (N + 1) / 2);
        CHECK(ok);
        NC(ncclAllGather(b + (size_t)rank_ * c, b, c, ncclInt32, comm, s));
        CU(cudaStreamSynchronize(s));
        g = get(b, c * N);
        ok = true;
        for (size_t i = 0; i < c * N; i++) ok &= g[i] == (int)i * (N * (N + 1) / 2);
        CHECK(ok);
        if (N > 1) {
            /* refused on every rank, so nothing is queued anywhere */
            CHECK(ncclReduceScatter(b, b + 1, c, ncclInt32, ncclSum, comm, s) == ncclInvalidArgument);
            CHECK(strstr(ncclGetLastError(comm), "overlap but not in place") != NULL);
            CHECK(ncclAllGather(b + 1, b, c, ncclInt32, comm, s) == ncclInvalidArgument);
            CHECK(ncclAllReduce(b, b + 1, c, ncclInt32, ncclSum, comm, s) == ncclInvalidArgument);
        }
        CU(cudaFree(b));
    }
    /* broadcast from root 1 % N, reduce (min) to root N - 1 */
    {
        int root = 1 % N;
        double *sb = dalloc<double>(c), *rb = dalloc<double>(c);
        std::vector<double> h(c, -1.0);
        if (rank_ == root)
            for (size_t i = 0; i < c; i++) h[i] = 0.25 * (double)i;
        put(sb, h);
        CU(cudaMemset(rb, 0, c * sizeof(double)));
        NC(ncclBroadcast(sb, rb, c, ncclFloat64, root, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<double> g = get(rb, c);
        CHECK(g[0] == 0.0 && g[c - 1] == 0.25 * (double)(c - 1));

        std::vector<int> hv(c);
        for (size_t i = 0; i < c; i++) hv[i] = (int)i - rank_;
        int *ib = dalloc<int>(c), *ob = dalloc<int>(c);
        put(ib, hv);
        CU(cudaMemset(ob, 0, c * sizeof(int)));
        NC(ncclReduce(ib, ob, c, ncclInt32, ncclMin, N - 1, comm, s));
        CU(cudaStreamSynchronize(s));
        std::vector<int> go = get(ob, c);
        if (rank_ == N - 1) CHECK(go[0] == -(N - 1) && go[c - 1] == (int)c - 1 - (N - 1));
        else CHECK(go[0] == 0 && go[c - 1] == 0); /* only the root receives */
        CU(cudaFree(sb));
        CU(cudaFree(rb));
        CU(cudaFree(ib));
        CU(cudaFree(ob));
    }
    /* a group mixing a collective and point-to-point, two streams joined */
    {
        cudaStream_t s2;
        CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        int *a = dalloc<int>(1), *x = dalloc<int>(1), *y = dalloc<int>(1);
        put(a, std::vector<int>{rank_});
        put(x, std::vector<int>{rank_ * 10});
        NC(ncclGroupStart());
        NC(ncclRecv(y, 1, ncclInt32, (rank_ + N - 1) % N, comm, s2));
        NC(ncclAllReduce(a, a, 1, ncclInt32, ncclSum, comm, s));
        NC(ncclSend(x, 1, ncclInt32, (rank_ + 1) % N, comm, s2));
        NC(ncclGroupEnd());
        CU(cudaStreamSynchronize(s)); /* one item on both streams */
        CHECK(get(a, 1)[0] == N * (N - 1) / 2);
        CHECK(get(y, 1)[0] == ((rank_ + N - 1) % N) * 10);
        CU(cudaStreamDestroy(s2));
        CU(cudaFree(a));
        CU(cudaFree(x));
        CU(cudaFree(y));
    }
    /* invalid buffers are refused at the call */
    {
        std::vector<float> host(10);
        float *d = dalloc<float>(10);
        CHECK(ncclAllReduce(host.data(), d, 10, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument);
        CHECK(ncclSend(d, 11, ncclFloat32, 0, comm, s) == ncclInvalidArgument); /* leaves the allocation */
        CHECK(strstr(ncclGetLastError(comm), "leaves its device allocation") != NULL);
        CU(cudaFree(d));
    }
}

static void test_split(ncclComm_t comm, cudaStream_t s) {
    int N = nranks_;
    ncclComm_t sub = NULL;
    NC(ncclCommSplit(comm, rank_ % 2, -rank_, &sub, NULL));
    CHECK(sub != NULL);
    int sn = 0, sr = -1, dev = -1;
    NC(ncclCommCount(sub, &sn));
    NC(ncclCommUserRank(sub, &sr));
    NC(ncclCommCuDevice(sub, &dev));
    int members = (N + 1 - rank_ % 2) / 2;
    CHECK(sn == members);
    /* key -rank: highest parent rank first */
    int higher = 0;
    for (int r = rank_ + 1; r < N; r++) higher += r % 2 == rank_ % 2;
    CHECK(sr == higher);
    CHECK(dev == rank_ % 4);
    int *b = dalloc<int>(1), *pb = dalloc<int>(1);
    put(b, std::vector<int>{rank_});
    put(pb, std::vector<int>{1});
    /* interleave operations on the parent and the child */
    NC(ncclAllReduce(b, b, 1, ncclInt32, ncclSum, sub, s));
    NC(ncclAllReduce(pb, pb, 1, ncclInt32, ncclSum, comm, s));
    CU(cudaStreamSynchronize(s));
    int ref = 0;
    for (int r = 0; r < N; r++) ref += r % 2 == rank_ % 2 ? r : 0;
    CHECK(get(b, 1)[0] == ref);
    CHECK(get(pb, 1)[0] == N);
    /* nccl_hier's pattern: reduce-scatter on the child in one group with a
     * reduce of the remainder, point-to-point on the parent, all-gather and
     * broadcast on the child, all on one stream */
    {
        const size_t q = 5, tail = 3, n = q * (size_t)sn + tail;
        int *v = dalloc<int>(n), *x = dalloc<int>(1), *y = dalloc<int>(1);
        std::vector<int> h(n);
        for (size_t i = 0; i < n; i++) h[i] = (int)i + 100 * rank_;
        put(v, h);
        put(x, std::vector<int>{rank_});
        NC(ncclGroupStart());
        NC(ncclReduceScatter(v, v + (size_t)sr * q, q, ncclInt32, ncclSum, sub, s));
        NC(ncclReduce(v + q * (size_t)sn, v + q * (size_t)sn, tail, ncclInt32, ncclSum, sn - 1, sub, s));
        NC(ncclGroupEnd());
        NC(ncclGroupStart());
        NC(ncclSend(x, 1, ncclInt32, (rank_ + 1) % N, comm, s));
        NC(ncclRecv(y, 1, ncclInt32, (rank_ + N - 1) % N, comm, s));
        NC(ncclGroupEnd());
        NC(ncclGroupStart());
        NC(ncclAllGather(v + (size_t)sr * q, v, q, ncclInt32, sub, s));
        NC(ncclBroadcast(v + q * (size_t)sn, v + q * (size_t)sn, tail, ncclInt32, sn - 1, sub, s));
        NC(ncclGroupEnd());
        CU(cudaStreamSynchronize(s));
        int ranks_sum = 0;
        for (int r = 0; r < N; r++) ranks_sum += r % 2 == rank_ % 2 ? r : 0;
        std::vector<int> g = get(v, n);
        bool ok = true;
        for (size_t i = 0; i < n; i++) ok &= g[i] == (int)i * sn + 100 * ranks_sum;
        CHECK(ok);
        CHECK(get(y, 1)[0] == (rank_ + N - 1) % N);
        CU(cudaFree(v));
        CU(cudaFree(x));
        CU(cudaFree(y));
    }
    NC(ncclCommDestroy(sub));
    /* NCCL_SPLIT_NOCOLOR gives no communicator */
    ncclComm_t sub2 = (ncclComm_t)0x1;
    NC(ncclCommSplit(comm, rank_ == 0 ? NCCL_SPLIT_NOCOLOR : 7, rank_, &sub2, NULL));
    if (rank_ == 0) CHECK(sub2 == NULL);
    else {
        CHECK(sub2 != NULL);
        int c2 = 0;
        NC(ncclCommCount(sub2, &c2));
        CHECK(c2 == N - 1);
        NC(ncclCommDestroy(sub2));
    }
    CU(cudaFree(b));
    CU(cudaFree(pb));
}

/* one process, two devices: ncclCommInitAll and a grouped all-reduce over
 * both communicators (one item spanning both streams) */
static void test_init_all(void) {
    ncclComm_t comms[2];
    int devs[2] = {0, 1};
    NC(ncclCommInitAll(comms, 2, devs));
    cudaStream_t st[2];
    float *b[2];
    for (int i = 0; i < 2; i++) {
        CU(cudaSetDevice(i));
        CU(cudaStreamCreate(&st[i]));
        b[i] = dalloc<float>(4);
        put(b[i], std::vector<float>(4, (float)(i + 1)));
    }
    NC(ncclGroupStart());
    for (int i = 0; i < 2; i++) NC(ncclAllReduce(b[i], b[i], 4, ncclFloat32, ncclSum, comms[i], st[i]));
    NC(ncclGroupEnd());
    for (int i = 0; i < 2; i++) {
        CU(cudaSetDevice(i));
        CU(cudaStreamSynchronize(st[i]));
        CHECK(get(b[i], 4)[3] == 3.0f);
        CU(cudaStreamDestroy(st[i]));
        CU(cudaFree(b[i]));
        NC(ncclCommDestroy(comms[i]));
    }
    CU(cudaSetDevice(rank_ % 4));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
    const char *mode = argc > 1 ? argv[1] : "all";
    ncclResult_t res;

    if (!strcmp(mode, "duplicate")) {
        ncclComm_t c = init_comm(0, &res);
        CHECK(res == ncclInvalidUsage && c == NULL);
        CHECK(strstr(ncclGetLastError(NULL), "Duplicate GPU detected") != NULL);
    } else if (!strcmp(mode, "mismatch-rs")) {
        ncclComm_t c = init_comm(rank_ % 4, &res);
        size_t n = rank_ == 0 ? 10 : 8;
        float *b = dalloc<float>(10 * (size_t)nranks_);
        cudaStream_t s;
        CU(cudaStreamCreate(&s));
        NC(ncclReduceScatter(b, b + (size_t)rank_ * n, n, ncclFloat32, ncclSum, c, s));
        CU(cudaStreamSynchronize(s));
        fprintf(stderr, "test_fake_nccl rank %d: the collective mismatch was NOT detected\n", rank_);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0; /* run-fake-tests.sh expects a failure */
    } else if (!strcmp(mode, "mismatch")) {
        ncclComm_t c = init_comm(rank_ % 4, &res);
        float *b = dalloc<float>(10);
        cudaStream_t s;
        CU(cudaStreamCreate(&s));
        if (rank_ == 0) NC(ncclSend(b, 10, ncclFloat32, 1, c, s));
        if (rank_ == 1) NC(ncclRecv(b, 8, ncclFloat32, 0, c, s));
        CU(cudaStreamSynchronize(s));
        fprintf(stderr, "test_fake_nccl rank %d: the mismatch was NOT detected\n", rank_);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0; /* run-fake-tests.sh expects a failure */
    } else {
        int v = 0;
        NC(ncclGetVersion(&v));
        CHECK(v == 22809);
        ncclComm_t comm = init_comm(rank_ % 4, &res);
        CHECK(res == ncclSuccess);
        if (res == ncclSuccess) {
            int n = 0, r = -1, d = -1;
            NC(ncclCommCount(comm, &n));
            NC(ncclCommUserRank(comm, &r));
            NC(ncclCommCuDevice(comm, &d));
            CHECK(n == nranks_ && r == rank_ && d == rank_ % 4);
            cudaStream_t s;
            CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            test_ring(comm, s);
            test_allreduce(comm, s);
            test_other_collectives(comm, s);
            test_split(comm, s);
            if (rank_ == 0) test_init_all();
            CU(cudaStreamDestroy(s));
            NC(ncclCommFinalize(comm));
            NC(ncclCommDestroy(comm));
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0) {
        if (total) fprintf(stderr, "test_fake_nccl (%s, %d ranks): %d check(s) FAILED\n", mode, nranks_, total);
        else printf("test_fake_nccl (%s, %d ranks): all checks passed\n", mode, nranks_);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
