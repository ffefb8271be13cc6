// nccl_hier (planner_nccl_hier.hpp): shards, owners, host collectives and
// the plans across hosts.
#include "planners/planner_nccl_hier.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "topology/topology.hpp"

namespace topoar {

Status host_layout(const Topology& topo, HostLayout* out) {
    HostLayout l;
    const int p = topo.num_ranks();
    if (p < 1) return Status::invalid("nccl_hier: empty topology");
    l.host_of.assign(static_cast<std::size_t>(p), -1);
    l.local_of.assign(static_cast<std::size_t>(p), -1);
    for (int h : topo.nodes_at(Level::node)) {
        const int k = static_cast<int>(l.members.size());
        l.members.push_back(topo.ranks_under(h));  // ascending
        const auto& m = l.members.back();
        for (std::size_t j = 0; j < m.size(); ++j) {
            l.host_of[static_cast<std::size_t>(m[j])] = k;
            l.local_of[static_cast<std::size_t>(m[j])] = static_cast<int>(j);
        }
        l.shards = std::max(l.shards, static_cast<int>(m.size()));
    }
    for (int r = 0; r < p; ++r)
        if (l.host_of[static_cast<std::size_t>(r)] < 0)
            return Status::unsupported("nccl_hier: rank " + std::to_string(r) +
                                       " has no host in the topology (it needs the host level)");
    *out = std::move(l);
    return Status::ok();
}

Range hier_shard(std::size_t count, int shards, int s) {
    const std::size_t n = static_cast<std::size_t>(shards), q = count / n, i = static_cast<std::size_t>(s);
    return Range{i * q, i + 1 == n ? count - i * q : q};
}

namespace {

// Adds the part of topo's tree at and above the hosts under builder vertex
// `parent`: switches as they are, each host with one rank (its index).
void add_host_level(const Topology& t, int id, int parent, TopologyBuilder& b, const std::map<int, int>& host_index) {
    const TopoNode& v = t.node(id);
    if (v.level == Level::node) {
        const int h = b.add(parent, Level::node, v.name, v.up);
        // The rank's own link: the host's first rank's (the plans across
        // hosts do not use it: every host holds one rank).
        b.add_rank(h, host_index.at(id), t.node(t.leaf_of_rank(t.lowest_rank_under(id))).up);
        return;
    }
    const int me = v.level == Level::root ? parent : b.add(parent, v.level, v.name, v.up);
    for (int c : v.children) add_host_level(t, c, me, b, host_index);
}

// rank's schedule of `sub` (a plan on the host-level topology, host k =
// sub-rank k) with the peers of shard s: host k' -> its owner of s.
RankSchedule map_schedule(const RankSchedule& sub, const HostLayout& l, int s) {
    RankSchedule out = sub;
    for (Round& r : out.rounds)
        for (Op& op : r.ops) {
            const auto& m = l.members[static_cast<std::size_t>(op.peer)];
            op.peer = m[static_cast<std::size_t>(s) % m.size()];
        }
    return out;
}

// The host collectives of a host of n ranks (same list on every member).
void host_collectives(std::size_t count, int shards, int n, std::vector<HostCollective>* scatter,
                      std::vector<HostCollective>* gather) {
    scatter->clear();
    gather->clear();
    if (n <= 1) return;
    using K = HostCollective::Kind;
    const std::size_t q = count / static_cast<std::size_t>(shards);
    const std::size_t tail = count - q * static_cast<std::size_t>(shards);
    for (int first = 0; first < shards; first += n) {
        const int last = std::min(shards, first + n);  // this round: shards [first, last)
        if (last - first == n) {
            if (q > 0) {
                scatter->push_back(HostCollective{K::reduce_scatter, static_cast<std::size_t>(first) * q, q, -1});
                gather->push_back(HostCollective{K::all_gather, static_cast<std::size_t>(first) * q, q, -1});
            }
            if (last == shards && tail > 0) {  // the last shard's extra elements, to its owner
                const int root = (shards - 1) % n;
                scatter->push_back(HostCollective{K::reduce, q * static_cast<std::size_t>(shards), tail, root});
                gather->push_back(HostCollective{K::broadcast, q * static_cast<std::size_t>(shards), tail, root});
            }
            continue;
        }
        for (int s = first; s < last; ++s) {  // not a full round: shard by shard
            const Range r = hier_shard(count, shards, s);
            if (r.count == 0) continue;
            scatter->push_back(HostCollective{K::reduce, r.offset, r.count, s % n});
            gather->push_back(HostCollective{K::broadcast, r.offset, r.count, s % n});
        }
    }
}

// The plans across hosts for every distinct shard size, for one sub-rank
// (only_rank >= 0) or all (-1).
class ShardPlans {
public:
    ShardPlans(const Topology& hosts, const PlanOptions& opts, int only_rank)
        : hosts_(hosts), opts_(opts), only_rank_(only_rank) {}
    Status get(std::size_t count, const Plan** out) {
        auto it = plans_.find(count);
        if (it == plans_.end()) {
            Plan p;
            const Algorithm a = hier_inter_algorithm(opts_, count);
            if (algorithm_info(a).device_only || a == Algorithm::automatic)
                return Status::invalid(std::string("nccl_hier: '") + algorithm_name(a) +
                                       "' cannot plan across hosts");
            TOPOAR_TRY(make_plan(a, hosts_, count, only_rank_, opts_, &p));
            it = plans_.emplace(count, std::move(p)).first;
        }
        *out = &it->second;
        return Status::ok();
    }
    const PlanOptions& opts() const { return opts_; }

private:
    const Topology& hosts_;
    const PlanOptions& opts_;
    int only_rank_;
    std::map<std::size_t, Plan> plans_;
};

Status owned_shards(const HostLayout& l, const Topology& hosts, std::size_t count, int rank, ShardPlans& plans,
                    std::vector<HierShard>* out) {
    out->clear();
    const int k = l.host_of[static_cast<std::size_t>(rank)], j = l.local_of[static_cast<std::size_t>(rank)];
    const int n = static_cast<int>(l.members[static_cast<std::size_t>(k)].size());
    for (int s = j; s < l.shards; s += n) {
        const Range r = hier_shard(count, l.shards, s);
        if (r.count == 0) continue;
        HierShard sh;
        sh.shard = s;
        sh.offset = r.offset;
        sh.count = r.count;
        sh.algorithm = hier_inter_algorithm(plans.opts(), r.count);
        if (hosts.num_ranks() > 1) {
            const Plan* p = nullptr;
            TOPOAR_TRY(plans.get(r.count, &p));
            sh.schedule = map_schedule(p->of(k), l, s);
        }
        out->push_back(std::move(sh));
    }
    return Status::ok();
}

std::size_t scratch_of(const RankSchedule& s) {
    std::size_t most = 0;
    for (const Round& r : s.rounds) {
        std::size_t need = 0;
        for (const Op& op : r.ops)
            if (op.kind == OpKind::recv_reduce) need += op.count;
        most = std::max(most, need);
    }
    return most;
}

}  // namespace

Status host_level_topology(const Topology& topo, Topology* out) {
    std::map<int, int> host_index;
    for (int h : topo.nodes_at(Level::node)) host_index.emplace(h, static_cast<int>(host_index.size()));
    if (host_index.empty()) return Status::unsupported("nccl_hier: the topology has no hosts");
    TopologyBuilder b;
    add_host_level(topo, topo.root(), b.root(), b, host_index);
    return b.build(out);
}

Algorithm hier_inter_algorithm(const PlanOptions& opts, std::size_t shard_count) {
    if (opts.hier_inter != Algorithm::automatic) return opts.hier_inter;
    return shard_count <= opts.hier_small_elems ? Algorithm::leader : Algorithm::tree;
}

Status plan_nccl_hier_rank(const Topology& topo, std::size_t count, int rank, const PlanOptions& opts,
                           HierPlan* out) {
    if (rank < 0 || rank >= topo.num_ranks())
        return Status::invalid("nccl_hier: rank " + std::to_string(rank) + " outside the topology");
    HostLayout l;
    TOPOAR_TRY(host_layout(topo, &l));
    Topology hosts;
    TOPOAR_TRY(host_level_topology(topo, &hosts));
    HierPlan h;
    h.count = count;
    h.shards = l.shards;
    h.hosts = static_cast<int>(l.members.size());
    h.host = l.host_of[static_cast<std::size_t>(rank)];
    h.local = l.local_of[static_cast<std::size_t>(rank)];
    h.host_size = static_cast<int>(l.members[static_cast<std::size_t>(h.host)].size());
    if (count > 0) {
        host_collectives(count, l.shards, h.host_size, &h.scatter, &h.gather);
        ShardPlans plans(hosts, opts, h.host);
        TOPOAR_TRY(owned_shards(l, hosts, count, rank, plans, &h.owned));
        for (const HierShard& s : h.owned) h.scratch_elems = std::max(h.scratch_elems, scratch_of(s.schedule));
    }
    *out = std::move(h);
    return Status::ok();
}

Status plan_nccl_hier(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    HostLayout l;
    TOPOAR_TRY(host_layout(topo, &l));
    Topology hosts;
    TOPOAR_TRY(host_level_topology(topo, &hosts));
    const int p = topo.num_ranks();
    // Phases 1 and 3 as direct messages: every member sends each shard it
    // does not own to that shard's owner, which reduces it; the owner sends
    // the result back to each member.
    PlanBuilder scatter(Algorithm::nccl_hier, p, count, only_rank), gather(Algorithm::nccl_hier, p, count, only_rank);
    if (count > 0)
        for (const auto& m : l.members) {
            const int n = static_cast<int>(m.size());
            for (int s = 0; s < l.shards; ++s) {
                const Range r = hier_shard(count, l.shards, s);
                const int owner = m[static_cast<std::size_t>(s % n)];
                for (int member : m) {
                    if (member == owner) continue;
                    scatter.transfer(0, member, owner, r.offset, r.count, OpKind::recv_reduce);
                    gather.transfer(0, owner, member, r.offset, r.count, OpKind::recv_copy);
                }
            }
        }
    Plan first = scatter.finish(), last = gather.finish();
    Plan plan;
    plan.algorithm = Algorithm::nccl_hier;
    plan.count = count;
    plan.nranks = p;
    plan.only_rank = only_rank;
    plan.ranks.resize(static_cast<std::size_t>(p));
    // Phase 2: each rank's shard schedules one after the other, shifted to
    // the shard's place in the buffer.
    std::map<int, ShardPlans> per_host;
    for (int r = 0; r < p; ++r) {
        if (only_rank >= 0 && r != only_rank) continue;
        RankSchedule& rs = plan.ranks[static_cast<std::size_t>(r)];
        for (const Round& x : first.of(r).rounds) rs.rounds.push_back(x);
        if (count > 0) {
            const int k = l.host_of[static_cast<std::size_t>(r)];
            auto it = per_host.find(k);
            if (it == per_host.end()) it = per_host.emplace(k, ShardPlans(hosts, opts, k)).first;
            std::vector<HierShard> owned;
            TOPOAR_TRY(owned_shards(l, hosts, count, r, it->second, &owned));
            for (const HierShard& s : owned)
                for (Round x : s.schedule.rounds) {
                    for (Op& op : x.ops) op.offset += s.offset;
                    rs.rounds.push_back(std::move(x));
                }
        }
        for (const Round& x : last.of(r).rounds) rs.rounds.push_back(x);
        rs.scratch_elems = scratch_of(rs);
    }
    *out = std::move(plan);
    return Status::ok();
}

}  // namespace topoar
