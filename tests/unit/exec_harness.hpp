// Runs every rank's schedule of a planner in its own thread over the
// in-process fake PML (fake_transport.hpp), for the planners' tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "exec/executor.hpp"
#include "fake_transport.hpp"
#include "plan/plan.hpp"

// cmocka's failure report, declared as cmocka.h does (including cmocka.h
// here would put its fail() macro ahead of the standard headers a test
// includes afterwards).
extern "C" void _fail(const char* const file, const int line);
extern "C" void print_error(const char* const format, ...);

namespace topoar_test {

template <typename T>
class SumReducer final : public topoar::Reducer {
public:
    void reduce(const void* in, void* inout, std::size_t count) override {
        const T* a = static_cast<const T*>(in);
        T* b = static_cast<T*>(inout);
        for (std::size_t i = 0; i < count; ++i) b[i] = a[i] + b[i];
    }
};

// Non-commutative: result = in * 1000003 + inout (mod 2^64).  Every rank
// ends with the same value only if all evaluate one expression tree.
class OrderedReducer final : public topoar::Reducer {
public:
    void reduce(const void* in, void* inout, std::size_t count) override {
        const std::uint64_t* a = static_cast<const std::uint64_t*>(in);
        std::uint64_t* b = static_cast<std::uint64_t*>(inout);
        for (std::size_t i = 0; i < count; ++i) b[i] = a[i] * 1000003u + b[i];
    }
};

// Each rank r builds its plan with make(r, &plan) and runs its schedule on
// bufs[r] (input in, result out).  Returns one message per failed rank
// ("rank R: ...") so the caller can fail with it.
template <typename T>
std::vector<std::string> run_ranks(const std::function<topoar::Status(int, topoar::Plan*)>& make,
                                   std::vector<std::vector<T>>& bufs, topoar::Reducer& reducer,
                                   std::size_t segment_elems) {
    const int p = static_cast<int>(bufs.size());
    FakeNetwork net(p);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            std::string& err = errors[static_cast<std::size_t>(r)];
            topoar::Plan plan;
            topoar::Status s = make(r, &plan);
            if (!s) {
                err = s.message();
                return;
            }
            FakeTransport t(net, r);
            topoar::Executor ex;
            s = ex.run(plan.of(r), bufs[static_cast<std::size_t>(r)].data(), nullptr, sizeof(T), segment_elems, t,
                       reducer);
            if (!s) err = s.message();
            else if (t.outstanding() != 0) err = "requests left outstanding";
        });
    for (auto& t : threads) t.join();
    std::vector<std::string> failed;
    for (int r = 0; r < p; ++r)
        if (!errors[static_cast<std::size_t>(r)].empty())
            failed.push_back("rank " + std::to_string(r) + ": " + errors[static_cast<std::size_t>(r)]);
    return failed;
}

// The planners' tests: every rank plans its own schedule with make(r) (a
// planner that cannot fail) and runs it in a thread; the first failed rank
// fails the test.
template <typename T>
void run_all(const std::function<topoar::Plan(int)>& make, std::vector<std::vector<T>>& bufs,
             topoar::Reducer& reducer, std::size_t segment_elems) {
    auto plan_rank = [&](int r, topoar::Plan* plan) {
        *plan = make(r);
        return topoar::Status::ok();
    };
    auto failed = run_ranks<T>(plan_rank, bufs, reducer, segment_elems);
    if (!failed.empty()) {
        print_error("ERROR: %s\n", failed[0].c_str());
        _fail(__FILE__, __LINE__);
    }
}

}  // namespace topoar_test
