#include "engine/plan_cache.hpp"

namespace topoar {

std::size_t footprint(const CompiledPlan& p) {
    std::size_t b = sizeof(CompiledPlan);
    for (const RankSchedule& rs : p.plan.ranks) {
        b += sizeof(RankSchedule) + rs.rounds.size() * sizeof(Round);
        for (const Round& r : rs.rounds) b += r.ops.size() * sizeof(Op);
    }
    b += p.program.steps.size() * (sizeof(ExecProgram::Step) + 1) + p.program.round_begin.size() * sizeof(std::size_t);
    for (const auto& st : p.program.steps) b += st.deps.size() * sizeof(std::uint32_t);
    b += p.fast.steps.size() * sizeof(FastStep) + p.fast.round_begin.size() * sizeof(std::uint32_t);
    return b;
}

std::size_t footprint(const HierPlan& h) {
    std::size_t b = 0;
    for (const HierShard& sh : h.owned)
        for (const Round& r : sh.schedule.rounds) b += sizeof(Round) + r.ops.size() * sizeof(Op);
    return b;
}

Status PlanCache::get(const Key& key, const std::function<Status(CompiledPlan*)>& build, PlanHandle* out) {
    auto it = plans_.find(key);
    if (it == plans_.end()) {
        auto p = std::make_shared<CompiledPlan>();
        TOPOAR_TRY(build(p.get()));
        bytes_ += footprint(*p);
        it = plans_.emplace(key, std::move(p)).first;
    }
    *out = it->second;
    return Status::ok();
}

Status PlanCache::get_hier(const HierKey& key, const std::function<Status(HierPlan*)>& build, HierHandle* out) {
    auto it = hier_.find(key);
    if (it == hier_.end()) {
        auto h = std::make_shared<HierPlan>();
        TOPOAR_TRY(build(h.get()));
        bytes_ += footprint(*h);
        it = hier_.emplace(key, std::move(h)).first;
    }
    *out = it->second;
    return Status::ok();
}

void PlanCache::make_room(std::size_t room) {
    if (size() + room > kMaxPlans || bytes_ > kMaxBytes) clear();
}

void PlanCache::clear() {
    plans_.clear();
    hier_.clear();
    bytes_ = 0;
}

}  // namespace topoar
