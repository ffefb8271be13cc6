#include "decide/route.hpp"

namespace topoar {

const char* const kOneHostHandDownReason = "auto on a single-node communicator: the previous module is used";

Route device_route(Algorithm alg, bool hier_plan, const DeviceCaps& caps, const PairCaps& pair) {
    if (alg == Algorithm::nccl_hier && caps.nccl && caps.host_comms && hier_plan && pair.nccl_reduces &&
        pair.kernels_reduce)
        return Route::nccl_hier;
    if (alg == Algorithm::nccl && caps.nccl && pair.nccl_reduces) return Route::nccl_allreduce;
    if (caps.nccl && pair.kernels_reduce) return Route::nccl_plan;
    return Route::staged;
}

}  // namespace topoar
