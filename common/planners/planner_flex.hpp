// topoar engine: FlexReduce, uneven reduce-scatter / all-gather over the
// topology tree (Lee et al., "FlexReduce", section III, Fig. 2 and 3).
//
// Planning has two stages, both pure functions of (topology, count):
//
//   flex_layout()       section III-B "FlexReduce_plan": per tree level, the
//                       subranges, who takes part in reducing each one and
//                       which rank ends up owning it (inspectable: tests and
//                       topoar_plan print it)
//   plan_flexreduce()   section III-B "FlexReduce_execute", compiled once into
//                       point-to-point rounds: every reduce() of the layout
//                       becomes a pipelined chain ending at the owner, every
//                       broadcast() the same chain backwards
//
// See the comment in planner_flex.cpp for the step diagram.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "planners/planners.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// One reduce() call of FlexReduce: the elements `range` of every participant
// are combined and the result lands on `owner`.  Participants are the ranks
// that hold `range` after the previous level, exactly one per child of
// `branch`, listed in the branch's child order.
//
// `assigned` is the leaf whose new range (the paper's next_range) contains
// the subrange.  Usually it holds the data and owns the result.  When the sort
// heuristic gives it a range its child does not hold there (the paper's goal
// 3 cannot always be met), the paper's reduce would move the result to it,
// costing extra traffic below `branch`.  Here the result stays with the
// participant under the same child: that child's share is the paper's, no
// byte moves twice, and `owner` != `assigned` marks such subranges.
struct FlexSubrange {
    int level = 0;                   // index into FlexLayout::levels
    int branch = -1;                 // topology vertex whose children combine
    Range range;                     // elements
    std::vector<int> participants;   // comm ranks, one per child of `branch`
    int owner = -1;                  // comm rank holding the result afterwards
    int assigned = -1;               // the paper's owner (see above)
};

struct FlexLevel {
    int depth = 0;                   // depth of the branch vertices in the tree
    std::vector<int> branches;       // vertices processed at this level
    // In the paper's order: per branch, leaves sorted by their previous range
    // (end, then start, then rank), then along each leaf's new range.  Only
    // subranges that move data: no empty ones, none of a one-child branch.
    std::vector<FlexSubrange> subranges;
    std::vector<Range> ranges;               // per rank: the paper's range after this level
    std::vector<std::vector<Range>> owned;   // per rank: what it really owns (see FlexSubrange)
    std::vector<int> calls;          // per rank: subranges it owns (reduce calls it roots)
    std::vector<int> joins;          // per rank: subranges it takes part in
};

struct FlexLayout {
    std::size_t count = 0;
    int nranks = 0;
    std::vector<FlexLevel> levels;   // bottom-up: levels[0] is the deepest
};

// Weighted shares (beyond the paper, whose portions split every branch
// evenly): the children of a branch get the shares of the vector that
// minimise the slowest uplink's time along FlexReduce's chains, given
// their uplink bandwidths bw (bytes/s).  With chains, child i's uplink
// carries M (2 - s_i - s_{i-1}) each way (s_{i-1}: the child before it,
// cyclically), so a slow child and the child before it get more of the
// vector, up to a slow child carrying only M, the least any all-reduce can
// move through it.  Equal bandwidths, two children (each link carries M
// whatever the shares) or an unknown bandwidth (0) give equal shares: the
// paper's layout, unchanged.  docs/cost-model.md, "Weighted shares",
// derives the bound; docs/algorithms.md shows an example.
std::vector<double> weighted_shares(const std::vector<double>& bw);

// Direct transfers instead of chains, where chains cannot reach the bound
// (beyond the paper): at such a branch every participant of a subrange
// sends its piece straight to the owner, which reduces them in participant
// order and sends the result straight back.  Child i then carries
// M (1 + (d-2) s_i) each way: the extra d-2 transfers every element needs
// beyond each child's one in and one out land on the children that own it,
// so the shares can put them on the fast links alone.  That reaches the
// bound for any links, max(M / min b, 2 (d-1) M / sum b) (every child moves
// at least M each way, and an all-reduce among d children moves at least
// 2 (d-1) M in all), which chains miss where two children are slow (e.g.
// 250, 100, 400, 100 Mbit/s: 1.5x).  star_shares gives s_i = (b_i T / M - 1)
// / (d-2) at that bound T, scaled to sum to 1 where the slowest link sets T;
// star_branch says whether a branch uses it: more than two children, every
// up-link known, and the star's slowest child strictly faster than the
// weighted chains' (never for equal links or two children: the paper's
// chains stay).  docs/cost-model.md, "Weighted shares".
std::vector<double> star_shares(const std::vector<double>& bw);
bool star_branch(const std::vector<double>& bw);

// Relay shares (plan_flexrelay, beyond the paper): direct transfers at
// every branch whose shares are uneven, with shares that also count the traffic the levels above
// put on each child's up-link.  A child c holding share s_c of branch v's
// vector carries, each way, M (1 + (d-2) s_c) for v's own direct transfers
// and s_c U_v for the levels above (U_v: what v's up-link carries per unit
// of its vector, 0 at the root), so s_c = (b_c T / M - 1) / (d - 2 + U_v)
// at the least T where they sum to 1 and no child needs less than one
// transfer each way (T >= M / min b).  A child that gets no share sends its
// vector once and receives the result once.  Two racks of a fast and a
// slow host each: the racks' own level moves M each way whatever the
// shares, but the level above runs over whoever holds the data, so the
// slow host gets nothing.  docs/cost-model.md, "Relay".
std::vector<double> relay_shares(const std::vector<double>& bw, double upper);

// The FlexReduce layout for `count` elements on `topo` (any tree shape);
// relay: the shares of plan_flexrelay.
Status flex_layout(const Topology& topo, std::size_t count, FlexLayout* out, bool relay = false);

// The executable plan derived from flex_layout() (see planner_flex.cpp).
// opts.pipeline_elems cuts subranges into segments that move through the
// chains one round apart (0: whole subranges at once).
Status plan_flexreduce(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                       Plan* out);

// FlexReduce's relay variant (beyond the paper): the layout with
// relay_shares, direct transfers at every branch where they are uneven
// (FlexReduce's chains where they are even), and below a child that
// gets no share of its parent (a host whose link is the bottleneck) one
// rank takes everything: its ranks reduce to their first rank, which sends
// the host's vector once and receives the result once, so both directions
// of the slow link move in the same rounds of one rank (spread over its
// ranks, the executor's per-rank windows let the sends run ahead while the
// results queue later: the model predicts 0.95 s against 0.75 s on hosts
// of 1, 3, 1, 2 ranks at 400, 100, 400, 250 Mbit/s, 8 MiB).
Status plan_flexrelay(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                      Plan* out);

// Human-readable listing, per level: every subrange with participants and
// owner, and the reduce calls per rank.  `topo` names the branch vertices.
std::string describe_flex_layout(const Topology& topo, const FlexLayout& layout);

}  // namespace topoar
