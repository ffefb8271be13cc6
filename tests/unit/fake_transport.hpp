// An in-process stand-in for the PML, for tests: P ranks are threads of one
// process and messages go through per-(src,dst) FIFO queues.
//
// Matching follows MPI's rule for one tag on one communicator: the k-th
// receive a rank posts from a source gets the k-th message that source sent
// it, whatever order the waits come in.  Sends are buffered (they complete at
// once); a receive of the wrong size is an error, like MPI_ERR_TRUNCATE.
// fail_after(n) breaks the network at the n-th transport call of any rank:
// that call and every later one fail, so every rank's executor stops, and
// the tests check that none leaves a request posted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/executor.hpp"

namespace topoar_test {

class FakeNetwork {
public:
    explicit FakeNetwork(int nranks) : n_(nranks), queues_(static_cast<std::size_t>(nranks * nranks)) {}

    int size() const { return n_; }

    void post(int src, int dst, const void* buf, std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mu_);
        auto& q = queue(src, dst);
        q.messages.emplace_back(static_cast<const unsigned char*>(buf),
                                static_cast<const unsigned char*>(buf) + bytes);
        ++messages_;
        bytes_ += bytes;
        cv_.notify_all();
    }

    // Blocks until message number `seq` from src to dst exists; copies it.
    bool take(int src, int dst, std::size_t seq, void* buf, std::size_t bytes) {
        std::unique_lock<std::mutex> lock(mu_);
        auto& q = queue(src, dst);
        cv_.wait(lock, [&] { return q.messages.size() > seq; });
        const auto& m = q.messages[seq];
        if (m.size() != bytes) return false;
        if (bytes) std::memcpy(buf, m.data(), bytes);
        return true;
    }

    // Non-blocking take: false in *ready when the message is not there yet.
    bool try_take(int src, int dst, std::size_t seq, void* buf, std::size_t bytes, bool* ready) {
        std::lock_guard<std::mutex> lock(mu_);
        auto& q = queue(src, dst);
        *ready = q.messages.size() > seq;
        if (!*ready) return true;
        const auto& m = q.messages[seq];
        if (m.size() != bytes) return false;
        if (bytes) std::memcpy(buf, m.data(), bytes);
        return true;
    }

    // Breaks the network at the n-th call from now (1: the next one).
    void fail_after(long n) { calls_left_ = n; }
    // Counts one call; true once the network is broken.
    bool trip() {
        if (broken_) return true;
        if (calls_left_ > 0 && --calls_left_ == 0) broken_ = true;
        return broken_;
    }

    std::size_t messages() const { return messages_; }
    std::size_t bytes() const { return bytes_; }

private:
    struct Queue {
        std::vector<std::vector<unsigned char>> messages;
    };
    Queue& queue(int src, int dst) { return queues_[static_cast<std::size_t>(src * n_ + dst)]; }

    int n_;
    std::vector<Queue> queues_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::size_t messages_ = 0, bytes_ = 0;
    std::atomic<long> calls_left_{0};
    std::atomic<bool> broken_{false};
};

class FakeTransport final : public topoar::Transport {
public:
    FakeTransport(FakeNetwork& net, int rank)
        : net_(net), rank_(rank), next_recv_(static_cast<std::size_t>(net.size()), 0) {}

    topoar::Status isend(const void* buf, std::size_t bytes, int peer, Request* req) override {
        if (peer < 0 || peer >= net_.size() || peer == rank_) return topoar::Status::invalid("bad peer");
        if (net_.trip()) return broken();
        net_.post(rank_, peer, buf, bytes);
        *req = nullptr;
        return topoar::Status::ok();
    }
    topoar::Status irecv(void* buf, std::size_t bytes, int peer, Request* req) override {
        if (peer < 0 || peer >= net_.size() || peer == rank_) return topoar::Status::invalid("bad peer");
        if (net_.trip()) return broken();
        auto* r = new Pending{peer, next_recv_[static_cast<std::size_t>(peer)]++, buf, bytes};
        *req = r;
        ++outstanding_;
        return topoar::Status::ok();
    }
    topoar::Status wait(Request* req) override {
        auto* r = static_cast<Pending*>(*req);
        *req = nullptr;
        if (!r) return topoar::Status::ok();  // a send
        std::unique_ptr<Pending> owned(r);
        --outstanding_;
        if (!net_.take(r->peer, rank_, r->seq, r->buf, r->bytes))
            return topoar::Status(topoar::Code::transport_error, "message size mismatch (truncation)");
        return topoar::Status::ok();
    }
    topoar::Status test(Request* req, bool* done) override {
        auto* r = static_cast<Pending*>(*req);
        if (net_.trip()) {  // a failed test ends the request (Transport's contract)
            delete r;
            *req = nullptr;
            if (r) --outstanding_;
            return broken();
        }
        if (!r) {  // a send: buffered, complete
            *done = true;
            return topoar::Status::ok();
        }
        if (!net_.try_take(r->peer, rank_, r->seq, r->buf, r->bytes, done)) {
            *done = true;
            delete r;
            *req = nullptr;
            --outstanding_;
            return topoar::Status(topoar::Code::transport_error, "message size mismatch (truncation)");
        }
        if (*done) {
            delete r;
            *req = nullptr;
            --outstanding_;
        } else {
            std::this_thread::yield();
        }
        return topoar::Status::ok();
    }
    topoar::Status cancel(Request* req) override {
        auto* r = static_cast<Pending*>(*req);
        *req = nullptr;
        if (r) {
            delete r;
            --outstanding_;
        }
        ++cancelled_;
        return topoar::Status::ok();
    }
    // Receives posted and not finished (sends complete at once).
    int outstanding() const { return outstanding_; }
    int cancelled() const { return cancelled_; }

private:
    struct Pending {
        int peer;
        std::size_t seq;
        void* buf;
        std::size_t bytes;
    };
    FakeNetwork& net_;
    int rank_;
    std::vector<std::size_t> next_recv_;
    int outstanding_ = 0, cancelled_ = 0;

    static topoar::Status broken() {
        return topoar::Status(topoar::Code::transport_error, "fake network broken (injected)");
    }
};

}  // namespace topoar_test
