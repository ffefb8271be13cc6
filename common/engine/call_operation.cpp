#include "engine/call_operation.hpp"

#include <algorithm>
#include <new>
#include <string>

namespace topoar {

Status CallOperation::start(const PreparedCall& call, void* buf, Transport& transport, Reducer& reducer) {
    if (running_) return Status::internal("start() of an operation still running");
    call_ = &call;
    if (!runs_on_host(call.route))
        return Status::internal(std::string("run of a call whose route is ") + route_name(call.route));
    chunks_ = call.plan ? call.num_chunks() : 0;
    chunk_ = 0;
    if (chunks_ == 0) return Status::ok();  // nothing to move (count 0, one rank)
    std::size_t need = call.plan->program.scratch_elems * call.elem_size;
    if (call.tail_plan) need = std::max(need, call.tail_plan->program.scratch_elems * call.elem_size);
    if (scratch_size_ < need) {
        // Not zeroed (every byte is written before it is read), and
        // bounded by the largest chunk's plan; kept for the next run.
        scratch_.reset();
        scratch_.reset(new (std::nothrow) unsigned char[need]);
        scratch_size_ = scratch_ ? need : 0;
        if (!scratch_)
            return Status::internal("out of memory for " + std::to_string(need) + " bytes of scratch");
    }
    buf_ = static_cast<char*>(buf);
    transport_ = &transport;
    reducer_ = &reducer;
    running_ = true;
    return start_chunk();
}

Status CallOperation::chunk_error(const Status& s) const {
    if (chunks_ == 1) return s;
    return Status(s.code(), "chunk " + std::to_string(chunk_ + 1) + " of " + std::to_string(chunks_) + ": " +
                                s.message());
}

Status CallOperation::start_chunk() {
    const PreparedCall& call = *call_;
    const bool last_partial = chunk_ + 1 == chunks_ && call.tail_plan != nullptr;
    const CompiledPlan& p = last_partial ? *call.tail_plan : *call.plan;
    char* part = buf_ + chunk_ * call.chunk_count * call.elem_size;
    exec_.set_credit(call.credit);
    Status s = exec_.start(p.program, part, scratch_.get(), call.elem_size, *transport_, *reducer_);
    if (!s) {
        running_ = false;
        return chunk_error(s);
    }
    return Status::ok();
}

Status CallOperation::advance(bool* done, bool* moved) {
    *moved = false;
    *done = !running_;
    while (running_) {
        bool chunk_done = false, chunk_moved = false;
        Status s = exec_.advance(&chunk_done, &chunk_moved);
        if (!s) {
            running_ = false;
            return chunk_error(s);
        }
        *moved = *moved || chunk_moved;
        if (!chunk_done) return Status::ok();
        if (++chunk_ == chunks_) {
            running_ = false;
            *done = true;
            return Status::ok();
        }
        *moved = true;  // the next chunk may find its first messages in already
        TOPOAR_TRY(start_chunk());
    }
    return Status::ok();
}

void CallOperation::abandon() {
    if (!running_) return;
    exec_.abandon();
    running_ = false;
}

}  // namespace topoar
