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

Status DeviceTransport::host_reduce_scatter(const void*, void*, std::size_t) {
    return Status::unsupported("this device transport has no host collectives");
}
Status DeviceTransport::host_reduce(const void*, void*, std::size_t, int) {
    return Status::unsupported("this device transport has no host collectives");
}
Status DeviceTransport::host_all_gather(const void*, void*, std::size_t) {
    return Status::unsupported("this device transport has no host collectives");
}
Status DeviceTransport::host_broadcast(const void*, void*, std::size_t, int) {
    return Status::unsupported("this device transport has no host collectives");
}

namespace {

// Enqueues a schedule's rounds on buf (scratch given); no synchronize.
// `what` prefixes error messages ("device round 3 ...").
Status enqueue_rounds(const RankSchedule& schedule, char* buf, char* scratch, std::size_t elem_size,
                      DeviceTransport& transport, const std::string& what) {
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
        st = at(transport.group_start(), what + where(r, nullptr));
        if (!st) break;
        std::size_t slot = 0;
        // Sends first, then receives: within a group the order does not
        // matter to NCCL, but per peer it is the plan's order either way.
        for (const Op& op : round.ops) {
            if (op.kind != OpKind::send) continue;
            st = at(transport.send(buf + op.offset * elem_size, op.count * elem_size, op.peer), what + where(r, &op));
            if (!st) break;
        }
        for (const Op& op : round.ops) {
            if (!st || op.kind == OpKind::send) continue;
            char* dst = buf + op.offset * elem_size;
            if (op.kind == OpKind::recv_reduce) {
                if (slot + op.count > schedule.scratch_elems) {
                    st = Status::internal(what + where(r, &op) + ": scratch of " +
                                          std::to_string(schedule.scratch_elems) + " elements exceeded");
                    break;
                }
                char* s = scratch + slot * elem_size;
                reductions.push_back(Pending{s, dst, op.count});
                slot += op.count;
                dst = s;
            }
            st = at(transport.recv(dst, op.count * elem_size, op.peer), what + where(r, &op));
        }
        // The group is closed even after a failed post, so the transport is
        // never left inside a group.
        Status end = at(transport.group_end(), what + where(r, nullptr));
        if (st) st = end;
        for (const Pending& p : reductions) {
            if (!st) break;
            st = at(transport.reduce(p.in, p.inout, p.count), what + where(r, nullptr) + " reduction");
        }
    }
    return st;
}

// One group of host collectives, in place on buf.
Status enqueue_host_group(const std::vector<HostCollective>& group, char* buf, int local, std::size_t elem_size,
                          DeviceTransport& transport, const char* what) {
    if (group.empty()) return Status::ok();
    Status st = at(transport.group_start(), what);
    for (const HostCollective& c : group) {
        if (!st) break;
        char* range = buf + c.offset * elem_size;
        char* part = range + static_cast<std::size_t>(local) * c.count * elem_size;
        switch (c.kind) {
        case HostCollective::Kind::reduce_scatter:
            st = transport.host_reduce_scatter(range, part, c.count);
            break;
        case HostCollective::Kind::reduce:
            st = transport.host_reduce(range, range, c.count, c.root);
            break;
        case HostCollective::Kind::all_gather:
            st = transport.host_all_gather(part, range, c.count);
            break;
        case HostCollective::Kind::broadcast:
            st = transport.host_broadcast(range, range, c.count, c.root);
            break;
        }
        st = at(st, std::string(what) + ", elements [" + std::to_string(c.offset) + ", +" + std::to_string(c.count) +
                        (c.kind == HostCollective::Kind::reduce_scatter || c.kind == HostCollective::Kind::all_gather
                             ? " per rank)"
                             : ")"));
    }
    Status end = at(transport.group_end(), what);
    return st ? end : st;
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
    Status st = enqueue_rounds(schedule, buf, scratch, elem_size, transport, "");
    // Always synchronize: whatever was enqueued finishes before the caller
    // sees its buffer again.
    Status done = at(transport.synchronize(), "device synchronize");
    return st ? done : st;
}

Status run_device_hier(const HierPlan& plan, void* buf_v, std::size_t elem_size, DeviceTransport& transport) {
    char* buf = static_cast<char*>(buf_v);
    char* scratch = nullptr;
    if (plan.scratch_elems > 0) {
        void* s = nullptr;
        TOPOAR_TRY(transport.scratch(plan.scratch_elems * elem_size, &s));
        scratch = static_cast<char*>(s);
    }
    Status st = enqueue_host_group(plan.scatter, buf, plan.local, elem_size, transport, "nccl_hier reduce-scatter in the host");
    // Shards in increasing order (planner_nccl_hier.hpp says why); one
    // scratch serves them all: the stream runs a shard's reductions before
    // the next shard's receives.
    for (const HierShard& s : plan.owned) {
        if (!st) break;
        st = enqueue_rounds(s.schedule, buf + s.offset * elem_size, scratch, elem_size, transport,
                            "nccl_hier shard " + std::to_string(s.shard) + " across hosts, ");
    }
    if (st) st = enqueue_host_group(plan.gather, buf, plan.local, elem_size, transport, "nccl_hier all-gather in the host");
    Status done = at(transport.synchronize(), "device synchronize");
    return st ? done : st;
}

}  // namespace topoar
