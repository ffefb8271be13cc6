/*
 * Host twin of the fake runtime's own test kernel (test_fake_cuda.cu):
 *
 *   extern "C" __global__ void fakecuda_selftest_kernel(
 *       float *y, const float *x, float a, char c, double b, unsigned long long n)
 *   { y[i] = a * x[i] + b + c  for i < n }
 *
 * Its parameters have mixed sizes (8, 8, 4, 1, 8, 8), so a launch only works
 * when the fake copies each argument at its true size (taken from the cubin).
 * fakecuda_selftest_fill's twin states its sizes explicitly instead.
 */
#include "fakecuda.h"

#include <string.h>

static void selftest_twin(void **args, unsigned grid_x, unsigned block_x) {
    float *y_dev, a;
    const float *x_dev;
    char c;
    double b;
    unsigned long long n;
    memcpy(&y_dev, args[0], sizeof y_dev);
    memcpy(&x_dev, args[1], sizeof x_dev);
    memcpy(&a, args[2], sizeof a);
    memcpy(&c, args[3], sizeof c);
    memcpy(&b, args[4], sizeof b);
    memcpy(&n, args[5], sizeof n);
    (void)grid_x;
    (void)block_x;
    float *y = (float *)fakecuda_host_view(y_dev, n * sizeof(float));
    const float *x = (const float *)fakecuda_host_view(x_dev, n * sizeof(float));
    for (unsigned long long i = 0; i < n; i++) y[i] = (float)(a * x[i] + b + c);
}

/* fakecuda_selftest_fill(int *p, int v, unsigned long long n): p[i] = v.
 * Registered with explicit parameter sizes (checked against the cubin's). */
static void fill_twin(void **args, unsigned grid_x, unsigned block_x) {
    int *p_dev, v;
    unsigned long long n;
    memcpy(&p_dev, args[0], sizeof p_dev);
    memcpy(&v, args[1], sizeof v);
    memcpy(&n, args[2], sizeof n);
    (void)grid_x;
    (void)block_x;
    int *p = (int *)fakecuda_host_view(p_dev, n * sizeof(int));
    for (unsigned long long i = 0; i < n; i++) p[i] = v;
}

__attribute__((constructor)) static void register_selftest_twins(void) {
    static const size_t fill_sizes[] = {sizeof(int *), sizeof(int), sizeof(unsigned long long)};
    fakecuda_register_kernel("fakecuda_selftest_kernel", selftest_twin);
    fakecuda_register_kernel_params("fakecuda_selftest_fill", fill_twin, 3, fill_sizes);
}
