#include "exec/executor.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace topoar {

namespace {

const char* kind_name(OpKind k) {
    switch (k) {
    case OpKind::send: return "send to";
    case OpKind::recv_reduce: return "recv_reduce from";
    case OpKind::recv_copy: return "recv_copy from";
    }
    return "?";
}

}  // namespace

// The executor's side of the policy: posts and applies on the transport and
// the buffer, and keeps the first failure (after it, nothing more is posted).
class ExecOperation::Driver final : public ScheduleDriver {
public:
    explicit Driver(ExecOperation& ex) : ex_(ex) {}
    // For one run (kept across runs: a reused operation allocates nothing).
    void bind(const ExecProgram& prog, char* buf, char* scratch, std::size_t elem_size, Transport& transport,
              Reducer& reducer) {
        prog_ = &prog;
        buf_ = buf;
        scratch_ = scratch;
        elem_ = elem_size;
        t_ = &transport;
        reducer_ = &reducer;
        error_ = Status::ok();
    }

    bool post_recv(std::uint32_t i) override {
        if (!error_.is_ok()) return false;
        const auto& s = prog_->steps[i];
        if (!note(t_->irecv(land(i), s.count * elem_, s.peer, &ex_.req_[i]), i, "irecv")) return false;
        ex_.live_[i] = 1;
        // Its message may be there already (the unexpected queue): take it
        // now, as the policy allows (and as the cost model does).
        if (poll(i)) return true;
        if (error_.is_ok()) ex_.queue_[s.chan].push_back(i);
        return false;
    }
    void post_send(std::uint32_t i) override {
        if (!error_.is_ok()) return;
        const auto& s = prog_->steps[i];
        const void* data = buf_ + s.offset * elem_;
        const std::size_t bytes = s.count * elem_;
        const bool sync = s.sync && ex_.credit_;
        if (note(sync ? t_->issend(data, bytes, s.peer, &ex_.req_[i]) : t_->isend(data, bytes, s.peer, &ex_.req_[i]),
                 i, sync ? "issend" : "isend")) {
            ex_.live_[i] = 1;
            ex_.queue_[s.chan].push_back(i);
        }
    }
    bool apply(std::uint32_t i) override {
        if (!error_.is_ok() || prog_->direct[i]) return true;  // a direct receive landed in place
        const auto& s = prog_->steps[i];
        char* data = land(i);
        char* target = buf_ + s.offset * elem_;
        if (s.kind == OpKind::recv_copy) {
            std::memcpy(target, data, s.count * elem_);
        } else if (s.order == Operand::incoming_first) {
            reducer_->reduce(data, target, s.count);
        } else {
            reducer_->reduce(target, data, s.count);
            std::memcpy(target, data, s.count * elem_);
        }
        return true;
    }

    // Tests step i's request once; true when it completed.
    bool poll(std::uint32_t i) {
        bool done = false;
        Status st = t_->test(&ex_.req_[i], &done);
        if (!st.is_ok()) ex_.live_[i] = 0;  // a failed test ends the request
        if (!note(std::move(st), i, "test")) return false;
        if (done) ex_.live_[i] = 0;
        return done;
    }

    const Status& error() const { return error_; }

private:
    char* land(std::uint32_t i) const {
        const auto& s = prog_->steps[i];
        return prog_->direct[i] ? buf_ + s.offset * elem_ : scratch_ + s.slot * elem_;
    }
    // Keeps the first failure, with where it happened.
    bool note(Status st, std::uint32_t i, const char* call) {
        if (st.is_ok()) return true;
        if (error_.is_ok()) {
            const auto& s = prog_->steps[i];
            std::ostringstream m;
            m << "executor: " << call << " of step " << i << " of " << prog_->steps.size() << " (round " << s.round
              << ", " << kind_name(s.kind) << " peer " << s.peer << ", " << s.count * elem_ << " bytes at element "
              << s.offset << ") failed: " << st.message();
            error_ = Status(st.code(), m.str());
        }
        return false;
    }

    ExecOperation& ex_;
    const ExecProgram* prog_ = nullptr;
    char* buf_ = nullptr;
    char* scratch_ = nullptr;
    std::size_t elem_ = 0;
    Transport* t_ = nullptr;
    Reducer* reducer_ = nullptr;
    Status error_;
};

ExecOperation::ExecOperation() = default;
ExecOperation::~ExecOperation() { abandon(); }

Status ExecOperation::start(const ExecProgram& prog, void* buf_v, void* scratch_v, std::size_t elem_size,
                            Transport& transport, Reducer& reducer) {
    if (running_) return Status::internal("executor: start() of an operation still running");
    const std::size_t n = prog.steps.size();
    req_.assign(n, nullptr);
    live_.assign(n, 0);
    queue_.resize(std::max(queue_.size(), prog.num_chans));
    for (std::size_t c = 0; c < prog.num_chans; ++c) queue_[c].clear();
    head_.assign(prog.num_chans, 0);
    policy_.clear();
    policy_.set_trace(trace_);
    TOPOAR_TRY(policy_.add_rank(prog, credit_));
    prog_ = &prog;
    transport_ = &transport;
    if (!driver_) driver_.reset(new Driver(*this));
    driver_->bind(prog, static_cast<char*>(buf_v), static_cast<char*>(scratch_v), elem_size, transport, reducer);
    running_ = true;
    policy_.start(driver_.get());
    if (!driver_->error().is_ok()) return failed_run();
    return Status::ok();
}

// Each pass tests the oldest posted request of every channel (one peer, one
// direction), and the next while they complete: O(channels) per pass, not
// O(posted requests), which made a call with thousands of segments in
// flight quadratic in its size.  A request completing behind an unfinished
// older one of its channel is seen when that one completes: messages of a
// channel match in order, and the older one completes through the
// transport's progress alone.
Status ExecOperation::advance(bool* done, bool* moved) {
    *moved = false;
    *done = false;
    if (!running_) {
        *done = true;
        return Status::ok();
    }
    Driver& d = *driver_;
    const ExecProgram& prog = *prog_;
    for (std::size_t c = 0; c < prog.num_chans && d.error().is_ok() && !policy_.done(0); ++c) {
        std::vector<std::uint32_t>& q = queue_[c];  // posting below may grow it
        std::size_t& h = head_[c];
        while (h < q.size() && d.error().is_ok()) {
            const std::uint32_t i = q[h];
            if (!d.poll(i)) break;
            ++h;
            *moved = true;
            if (prog.steps[i].kind == OpKind::send)
                policy_.send_done(i);
            else
                policy_.arrived(i);
        }
    }
    if (!d.error().is_ok()) return failed_run();
    if (policy_.done(0)) {
        running_ = false;
        *done = true;
    }
    return Status::ok();
}

std::size_t ExecOperation::cancel_posted(std::size_t* failed, std::string* first_problem) {
    std::size_t cancelled = 0;
    for (std::size_t i = 0; i < live_.size(); ++i) {
        if (!live_[i]) continue;
        Status st = transport_->cancel(&req_[i]);
        live_[i] = 0;
        ++cancelled;
        if (!st.is_ok() && (*failed)++ == 0)
            *first_problem = "; cancelling step " + std::to_string(i) + ": " + st.message();
    }
    return cancelled;
}

// Failed: end every request still posted, so nothing outlives the run.
Status ExecOperation::failed_run() {
    running_ = false;
    std::string message = driver_->error().message(), problem;
    std::size_t failed = 0;
    const std::size_t cancelled = cancel_posted(&failed, &problem);
    message += problem;
    if (cancelled)
        message += "; " + std::to_string(cancelled) + " posted request(s) cancelled" +
                   (failed ? " (" + std::to_string(failed) + " failed)" : std::string());
    return Status(driver_->error().code(), message);
}

void ExecOperation::abandon() {
    if (!running_) return;
    running_ = false;
    std::size_t failed = 0;
    std::string problem;
    cancel_posted(&failed, &problem);
}

Status Executor::run(const ExecProgram& prog, void* buf, void* scratch, std::size_t elem_size,
                     Transport& transport, Reducer& reducer) {
    TOPOAR_TRY(op_.start(prog, buf, scratch, elem_size, transport, reducer));
    return run_to_end(op_, transport);
}

Status Executor::run(const RankSchedule& schedule, void* buf, void* /*scratch*/, std::size_t elem_size,
                     std::size_t segment_elems, Transport& transport, Reducer& reducer) {
    ExecProgram prog = compile_schedule(schedule, segment_elems, elem_size);
    own_scratch_.assign(std::max<std::size_t>(1, prog.scratch_elems * elem_size), 0);
    return run(prog, buf, own_scratch_.data(), elem_size, transport, reducer);
}

}  // namespace topoar
