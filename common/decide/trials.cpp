// Measured choice for small messages (trials.hpp).
#include "decide/trials.hpp"

#include "decide/route.h"

#include <algorithm>

namespace topoar {

std::string contender_name(const Contender& c) {
    return c.hand_down ? "previous module" : algorithm_name(c.algorithm);
}

void SizeTrials::configure(int samples, std::size_t max_bytes) {
    samples_ = std::max(0, samples);
    max_bytes_ = max_bytes;
    reset();
}

void SizeTrials::reset() {
    for (Class& c : classes_) c = Class{};
}

int SizeTrials::size_class(std::size_t bytes) {
    static_assert(sizeof(unsigned long long) * 8 == kClasses, "one class per bit of a size");
    return topoar_size_class(bytes);  // decide/route.h: the glue's log uses the same
}

long SizeTrials::total_calls(const Class& c) const {
    const long per_block = kBlock - 1;  // timed calls per turn
    const long rounds = (samples_ + per_block - 1) / per_block;
    return rounds * static_cast<long>(c.who.size()) * kBlock;
}

SizeTrials::Turn SizeTrials::next(std::size_t bytes, const Contender* contenders, int n) {
    Turn t;
    t.cls = size_class(bytes);
    Class& c = classes_[idx(t.cls)];
    if (c.who.empty()) {
        c.who.assign(contenders, contenders + std::max(0, n));
        c.samples.assign(c.who.size(), {});
        if (c.who.size() < 2) c.winner = 0;  // nothing to compare
    }
    if (c.winner >= 0) {
        t.index = c.winner;
        t.decided = true;
        t.who = c.who[idx(c.winner)];
        return t;
    }
    const long turns = static_cast<long>(c.who.size());
    const long call = c.calls++;
    t.index = static_cast<int>((call / kBlock) % turns);
    t.timed = call % kBlock != 0;
    t.last = c.calls == total_calls(c);
    t.who = c.who[idx(t.index)];
    return t;
}

void SizeTrials::record(const Turn& t, double seconds) {
    if (!t.timed || t.cls < 0 || t.cls >= kClasses) return;
    Class& c = classes_[idx(t.cls)];
    if (t.index < 0 || idx(t.index) >= c.samples.size()) return;
    auto& s = c.samples[idx(t.index)];
    if (static_cast<int>(s.size()) < samples_) s.push_back(seconds);
}

std::vector<double> SizeTrials::means(int cls) const {
    const Class& c = classes_[idx(cls)];
    std::vector<double> out;
    for (const std::vector<double>& s : c.samples) {
        double sum = 0;
        for (double v : s) sum += v;
        out.push_back(s.empty() ? 0 : sum / static_cast<double>(s.size()));
    }
    return out;
}

int SizeTrials::settle(int cls, const std::vector<double>& pooled) {
    Class& c = classes_[idx(cls)];
    int best = 0;
    for (std::size_t i = 1; i < pooled.size() && i < c.who.size(); ++i)
        if (pooled[i] < pooled[idx(best)]) best = static_cast<int>(i);
    if (best != 0 && !pooled.empty() && pooled[0] <= pooled[idx(best)] * (1 + kKeep)) best = 0;
    c.winner = best;
    c.samples.clear();
    return best;
}

}  // namespace topoar
