// topoar cost model: collectives that move data along a chain of ranks,
// pipelined in slices, as NCCL 2.3's reduce and broadcast do; and FlexReduce
// run the way its paper ran it, one such call per subrange of its layout.
// Beside the plan replays (cost_model.hpp), for the paper's prototype only
// (tests/bench/papers.py, topoar_sim --flex-calls); the engine's tables never
// use it.
//
//   a chain call c0 -> c1 -> ... -> ck over n bytes in slices of s bytes:
//   every rank forwards a slice as soon as it holds it (a reduce adds its
//   own data on the way), so all k hops carry the call at once:
//
//     slice 0:  c0 -> c1 -> c2
//     slice 1:        c0 -> c1 -> c2      one slice behind
//     ...
//
//     time = (n + (k - 1) s) / r  +  the k hops' latencies (path + overhead)
//
//   r: the call's max-min fair rate over the links of all its hops (a link
//   that two hops cross counts twice), recomputed whenever a call ends
//   (progressive filling, max_min_rates of cost_model.hpp).  The (k - 1)
//   slices of the pipeline's fill are charged at r too; the slices behind
//   the first add no latency (NCCL keeps 16 in flight per connection).
//   Reductions are free (NCCL adds while it copies).
//
//   phases:   a phase's calls all start when the previous phase has ended
//             (FlexReduce III-B: the reduce() calls of a level run "fully
//             parallel", the next level starts when they completed; the
//             broadcasts replay the levels in reverse).
//
// NCCL 2.3.5 (NVIDIA/nccl tag v2.3.5-5, read for the structure only):
// ncclReduce and ncclBroadcast run on a ring of the communicator's ranks:
// reduce from the rank after the root around to the root, broadcast from the
// root around to the rank before it (src/collectives/device/reduce.h,
// broadcast.h).  A ring step moves a chunk of NCCL_BUFFSIZE (4 MiB,
// src/include/core.h) / REDUCE_BUFCHUNKS (2) in REDUCE_SUBSTEPS = 8 substeps
// (BROADCAST_* the same, src/collectives/collectives.h), each posted to the
// next rank as soon as it is written (primitives.h: a flag per substep), and
// the network proxy sends each substep as one message of NCCL_BUFFSIZE / 16
// (src/transport.cu, transportSaveProxies; src/transport/net.cu): slices of
// 256 KiB, up to 16 in flight.
#pragma once

#include <cstddef>
#include <vector>

#include "model/cost_model.hpp"
#include "planners/planner_flex.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// One call: `bytes` move along ranks[0] -> ranks[1] -> ... -> ranks.back().
struct ChainCall {
    std::vector<int> ranks;  // at least 2, no rank twice in a row
    double bytes = 0;
};

// Predicts phases of chain calls (see the top of this file) on `topo` with
// the links, latencies and overhead of `params` (its mode, segments and
// reduction cost do not apply).  Fills time, rank_time (when each rank's
// last call ended), round_end (when each phase ended), the link byte counts
// and busiest link, messages (one per slice and hop) and bytes_sent.  Fails on a rank out of range, a call of
// fewer than 2 ranks, negative bytes or slice_bytes 0.
Status predict_chain_calls(const Topology& topo, const std::vector<std::vector<ChainCall>>& phases,
                           std::size_t slice_bytes, const CostParams& params, Prediction* out);

// FlexReduce as its paper's prototype ran it (III-B Fig. 3, V): every
// subrange of `layout` one ncclReduce among its participants (in the
// branch's child order, NCCL's ring) rooted at its owner, the levels bottom
// up; then one ncclBroadcast per subrange from its owner, the levels top
// down.  One phase per level and direction.
std::vector<std::vector<ChainCall>> flex_chain_calls(const FlexLayout& layout, std::size_t elem_size);

}  // namespace topoar
