// topoar engine: the hierarchical ring all-reduce (p1 x p2 x ... x ph).
//
// Follows Ueno & Yokota, "Exhaustive Study of Hierarchical AllReduce
// Patterns for Large Messages Between GPUs" (shared/papers/
// hierarchical-ring-allreduce.txt), section IV-B (the algorithm, Fig. 1) and
// IV-C (the model): ring reduce-scatters level by level up the hierarchy,
// innermost level first, then ring all-gathers back down in reverse order.
// The top level's reduce-scatter + all-gather is the paper's "AllReduce on
// the z axis".
//
//   2 nodes x 3 ranks (p1 = 3 inside a node, p2 = 2 across nodes), vector
//   cut into 3 lanes A B C; Ai = lane A's half owned by node i:
//
//   step 1  ring reduce-scatter inside each node (2 rounds, M/3 per message)
//           node 0: rank 0 <- A, rank 1 <- B, rank 2 <- C   (node sums)
//           node 1: rank 3 <- A, rank 4 <- B, rank 5 <- C
//   step 2  per lane, ring reduce-scatter across nodes (1 round, M/6):
//           lane A: 0 <-> 3   rank 0 owns A0, rank 3 owns A1 (global sums)
//           lane B: 1 <-> 4   ...           lane C: 2 <-> 5
//   step 3  per lane, ring all-gather across nodes (the reverse of 2)
//   step 4  ring all-gather inside each node (the reverse of 1)
//
// Every element is reduced to completion once, by the rank that owns it
// after the top level's reduce-scatter; everything after that is copies, so
// all ranks end bit-identical.  Chains use Operand::incoming_first.
//
// Uneven levels (2+3 ranks per node, racks of 1 and 3 nodes) — our
// generalisation, the paper only treats even p_i.  Each vertex of the
// hierarchy ends its reduce-scatter with a *partition* of the vector: which
// rank under it owns (holds reduced over the subtree) which range.  A leaf
// owns everything.  At a vertex with k children the children's partitions
// are overlaid (their common refinement); every resulting *segment* has
// exactly one owner in each child, and those k owners run a ring
// reduce-scatter on it, each child ending with 1/k of the segment.  For
// equal children the segments are the paper's lanes.  For a node of 2 ranks
// next to one of 3 the segments are [0,1/3) [1/3,1/2) [1/2,2/3) [2/3,1): the
// "lcm lanes" merged, each run by one rank of each node.  Consequences:
//   - each child's up-link carries (k-1)/k of the vector in each phase,
//     whatever the shapes underneath: the hierarchical-ring optimum, e.g.
//     2(N-1)/N * M per node for N nodes in one level;
//   - ranks of a node share its traffic in proportion to what they own
//     (1/L_i of the vector each on a node of L_i ranks);
//   - sub-pieces are placed so that a rank's pieces in neighbouring segments
//     touch and merge, which keeps the partitions, and so the next level's
//     segment count and messages per round, small.
// A child that finished early (a one-rank node beside a socketed one, a
// host hanging directly off the root beside racks) just waits: a level
// starts when all its children are done.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "planners/planners.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// The hierarchical ring over `topo`'s tree (every vertex with more than one
// child is a level), or, when opts.factors is non-empty, over the factors
// p1 x p2 x ... (p1 innermost) applied to the ranks in topology order, so
// that {ranks per node, nodes per rack, racks} reproduces the tree of an
// even machine.  Factors whose product is not the number of ranks, or that
// are < 1, are Status::invalid.
Status plan_hring(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out);

// The hierarchical ring for an explicit factorization on a flat rank list:
// level 1 groups p1 consecutive entries of `order`, level 2 groups p2
// consecutive level-1 groups, and so on; the product must be the number of
// ranks.  `order` empty means 0..nranks-1.  Empty factors: one flat ring.
// For the simulator's search over hring_factorizations().
Status plan_hring_factors(int nranks, const std::vector<int>& factors, std::size_t count, int only_rank,
                          const PlanOptions& opts, Plan* out, const std::vector<int>& order = {});

// Every ordered factorization of p into at most max_levels factors >= 2
// ({p} itself included; {{1}} for p = 1), fewest levels first, then
// lexicographically.  E.g. p = 8, max_levels 3: {8} {2,4} {4,2} {2,2,2}.
std::vector<std::vector<int>> hring_factorizations(int p, int max_levels);

// Checks factors against the number of ranks; the message names both
// ("hring factors 4x8x4 multiply to 128, but the communicator has 64 ranks").
Status check_hring_factors(const std::vector<int>& factors, int nranks);

// "4x8x4".
std::string format_hring_factors(const std::vector<int>& factors);

}  // namespace topoar
