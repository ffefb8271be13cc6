#include "exec/device_executor.hpp"

#include <string>
#include <vector>

namespace topoar {

namespace {

std::string where(std::size_t round, const Op* op) {
    std::string w = "device round " + std::to_string(round);
    if (op) w += std::string(op->kind == OpKind::send ? " send to " : " receive from ") + std::to_string(op->peer);
    return w;
}

Status at(const Status& s, const std::string& w) {
    return s ? s : Status(s.code(), w + ": " + s.message());
}

}  // namespace

Status run_device_schedule(const RankSchedule& schedule, void* buf_v, std::size_t elem_size,
                           DeviceTransport& transport) {
    char* buf = static_cast<char*>(buf_v);
    char* scratch = nullptr;
    if (schedule.scratch_elems > 0) {
        void* s = nullptr;
        TOPOAR_TRY(transport.scratch(schedule.scratch_elems * elem_size, &s));
        scratch = static_cast<char*>(s);
    }
    struct Pending {
        const char* in;
        char* inout;
        std::size_t count;
    };
    std::vector<Pending> reductions;
    Status st;
    for (std::size_t r = 0; r < schedule.rounds.size() && st; ++r) {
        const Round& round = schedule.rounds[r];
        reductions.clear();
        st = at(transport.group_start(), where(r, nullptr));
        if (!st) break;
        std::size_t slot = 0;
        // Sends first, then receives: within a group the order does not
        // matter to NCCL, but per peer it is the plan's order either way.
        for (const Op& op : round.ops) {
            if (op.kind != OpKind::send) continue;
            st = at(transport.send(buf + op.offset * elem_size, op.count * elem_size, op.peer), where(r, &op));
            if (!st) break;
        }
        for (const Op& op : round.ops) {
            if (!st || op.kind == OpKind::send) continue;
            char* dst = buf + op.offset * elem_size;
            if (op.kind == OpKind::recv_reduce) {
                if (slot + op.count > schedule.scratch_elems) {
                    st = Status::internal(where(r, &op) + ": scratch of " +
                                               std::to_string(schedule.scratch_elems) + " elements exceeded");
                    break;
                }
                char* s = scratch + slot * elem_size;
                reductions.push_back(Pending{s, dst, op.count});
                slot += op.count;
                dst = s;
            }
            st = at(transport.recv(dst, op.count * elem_size, op.peer), where(r, &op));
        }
        // The group is closed even after a failed post, so the transport is
        // never left inside a group.
        Status end = at(transport.group_end(), where(r, nullptr));
        if (st) st = end;
        for (const Pending& p : reductions) {
            if (!st) break;
            st = at(transport.reduce(p.in, p.inout, p.count), where(r, nullptr) + " reduction");
        }
    }
    // Always synchronize: whatever was enqueued finishes before the caller
    // sees its buffer again.
    Status done = at(transport.synchronize(), "device synchronize");
    return st ? done : st;
}

}  // namespace topoar
