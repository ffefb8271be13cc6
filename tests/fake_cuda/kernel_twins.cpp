// Host twins of topoar's CUDA reduction kernels for the fake CUDA runtime
// (fakecuda.h).  One twin per kernel of cuda/reduce_kernels.cu, generated
// from the same pair table (TOPOAR_REDUCE_DEVICE_PAIRS) and registered under
// the kernel's device name, topoar_reduce_<op>_<type>.  A twin receives the
// launch's argument array (const void *in, void *inout, unsigned long long n),
// turns both device pointers into the fake's host views and runs
// topoar_reduce_host, the host instance of the kernel's element-wise code.
// Grid and block sizes do not matter: the kernels are grid-stride loops.
#include <cstddef>

#include "fakecuda.h"
#include "reduce_ops.hpp"

namespace {

template <int OP, int TYPE>
void reduce_twin(void** args, unsigned grid_x, unsigned block_x)
{
    (void) grid_x;
    (void) block_x;
    const void* in = *static_cast<const void* const*>(args[0]);
    void* inout = *static_cast<void* const*>(args[1]);
    const unsigned long long n = *static_cast<const unsigned long long*>(args[2]);
    if (n == 0) return;
    const size_t bytes = static_cast<size_t>(n) * sizeof(typename topoar::reduce::elementwise<OP, TYPE>::T);
    topoar_reduce_host(OP, TYPE, fakecuda_host_view(in, bytes), fakecuda_host_view(inout, bytes),
                       static_cast<size_t>(n));
}

struct RegisterReduceTwins {
    RegisterReduceTwins()
    {
#define TOPOAR_TWIN_(o, O, t, T) fakecuda_register_kernel("topoar_reduce_" #o "_" #t, &reduce_twin<O, T>);
        TOPOAR_REDUCE_DEVICE_PAIRS(TOPOAR_TWIN_)
#undef TOPOAR_TWIN_
    }
};
const RegisterReduceTwins register_reduce_twins;

}  // namespace
