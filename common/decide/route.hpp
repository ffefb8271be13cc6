// topoar engine: a call's route as one value, and the rules that pick it.
//
// The route table is decide/route.h (C, shared with the glue).  What picks
// a route lives here, written once:
//   - the one-host hand-down rule (auto on a communicator within one host
//     gives the host calls nothing else claims to the previous module);
//   - device calls: from the algorithm decided, the capabilities the glue
//     registered for the communicator (an NCCL communicator, nccl_hier's
//     per-host one) and what can reduce the call's (op, type) pair.
// The engine (Engine::prepare) combines them with the decision and the
// small-message contest; the glue switches on the answer.
#pragma once

#include "core/algorithm.hpp"
#include "decide/route.h"

namespace topoar {

enum class Route : int {
#define TOPOAR_ROUTE_CXX_(num, ident, IDENT, name, text) ident = num,
    TOPOAR_ROUTES(TOPOAR_ROUTE_CXX_)
#undef TOPOAR_ROUTE_CXX_
};
inline const char* route_name(Route r) { return topoar_route_name(static_cast<int>(r)); }

// Routes whose result topoar computes on the host with a host plan
// (Engine::run), on the device (Engine::run_device), or that hand the call
// to the previous module.
inline bool runs_on_host(Route r) { return r == Route::host || r == Route::contest_host || r == Route::staged; }
inline bool runs_on_device(Route r) { return r == Route::nccl_plan || r == Route::nccl_hier; }
inline bool is_hand_down(Route r) {
    return r == Route::hand_down || r == Route::contest_down || r == Route::check_down;
}

// The one-host hand-down rule: with these settings, a host call on a
// communicator within one host that no rule of a rules file claims goes to
// the previous module (tuned's shared-memory algorithms are faster there
// than topoar's network-shaped ones; docs/performance.md).
inline bool one_host_hands_down(Algorithm forced, bool single_node_fallback) {
    return forced == Algorithm::automatic && single_node_fallback;
}
extern const char* const kOneHostHandDownReason;

// What the glue can do with device buffers on a communicator, registered
// once it set them up (topoar_engine_set_device_caps).  The defaults
// (everything) are what unit tests and tools plan with.
struct DeviceCaps {
    bool nccl = true;        // an NCCL communicator over the communicator is ready
    bool host_comms = true;  // nccl_hier's per-host NCCL communicator is ready or may still be made
};
// What can reduce one call's (op, type) pair on the device.
struct PairCaps {
    bool nccl_reduces = true;    // ncclAllReduce (and NCCL's collectives) reduce it
    bool kernels_reduce = true;  // topoar's device kernels reduce it
    // The previous module's result for the pair can differ from topoar's
    // own beyond floating-point rounding (Open MPI 4.1's op/avx saturates
    // 8- and 16-bit integer sums that topoar wraps): it never runs the call
    // for speed -- no contest turn of its, and a class it won runs the
    // table's choice (host calls; TOPOAR_PREPARE_OWN_RESULT_ONLY).
    bool previous_differs = false;
};

// How a host call was made.  nonblocking: MPI_Iallreduce or a persistent
// allreduce, never timed -- no contest turn (a size class still in contest,
// or won by the previous module's blocking allreduce, runs topoar's best
// known choice: the class's winner among topoar's plans, else the table's),
// no online adaptation (TOPOAR_PREPARE_NONBLOCKING).  no_hand_down: topoar
// runs the call even where auto would hand it down, with its built-in
// choice (calls queued while a nonblocking set-up completes: the previous
// module can no longer take them in their order; TOPOAR_PREPARE_NO_HAND_DOWN).
struct CallKind {
    bool nonblocking = false;
    bool no_hand_down = false;
};

// The route of a device call whose algorithm is `alg` (auto's choice, a
// rule's or the forced one): nccl_hier where its per-host plan exists
// (hier_plan) and both NCCL and the kernels reduce the pair; the nccl
// algorithm by ncclAllReduce where NCCL reduces the pair; else topoar's plan
// over NCCL with its kernels; else (no NCCL, or no kernel for the pair)
// staged through pinned host memory with a host plan.
Route device_route(Algorithm alg, bool hier_plan, const DeviceCaps& caps, const PairCaps& pair);

}  // namespace topoar
