// topoar engine: MPI_Barrier across hosts as one rank's list of
// zero-byte message steps (ompi_coll_topoar/coll_topoar_barrier.c walks
// it over the PML; tests/unit/test_barrier_plan.cpp runs every rank's
// list over a simulated network and checks that no rank leaves before
// every rank has entered).
//
// Three phases, as in a hierarchical barrier (in, across, out):
//
//   in      a host's ranks report to its first rank along a binomial
//           tree: local index i hears from i + m for each m below i's
//           lowest set bit (ascending), then tells i - lowbit(i)
//
//               local 0 <- 1        local 0 <- 2 <- 3       (4 ranks)
//                     0 <----------------- 2
//
//   across  the hosts' first ranks (hosts in topology order) meet in
//           ceil(log2 H) rounds: a pairwise exchange with host h ^ k in
//           round k when H is a power of two (the first rounds stay
//           within a rack, as hosts of a rack are consecutive), else
//           dissemination (send to host h + k, hear from h - k, mod H)
//
//   out     each first rank releases its host's ranks down the same
//           tree (i hears from i - lowbit(i), then tells i + m for each
//           m below lowbit(i), descending)
//
// Between two hosts that is one message each way per round; a flat
// barrier over every rank sends several.  Which of this and the previous
// module's barrier runs is the glue's choice (coll_topoar_barrier).
#pragma once

#include <vector>

#include "planners/planner_nccl_hier.hpp"
#include "status.hpp"

namespace topoar {

struct BarrierStep {
    enum Kind : int {
        send = 0,      // an empty message to `to`
        recv = 1,      // wait for an empty message from `from`
        exchange = 2,  // post the receive from `from`, send to `to`, wait for the receive
    };
    Kind kind = send;
    int to = -1;    // comm rank (send, exchange)
    int from = -1;  // comm rank (recv, exchange)
};

// At most this many steps for any communicator of up to 2^31 ranks: 32
// in, 31 across, 32 out, with room to spare (the glue's fixed array).
constexpr int kBarrierMaxSteps = 128;

// `rank`'s steps (comm ranks as in layout).  Code::invalid when rank is
// not in layout or the layout is inconsistent.  A pure function of
// (layout, rank): every rank's list fits every other's.
Status plan_barrier(const HostLayout& layout, int rank, std::vector<BarrierStep>* out);

}  // namespace topoar
