/*
 * Tests of the fake CUDA runtime.  Compiled by nvcc against the REAL headers
 * and linked against the REAL libcudart.so.13 (-cudart shared); run with
 * LD_LIBRARY_PATH naming the fake.  The fake's accounting hooks are not in
 * the real library, so they are looked up with dlsym.
 */
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" __global__ void fakecuda_selftest_kernel(float *y, const float *x, float a, char c, double b,
                                                    unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = (float)(a * x[i] + b + c);
}

extern "C" __global__ void fakecuda_selftest_fill(int *p, int v, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

extern "C" __global__ void fakecuda_selftest_no_twin(int *p) { p[0] = 1; }

static int failures = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "test_fake_cuda: FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)
#define OK(call) CHECK((call) == cudaSuccess)

template <class F> static F hook(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        fprintf(stderr, "test_fake_cuda: %s not found: is LD_LIBRARY_PATH pointing at the fake libcudart?\n", name);
        exit(2);
    }
    return (F)p;
}

static unsigned long long (*sync_count)(void);
static unsigned long long (*launch_count)(void);
static unsigned long long (*bytes_copied)(int);
static unsigned long (*live_allocations)(int);

/* runs this program again with one argument and an extra environment
 * variable; returns the wait status, the child's stderr in *err */
static int rerun(const char *arg, const char *env, char *err, size_t errlen) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        if (env) putenv((char *)env);
        execl("/proc/self/exe", "test_fake_cuda", arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < errlen && (r = read(fds[0], err + n, errlen - 1 - n)) > 0) n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static void test_device_queries(void) {
    int n = -1, v = 0;
    OK(cudaGetDeviceCount(&n));
    CHECK(n == 2); /* run-fake-tests.sh sets FAKECUDA_DEVICES=2 */
    cudaDeviceProp p;
    OK(cudaGetDeviceProperties(&p, 1));
    CHECK(strcmp(p.name, "fakecuda") == 0 && p.major == 9 && p.minor == 0);
    OK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
    CHECK(v == 9);
    OK(cudaDriverGetVersion(&v));
    CHECK(v == 13000);
    OK(cudaRuntimeGetVersion(&v));
    CHECK(v == 13000);
    CHECK(cudaSetDevice(2) == cudaErrorInvalidDevice);
    CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
    CHECK(cudaGetLastError() == cudaSuccess); /* reset by the read */
    CHECK(cudaSetDevice(-1) == cudaErrorInvalidDevice);
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice); /* peek does not reset */
    (void)cudaGetLastError();
    OK(cudaSetDevice(1));
    OK(cudaGetDevice(&v));
    CHECK(v == 1);
    OK(cudaSetDevice(0));
    CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0);
    CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
    CHECK(strcmp(cudaGetErrorName(cudaSuccess), "cudaSuccess") == 0);

    char err[4096];
    int st = rerun("--count-only", "FAKECUDA_DEVICES=0", err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_segv(void) {
    float *d = NULL;
    OK(cudaMalloc(&d, 4096));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        volatile float x = d[10]; /* a host dereference of device memory */
        (void)x;
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    pid = fork();
    if (pid == 0) {
        d[3] = 1.0f; /* and a write */
        _exit(0);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    OK(cudaFree(d));
}

static void test_stale_until_sync(void) {
    cudaStream_t s;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned char *d, *h;
    OK(cudaMalloc(&d, 256));
    OK(cudaMallocHost(&h, 256));
    memset(h, 0, 256);
    unsigned long long syncs = sync_count();
    OK(cudaMemsetAsync(d, 7, 256, s));
    OK(cudaMemcpyAsync(h, d, 256, cudaMemcpyDeviceToHost, s));
    CHECK(h[0] == 0 && h[255] == 0); /* not synchronized yet: stale */
    OK(cudaStreamSynchronize(s));
    CHECK(h[0] == 7 && h[255] == 7);
    CHECK(sync_count() == syncs + 1);

    /* a query with pending work says not ready, and lets it run */
    OK(cudaMemsetAsync(d, 9, 256, s));
    OK(cudaMemcpyAsync(h, d, 256, cudaMemcpyDeviceToHost, s));
    CHECK(h[5] == 7);
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
    CHECK(cudaGetLastError() == cudaSuccess); /* not a sticky error */
    OK(cudaStreamQuery(s));
    CHECK(h[5] == 9);

    /* the legacy default stream (synchronous cudaMemcpy) waits for blocking
     * streams, but not for a non-blocking one */
    cudaStream_t b;
    OK(cudaStreamCreate(&b));
    unsigned char hb[4];
    OK(cudaMemsetAsync(d, 3, 256, b));
    OK(cudaMemcpy(hb, d, 4, cudaMemcpyDeviceToHost));
    CHECK(hb[0] == 3);
    OK(cudaMemsetAsync(d, 4, 256, s));
    OK(cudaMemcpy(hb, d, 4, cudaMemcpyDeviceToHost));
    CHECK(hb[0] == 3); /* a race on a real GPU; in the fake: stale */
    OK(cudaStreamSynchronize(s));
    OK(cudaMemcpy(hb, d, 4, cudaMemcpyDeviceToHost));
    CHECK(hb[0] == 4);

    /* an async copy from pageable memory stages the source at the call */
    unsigned char src[4] = {1, 2, 3, 4};
    OK(cudaMemcpyAsync(d, src, 4, cudaMemcpyHostToDevice, b));
    src[0] = 99;
    OK(cudaStreamSynchronize(b));
    OK(cudaMemcpy(hb, d, 4, cudaMemcpyDeviceToHost));
    CHECK(hb[0] == 1 && hb[3] == 4);

    OK(cudaStreamDestroy(s));
    OK(cudaStreamDestroy(b));
    CHECK(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle);
    OK(cudaFree(d));
    OK(cudaFreeHost(h));
}

static void test_memcpy_kinds(void) {
    float *d, *d2, h[16] = {0}, *pinned, *m;
    OK(cudaMalloc(&d, 16 * sizeof(float)));
    OK(cudaMalloc(&d2, 16 * sizeof(float)));
    OK(cudaMallocHost(&pinned, 16 * sizeof(float)));
    OK(cudaMallocManaged(&m, 16 * sizeof(float)));
    unsigned long long h2d = bytes_copied(cudaMemcpyHostToDevice), d2h = bytes_copied(cudaMemcpyDeviceToHost);
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  /* device as src */
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(d, d2, sizeof h, cudaMemcpyHostToHost) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(d, h, sizeof h, (cudaMemcpyKind)7) == cudaErrorInvalidMemcpyDirection);
    CHECK(cudaMemcpy(d + 8, h, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  /* leaves d */
    CHECK(cudaMemset(d + 1, 0, sizeof h) == cudaErrorInvalidValue);
    CHECK(cudaMemset(h, 0, sizeof h) == cudaErrorInvalidValue);
    CHECK(bytes_copied(cudaMemcpyHostToDevice) == h2d && bytes_copied(cudaMemcpyDeviceToHost) == d2h);
    (void)cudaGetLastError();
    for (int i = 0; i < 16; i++) h[i] = (float)i;
    OK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    OK(cudaMemcpy(d2, d, sizeof h, cudaMemcpyDeviceToDevice));
    OK(cudaMemcpy(pinned, d2, sizeof h, cudaMemcpyDefault)); /* inferred D2H */
    CHECK(pinned[15] == 15.0f);
    OK(cudaMemcpy(m, d + 4, 4 * sizeof(float), cudaMemcpyDeviceToDevice)); /* managed is device-side too */
    CHECK(m[0] == 4.0f); /* and host-accessible */
    CHECK(bytes_copied(cudaMemcpyHostToDevice) == h2d + sizeof h);
    CHECK(bytes_copied(cudaMemcpyDeviceToHost) == d2h + sizeof h);
    CHECK(cudaFree(h) == cudaErrorInvalidValue);
    CHECK(cudaFree(d + 1) == cudaErrorInvalidValue);
    CHECK(cudaFreeHost(d) == cudaErrorInvalidValue);
    (void)cudaGetLastError();
    OK(cudaFree(d));
    CHECK(cudaFree(d) == cudaErrorInvalidValue); /* double free */
    (void)cudaGetLastError();
    OK(cudaFree(d2));
    OK(cudaFree(m));
    OK(cudaFreeHost(pinned));
    OK(cudaFree(NULL));
}

static void test_pointer_attributes(void) {
    float *d, *p, *m;
    int stack_var = 0;
    void *heap = malloc(64);
    OK(cudaSetDevice(1));
    OK(cudaMalloc(&d, 1024));
    OK(cudaSetDevice(0));
    OK(cudaMallocHost(&p, 64));
    OK(cudaMallocManaged(&m, 64));
    cudaPointerAttributes a;
    OK(cudaPointerGetAttributes(&a, d + 10));
    CHECK(a.type == cudaMemoryTypeDevice && a.device == 1 && a.devicePointer == d + 10 && a.hostPointer == NULL);
    OK(cudaPointerGetAttributes(&a, m));
    CHECK(a.type == cudaMemoryTypeManaged);
    OK(cudaPointerGetAttributes(&a, p));
    CHECK(a.type == cudaMemoryTypeHost);
    OK(cudaPointerGetAttributes(&a, &stack_var));
    CHECK(a.type == cudaMemoryTypeUnregistered);
    OK(cudaPointerGetAttributes(&a, heap));
    CHECK(a.type == cudaMemoryTypeUnregistered);
    OK(cudaPointerGetAttributes(&a, NULL));
    CHECK(a.type == cudaMemoryTypeUnregistered);
    OK(cudaHostRegister(heap, 64, cudaHostRegisterDefault));
    OK(cudaPointerGetAttributes(&a, (char *)heap + 8));
    CHECK(a.type == cudaMemoryTypeHost);
    CHECK(cudaHostRegister(heap, 64, cudaHostRegisterDefault) == cudaErrorHostMemoryAlreadyRegistered);
    OK(cudaHostUnregister(heap));
    CHECK(cudaHostUnregister(heap) == cudaErrorHostMemoryNotRegistered);
    (void)cudaGetLastError();
    OK(cudaPointerGetAttributes(&a, heap));
    CHECK(a.type == cudaMemoryTypeUnregistered);
    OK(cudaFree(d));
    OK(cudaFreeHost(p));
    OK(cudaFree(m));
    free(heap);
}

static void test_kernel_launch(void) {
    const unsigned long long n = 1000;
    float *x, *y, h[1000];
    OK(cudaMalloc(&x, n * sizeof(float)));
    OK(cudaMalloc(&y, n * sizeof(float)));
    for (unsigned i = 0; i < n; i++) h[i] = (float)i;
    OK(cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice));
    OK(cudaMemset(y, 0, sizeof h));
    cudaStream_t s;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned long long launches = launch_count();

    /* <<<>>> launch (nvcc 13: __cudaGetKernel + __cudaLaunchKernel) */
    fakecuda_selftest_kernel<<<(n + 255) / 256, 256, 0, s>>>(y, x, 2.0f, 'A', 0.5, n);
    OK(cudaGetLastError());
    CHECK(launch_count() == launches); /* queued, not run */
    OK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[10] == 0.0f); /* stale: s is non-blocking and not synchronized */
    OK(cudaStreamSynchronize(s));
    CHECK(launch_count() == launches + 1);
    OK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[10] == 2.0f * 10 + 0.5f + 'A' && h[999] == 2.0f * 999 + 0.5f + 'A');

    /* explicit cudaLaunchKernel: the values are captured at launch */
    float a = 3.0f;
    char c = 1;
    double b = 0.25;
    unsigned long long cnt = 100;
    void *args[] = {&y, &x, &a, &c, &b, &cnt};
    OK(cudaLaunchKernel((const void *)fakecuda_selftest_kernel, dim3(1), dim3(128), args, 0, s));
    a = -100.0f;
    c = 50;
    b = 1e9;
    cnt = 0;
    OK(cudaStreamSynchronize(s));
    OK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[7] == 3.0f * 7 + 0.25f + 1 && h[99] == 3.0f * 99 + 0.25f + 1);
    CHECK(h[100] == 2.0f * 100 + 0.5f + 'A'); /* past cnt: untouched */

    /* a twin registered with explicit parameter sizes */
    int *p, hi[64];
    OK(cudaMalloc(&p, sizeof hi));
    fakecuda_selftest_fill<<<1, 64, 0, s>>>(p, 42, 64);
    OK(cudaStreamSynchronize(s));
    OK(cudaMemcpy(hi, p, sizeof hi, cudaMemcpyDeviceToHost));
    CHECK(hi[0] == 42 && hi[63] == 42);

    /* a kernel without twin fails at launch */
    fakecuda_selftest_no_twin<<<1, 1, 0, s>>>(p);
    CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction);
    /* so does an invalid configuration */
    fakecuda_selftest_fill<<<1, 2048, 0, s>>>(p, 1, 1);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    OK(cudaStreamDestroy(s));
    OK(cudaFree(x));
    OK(cudaFree(y));
    OK(cudaFree(p));
}

static void test_stream_event_order(void) {
    cudaStream_t s1, s2;
    OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t e, t0, t1;
    OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    OK(cudaEventCreate(&t0));
    OK(cudaEventCreate(&t1));
    int *a, *b, h[256];
    OK(cudaMalloc(&a, sizeof h));
    OK(cudaMalloc(&b, sizeof h));
    OK(cudaMemset(a, 0, sizeof h));
    OK(cudaMemset(b, 0, sizeof h));

    /* s1 produces a, s2 copies it after waiting for the event: synchronizing
     * s2 alone must run s1's work up to the event, and not beyond */
    OK(cudaEventRecord(t0, s1));
    fakecuda_selftest_fill<<<1, 256, 0, s1>>>(a, 5, 256);
    OK(cudaEventRecord(e, s1));
    fakecuda_selftest_fill<<<1, 256, 0, s1>>>(a, 6, 256);
    OK(cudaEventRecord(t1, s1));
    OK(cudaStreamWaitEvent(s2, e, 0));
    OK(cudaMemcpyAsync(b, a, sizeof h, cudaMemcpyDeviceToDevice, s2));
    CHECK(cudaEventQuery(e) == cudaErrorNotReady); /* ...and now it runs up to e */
    OK(cudaEventQuery(e));
    OK(cudaStreamSynchronize(s2));
    OK(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 5 && h[255] == 5);
    OK(cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 5); /* the second fill on s1 has not run */
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, t0, t1) == cudaErrorNotReady);
    (void)cudaGetLastError();
    OK(cudaEventSynchronize(t1));
    OK(cudaEventElapsedTime(&ms, t0, t1));
    CHECK(ms > 0);
    OK(cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 6);

    /* without the wait, s2 reads a before s1 wrote it */
    fakecuda_selftest_fill<<<1, 256, 0, s1>>>(a, 8, 256);
    OK(cudaMemcpyAsync(b, a, sizeof h, cudaMemcpyDeviceToDevice, s2));
    OK(cudaStreamSynchronize(s2));
    OK(cudaStreamSynchronize(s1));
    OK(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 6);

    /* a wait on a re-recorded event waits for the record made before it */
    fakecuda_selftest_fill<<<1, 256, 0, s1>>>(a, 10, 256);
    OK(cudaEventRecord(e, s1));
    OK(cudaStreamWaitEvent(s2, e, 0));
    OK(cudaMemcpyAsync(b, a, sizeof h, cudaMemcpyDeviceToDevice, s2));
    fakecuda_selftest_fill<<<1, 256, 0, s1>>>(a, 11, 256);
    OK(cudaEventRecord(e, s1));
    OK(cudaDeviceSynchronize());
    OK(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h[0] == 10);

    OK(cudaEventDestroy(e));
    OK(cudaEventDestroy(t0));
    OK(cudaEventDestroy(t1));
    CHECK(cudaEventQuery(e) == cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    OK(cudaStreamDestroy(s1));
    OK(cudaStreamDestroy(s2));
    OK(cudaFree(a));
    OK(cudaFree(b));
}

static void test_leaks(void) {
    CHECK(live_allocations(cudaMemoryTypeDevice) == 0);
    CHECK(live_allocations(cudaMemoryTypeHost) == 0);
    void *d, *h;
    OK(cudaMalloc(&d, 10));
    OK(cudaMallocHost(&h, 10));
    CHECK(live_allocations(cudaMemoryTypeDevice) == 1 && live_allocations(cudaMemoryTypeHost) == 1);
    OK(cudaFree(d));
    OK(cudaFreeHost(h));
    CHECK(live_allocations(cudaMemoryTypeDevice) == 0 && live_allocations(cudaMemoryTypeHost) == 0);

    char err[8192];
    int st = rerun("--leak-child", "FAKECUDA_CHECK_LEAKS=1", err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    CHECK(strstr(err, "LEAK: device allocation") != NULL);
    CHECK(strstr(err, "1 live allocation(s)") != NULL);
    st = rerun("--no-leak-child", "FAKECUDA_CHECK_LEAKS=1", err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) fprintf(stderr, "%s", err);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--count-only")) {
        int n = -1;
        cudaError_t e = cudaGetDeviceCount(&n);
        void *d;
        return e == cudaErrorNoDevice && n == 0 && cudaMalloc(&d, 4) == cudaErrorNoDevice ? 0 : 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--leak-child")) {
        void *d;
        return cudaMalloc(&d, 100) == cudaSuccess ? 0 : 3; /* and never freed */
    }
    if (argc > 1 && !strcmp(argv[1], "--no-leak-child")) {
        void *d;
        if (cudaMalloc(&d, 100) != cudaSuccess) return 3;
        return cudaFree(d) == cudaSuccess ? 0 : 3;
    }
    sync_count = hook<unsigned long long (*)(void)>("fakecuda_sync_count");
    launch_count = hook<unsigned long long (*)(void)>("fakecuda_launch_count");
    bytes_copied = hook<unsigned long long (*)(int)>("fakecuda_bytes_copied");
    live_allocations = hook<unsigned long (*)(int)>("fakecuda_live_allocations");

    test_device_queries();
    test_segv();
    test_stale_until_sync();
    test_memcpy_kinds();
    test_pointer_attributes();
    test_kernel_launch();
    test_stream_event_order();
    test_leaks();
    if (failures) {
        fprintf(stderr, "test_fake_cuda: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("test_fake_cuda: all checks passed\n");
    return 0;
}
