#include "executor.hpp"

#include <algorithm>
#include <cstring>

namespace topoar {

namespace {

// The PML takes an int count of bytes: keep every message well below 2 GiB.
constexpr std::size_t kMaxMessageBytes = std::size_t(1) << 30;

bool is_recv(OpKind k) { return k != OpKind::send; }

}  // namespace

ExecProgram compile_schedule(const RankSchedule& schedule, std::size_t segment_elems, std::size_t elem_size) {
    ExecProgram prog;
    std::size_t seg = segment_elems ? segment_elems : SIZE_MAX;
    seg = std::min(seg, std::max<std::size_t>(1, kMaxMessageBytes / std::max<std::size_t>(1, elem_size)));

    // Steps, and the largest amount any one round receives.
    std::size_t max_round_recv = 0;
    const int nrounds = static_cast<int>(schedule.rounds.size());
    std::vector<std::size_t> round_recv(static_cast<std::size_t>(nrounds), 0);
    for (int r = 0; r < nrounds; ++r) {
        prog.round_begin.push_back(prog.steps.size());
        for (const Op& op : schedule.rounds[static_cast<std::size_t>(r)].ops)
            for (std::size_t done = 0; done < op.count; done += seg) {
                ExecProgram::Step s;
                s.kind = op.kind;
                s.order = op.order;
                s.peer = op.peer;
                s.round = r;
                s.offset = op.offset + done;
                s.count = std::min(seg, op.count - done);
                if (is_recv(s.kind)) {
                    s.slot = round_recv[static_cast<std::size_t>(r)];
                    round_recv[static_cast<std::size_t>(r)] += s.count;
                }
                prog.steps.push_back(std::move(s));
            }
        max_round_recv = std::max(max_round_recv, round_recv[static_cast<std::size_t>(r)]);
    }
    prog.round_begin.push_back(prog.steps.size());

    // Scratch: one band per round of the window; round r uses band r % W.
    const std::size_t bands = static_cast<std::size_t>(std::min(nrounds, kWindowRounds));
    prog.scratch_elems = bands * max_round_recv;
    for (auto& s : prog.steps)
        if (is_recv(s.kind)) s.slot += static_cast<std::size_t>(s.round % kWindowRounds) * max_round_recv;

    // Dependencies (step indices, ascending).
    //   send in round r: every receive of an earlier round into its range
    //     must be applied (it carries final data of that round);
    //   receive applied in round r: earlier writes to its range applied
    //     first (fixed operand order), and sends of rounds <= r reading the
    //     range completed (they carry the value from before).
    // The element range is cut into atoms at every step boundary; each atom
    // lists the receives and the sends that touch it, newest first, so a step
    // finds the earlier steps overlapping it by walking its atoms instead of
    // every earlier step (compiling a 2,048-rank plan for the cost model
    // went from minutes to seconds; the result is the same).
    const std::size_t n = prog.steps.size();
    prog.direct.assign(n, 0);
    std::vector<std::size_t> cuts;
    cuts.reserve(2 * n);
    for (const auto& s : prog.steps) {
        cuts.push_back(s.offset);
        cuts.push_back(s.offset + s.count);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    auto atom = [&cuts](std::size_t x) {
        return static_cast<std::size_t>(std::lower_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
    };
    constexpr std::uint32_t kEnd = UINT32_MAX;
    struct Link {
        std::uint32_t step, next;
    };
    std::vector<Link> pool;
    std::vector<std::uint32_t> recvs(cuts.size(), kEnd), sends(cuts.size(), kEnd);  // list heads per atom
    std::vector<std::uint32_t> seen(n, kEnd);
    auto add = [&pool](std::vector<std::uint32_t>& head, std::size_t a, std::size_t i) {
        pool.push_back(Link{static_cast<std::uint32_t>(i), head[a]});
        head[a] = static_cast<std::uint32_t>(pool.size() - 1);
    };
    for (std::size_t r = 0; r + 1 < prog.round_begin.size(); ++r) {
        const std::size_t lo = prog.round_begin[r], hi = prog.round_begin[r + 1];
        // The round's sends first: its receives wait for those listed after them too.
        for (std::size_t i = lo; i < hi; ++i) {
            const auto& s = prog.steps[i];
            if (is_recv(s.kind)) continue;
            for (std::size_t a = atom(s.offset), e = atom(s.offset + s.count); a < e; ++a) add(sends, a, i);
        }
        for (std::size_t i = lo; i < hi; ++i) {
            auto& s = prog.steps[i];
            auto take = [&](std::uint32_t j) {
                if (seen[j] == i) return;
                seen[j] = static_cast<std::uint32_t>(i);
                s.deps.push_back(j);
            };
            const std::size_t a0 = atom(s.offset), a1 = atom(s.offset + s.count);
            for (std::size_t a = a0; a < a1; ++a) {
                std::uint32_t k = recvs[a];
                if (!is_recv(s.kind))  // receives of this round are newer than lo: skipped
                    while (k != kEnd && pool[k].step >= lo) k = pool[k].next;
                for (; k != kEnd; k = pool[k].next) take(pool[k].step);
                if (is_recv(s.kind))
                    for (k = sends[a]; k != kEnd; k = pool[k].next) take(pool[k].step);
            }
            std::sort(s.deps.begin(), s.deps.end());
            if (is_recv(s.kind))
                for (std::size_t a = a0; a < a1; ++a) add(recvs, a, i);
            // A copy nothing else touches first may land in place.
            prog.direct[i] = s.kind == OpKind::recv_copy && s.deps.empty();
        }
    }
    return prog;
}

Status Executor::run(const ExecProgram& prog, void* buf_v, void* scratch_v, std::size_t elem_size,
                     Transport& transport, Reducer& reducer) {
    char* buf = static_cast<char*>(buf_v);
    char* scratch = static_cast<char*>(scratch_v);
    const std::size_t n = prog.steps.size();
    state_.assign(n, waiting);
    req_.assign(n, nullptr);
    std::vector<std::size_t> dep_cursor(n, 0);
    const std::size_t nrounds = prog.round_begin.size() - 1;
    std::vector<int> blocked;  // peers whose next send must wait (this pass)

    auto ready = [&](std::size_t i) {
        const auto& deps = prog.steps[i].deps;
        std::size_t& c = dep_cursor[i];
        while (c < deps.size() && state_[deps[c]] == finished) ++c;
        return c == deps.size();
    };
    auto land = [&](std::size_t i) -> char* {
        const auto& s = prog.steps[i];
        return prog.direct[i] ? buf + s.offset * elem_size : scratch + s.slot * elem_size;
    };

    std::size_t cur = 0;  // lowest round not finished
    while (cur < nrounds) {
        transport.progress();
        std::size_t hi = prog.round_begin[std::min(nrounds, cur + kWindowRounds)];
        blocked.clear();
        for (std::size_t i = prog.round_begin[cur]; i < hi; ++i) {
            const auto& s = prog.steps[i];
            switch (state_[i]) {
            case waiting:
                if (is_recv(s.kind)) {
                    TOPOAR_TRY(transport.irecv(land(i), s.count * elem_size, s.peer, &req_[i]));
                    state_[i] = posted;
                } else if (std::find(blocked.begin(), blocked.end(), s.peer) == blocked.end()) {
                    if (ready(i)) {
                        TOPOAR_TRY(transport.isend(buf + s.offset * elem_size, s.count * elem_size, s.peer,
                                                   &req_[i]));
                        state_[i] = posted;
                    } else {
                        blocked.push_back(s.peer);  // keep sends to a peer in order
                    }
                }
                break;
            case posted: {
                bool done = false;
                TOPOAR_TRY(transport.test(&req_[i], &done));
                if (done) state_[i] = (s.kind == OpKind::send || prog.direct[i]) ? finished : arrived;
                break;
            }
            default:
                break;
            }
            if (state_[i] == arrived && ready(i)) {
                char* data = land(i);
                char* target = buf + s.offset * elem_size;
                if (s.kind == OpKind::recv_copy) {
                    std::memcpy(target, data, s.count * elem_size);
                } else if (s.order == Operand::incoming_first) {
                    reducer.reduce(data, target, s.count);
                } else {
                    reducer.reduce(target, data, s.count);
                    std::memcpy(target, data, s.count * elem_size);
                }
                state_[i] = finished;
            }
        }
        while (cur < nrounds) {
            bool all = true;
            for (std::size_t i = prog.round_begin[cur]; i < prog.round_begin[cur + 1] && all; ++i)
                all = state_[i] == finished;
            if (!all) break;
            ++cur;
        }
    }
    return Status::ok();
}

Status Executor::run(const RankSchedule& schedule, void* buf, void* /*scratch*/, std::size_t elem_size,
                     std::size_t segment_elems, Transport& transport, Reducer& reducer) {
    ExecProgram prog = compile_schedule(schedule, segment_elems, elem_size);
    own_scratch_.assign(std::max<std::size_t>(1, prog.scratch_elems * elem_size), 0);
    return run(prog, buf, own_scratch_.data(), elem_size, transport, reducer);
}

}  // namespace topoar
