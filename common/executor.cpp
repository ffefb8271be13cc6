#include "executor.hpp"

#include <algorithm>
#include <cstring>

namespace topoar {

namespace {
// The PML takes an int count of bytes: keep every message well below 2 GiB.
constexpr std::size_t kMaxMessageBytes = std::size_t(1) << 30;
}  // namespace

Status Executor::run(const RankSchedule& schedule, void* buf_v, void* scratch_v, std::size_t elem_size,
                     std::size_t segment_elems, Transport& transport, Reducer& reducer) {
    char* buf = static_cast<char*>(buf_v);
    char* scratch = static_cast<char*>(scratch_v);
    std::size_t seg = segment_elems ? segment_elems : SIZE_MAX;
    seg = std::min(seg, std::max<std::size_t>(1, kMaxMessageBytes / elem_size));

    for (const Round& round : schedule.rounds) {
        recvs_.clear();
        sends_.clear();
        std::size_t scratch_used = 0;
        for (const Op& op : round.ops) {
            if (op.kind == OpKind::send) continue;
            char* target = buf + op.offset * elem_size;
            char* land = target;
            if (op.kind == OpKind::recv_reduce) {
                land = scratch + scratch_used * elem_size;
                scratch_used += op.count;
            }
            for (std::size_t done = 0; done < op.count; done += seg) {
                std::size_t n = std::min(seg, op.count - done);
                Pending p{&op, land + done * elem_size, target + done * elem_size, n, nullptr};
                TOPOAR_TRY(transport.irecv(p.data, n * elem_size, op.peer, &p.req));
                recvs_.push_back(p);
            }
        }
        for (const Op& op : round.ops) {
            if (op.kind != OpKind::send) continue;
            const char* src = buf + op.offset * elem_size;
            for (std::size_t done = 0; done < op.count; done += seg) {
                std::size_t n = std::min(seg, op.count - done);
                Transport::Request req = nullptr;
                TOPOAR_TRY(transport.isend(src + done * elem_size, n * elem_size, op.peer, &req));
                sends_.push_back(req);
            }
        }
        // Sends read the buffer as it was at the start of the round: a
        // reduction into a range that is also being sent waits for the sends;
        // the others run as soon as their segment has arrived.
        auto overlaps_a_send = [&round](const Pending& p) {
            return std::any_of(round.ops.begin(), round.ops.end(), [&](const Op& s) {
                return s.kind == OpKind::send && s.offset < p.op->offset + p.op->count &&
                       p.op->offset < s.offset + s.count;
            });
        };
        auto finish = [&](Pending& p) {
            if (p.op->kind != OpKind::recv_reduce) return;
            if (p.op->order == Operand::incoming_first) {
                reducer.reduce(p.data, p.target, p.count);
            } else {
                reducer.reduce(p.target, p.data, p.count);
                std::memcpy(p.target, p.data, p.count * elem_size);
            }
        };
        bool deferred = false;
        for (Pending& p : recvs_) {
            TOPOAR_TRY(transport.wait(&p.req));
            if (p.op->kind == OpKind::recv_reduce && overlaps_a_send(p)) {
                deferred = true;  // reduced below, after the sends
                continue;
            }
            finish(p);
            p.count = 0;  // marks it done
        }
        for (auto& req : sends_) TOPOAR_TRY(transport.wait(&req));
        if (deferred)
            for (Pending& p : recvs_)
                if (p.count) finish(p);
    }
    return Status::ok();
}

}  // namespace topoar
