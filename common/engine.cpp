#include "engine.hpp"

#include "planners.hpp"

namespace topoar {

namespace {

// Leaves in depth-first order: ranks of one node, then of one rack, are
// contiguous.
void leaves_in_order(const Topology& topo, int id, std::vector<int>* out) {
    const TopoNode& n = topo.node(id);
    if (n.children.empty()) {
        out->push_back(n.rank);
        return;
    }
    for (int c : n.children) leaves_in_order(topo, c, out);
}

// Plans for this many distinct counts are kept per communicator; a program
// cycling through more sizes rebuilds them (cheap next to the transfer).
constexpr std::size_t kMaxCachedPlans = 64;
}  // namespace

Engine::Engine(int rank, int size, EngineConfig cfg) : rank_(rank), size_(size), cfg_(std::move(cfg)) {}

Status Engine::setup(const std::vector<RankInfo>& ranks) {
    if (static_cast<int>(ranks.size()) != size_)
        return Status::internal("setup: got " + std::to_string(ranks.size()) + " rank records for " +
                                std::to_string(size_) + " ranks");
    TOPOAR_TRY(discover_topology(ranks, cfg_.discovery, &topology_));
    ready_ = true;
    return Status::ok();
}

Algorithm Engine::choose(std::size_t bytes) const {
    if (cfg_.algorithm != Algorithm::automatic) return cfg_.algorithm;
    return bytes <= cfg_.small_msg_bytes ? Algorithm::recursive_doubling : Algorithm::ring;
}

Status Engine::make_plan(Algorithm alg, const Topology& topo, std::size_t count, int only_rank, Plan* out) {
    const int p = topo.num_ranks();
    switch (alg) {
    case Algorithm::ring: {
        // Ring order = the topology's leaf order, so ranks sharing a node
        // (and racks) sit next to each other on the ring.
        std::vector<int> order;
        leaves_in_order(topo, topo.root(), &order);
        *out = plan_ring(p, count, only_rank, order);
        return Status::ok();
    }
    case Algorithm::recursive_doubling:
        *out = plan_recursive_doubling(p, count, only_rank);
        return Status::ok();
    default:
        return Status::unsupported(std::string("algorithm '") + algorithm_name(alg) + "' is not available yet");
    }
}

Status Engine::plan_for(Algorithm alg, std::size_t count, const Plan** out) {
    auto key = std::make_pair(static_cast<int>(alg), count);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
        auto plan = std::make_unique<Plan>();
        TOPOAR_TRY(make_plan(alg, topology_, count, rank_, plan.get()));
        if (plans_.size() >= kMaxCachedPlans) plans_.clear();
        it = plans_.emplace(key, std::move(plan)).first;
    }
    *out = it->second.get();
    return Status::ok();
}

Status Engine::allreduce(void* buf, std::size_t count, std::size_t elem_size, Transport& transport,
                         Reducer& reducer, Algorithm* used) {
    if (!ready_) return Status::internal("allreduce before setup");
    Algorithm alg = choose(count * elem_size);
    *used = alg;
    if (count == 0 || size_ == 1) return Status::ok();
    const Plan* plan = nullptr;
    TOPOAR_TRY(plan_for(alg, count, &plan));
    const RankSchedule& mine = plan->of(rank_);
    if (scratch_.size() < mine.scratch_elems * elem_size) scratch_.resize(mine.scratch_elems * elem_size);
    std::size_t seg_elems = cfg_.segment_bytes / elem_size;
    if (cfg_.segment_bytes && seg_elems == 0) seg_elems = 1;
    return executor_.run(mine, buf, scratch_.data(), elem_size, seg_elems, transport, reducer);
}

}  // namespace topoar
