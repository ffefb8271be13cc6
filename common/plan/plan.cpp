#include "plan/plan.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

namespace topoar {

PlanBuilder::PlanBuilder(Algorithm alg, int nranks, std::size_t count, int only_rank) {
    plan_.algorithm = alg;
    plan_.nranks = nranks;
    plan_.count = count;
    plan_.only_rank = only_rank;
    plan_.ranks.resize(static_cast<std::size_t>(nranks));
}

Round& PlanBuilder::round_of(int rank, int round) {
    auto& rounds = plan_.ranks[static_cast<std::size_t>(rank)].rounds;
    if (rounds.size() <= static_cast<std::size_t>(round)) rounds.resize(static_cast<std::size_t>(round) + 1);
    return rounds[static_cast<std::size_t>(round)];
}

void PlanBuilder::transfer(int round, int src, int dst, std::size_t offset, std::size_t count,
                           OpKind recv_kind, Operand order) {
    if (count == 0) return;  // both sides skip it alike
    if (plan_.only_rank < 0 || plan_.only_rank == src)
        round_of(src, round).ops.push_back(Op{OpKind::send, order, dst, offset, count});
    if (plan_.only_rank < 0 || plan_.only_rank == dst)
        round_of(dst, round).ops.push_back(Op{recv_kind, order, src, offset, count});
}

Plan PlanBuilder::finish() {
    for (auto& sched : plan_.ranks) {
        auto& rounds = sched.rounds;
        rounds.erase(std::remove_if(rounds.begin(), rounds.end(),
                                    [](const Round& r) { return r.ops.empty(); }),
                     rounds.end());
        sched.scratch_elems = 0;
        for (const auto& r : rounds) {
            std::size_t need = 0;
            for (const auto& op : r.ops)
                if (op.kind == OpKind::recv_reduce) need += op.count;
            sched.scratch_elems = std::max(sched.scratch_elems, need);
        }
    }
    return std::move(plan_);
}

namespace {

bool overlaps(const Op& a, const Op& b) {
    return a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

std::string where(int rank, std::size_t round) {
    std::ostringstream s;
    s << "rank " << rank << " round " << round << ": ";
    return s.str();
}

}  // namespace

Status validate_plan(const Plan& plan) {
    if (plan.only_rank >= 0) return Status::invalid("validate_plan needs a full plan");
    // Per ordered pair (src, dst): the sequence of (count, offset-agnostic)
    // message sizes must be equal on both sides.
    std::map<std::pair<int, int>, std::vector<std::size_t>> sent, received;
    for (int r = 0; r < plan.nranks; ++r) {
        const auto& rounds = plan.ranks[static_cast<std::size_t>(r)].rounds;
        for (std::size_t k = 0; k < rounds.size(); ++k) {
            const auto& ops = rounds[k].ops;
            if (ops.empty()) return Status::internal(where(r, k) + "empty round kept");
            for (std::size_t i = 0; i < ops.size(); ++i) {
                const Op& op = ops[i];
                if (op.peer < 0 || op.peer >= plan.nranks || op.peer == r)
                    return Status::internal(where(r, k) + "bad peer " + std::to_string(op.peer));
                if (op.count == 0 || op.offset + op.count > plan.count)
                    return Status::internal(where(r, k) + "range out of bounds");
                if (op.kind == OpKind::send)
                    sent[{r, op.peer}].push_back(op.count);
                else
                    received[{op.peer, r}].push_back(op.count);
                if (op.kind != OpKind::recv_copy) continue;
                for (std::size_t j = 0; j < ops.size(); ++j)
                    if (j != i && overlaps(op, ops[j]))
                        return Status::internal(where(r, k) + "recv_copy overlaps another operation");
            }
        }
    }
    if (sent != received) return Status::internal("sends and receives do not match");
    return Status::ok();
}

std::string describe_schedule(const Plan& plan, int rank) {
    static const char* const kind_names[] = {"send", "recv+reduce", "recv"};
    std::ostringstream s;
    const auto& rounds = plan.ranks[static_cast<std::size_t>(rank)].rounds;
    s << "rank " << rank << ": " << rounds.size() << " rounds\n";
    for (std::size_t k = 0; k < rounds.size(); ++k) {
        s << "  round " << k << ":";
        for (const auto& op : rounds[k].ops) {
            s << "  " << kind_names[static_cast<int>(op.kind)] << (op.kind == OpKind::send ? " to " : " from ")
              << op.peer << " [" << op.offset << "," << op.offset + op.count << ")";
            if (op.kind == OpKind::recv_reduce && op.order == Operand::local_first) s << " (local first)";
        }
        s << "\n";
    }
    return s.str();
}

}  // namespace topoar
