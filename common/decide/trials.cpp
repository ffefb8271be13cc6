// Measured choice for small messages (trials.hpp).
#include "decide/trials.hpp"

#include "decide/route.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace topoar {

std::string contender_name(const Contender& c) {
    return c.hand_down ? "previous module" : algorithm_name(c.algorithm);
}

void SizeTrials::configure(int samples, std::size_t max_bytes, bool watch) {
    samples_ = std::max(0, samples);
    max_bytes_ = max_bytes;
    watch_ = watch;
    reset();
}

void SizeTrials::reset() {
    for (Class& c : classes_) c = Class{};
}

int SizeTrials::size_class(std::size_t bytes) {
    static_assert(sizeof(unsigned long long) * 8 == kClasses, "one class per bit of a size");
    return topoar_size_class(bytes);  // decide/route.h: the glue's log uses the same
}

int SizeTrials::total_rounds() const {
    const int per_block = kBlock - 1;  // timed calls per turn
    return (samples_ + per_block - 1) / per_block;
}

SizeTrials::Turn SizeTrials::next(std::size_t bytes, const Contender* contenders, int n) {
    Turn t;
    t.cls = size_class(bytes);
    Class& c = classes_[idx(t.cls)];
    if (c.who.empty()) {
        c.who.assign(contenders, contenders + std::max(0, n));
        c.samples.assign(c.who.size(), {});
        c.in.clear();
        for (int i = 0; i < static_cast<int>(c.who.size()); ++i) c.in.push_back(i);
        if (c.who.size() < 2) c.winner = 0;  // nothing to compare
    }
    if (c.winner >= 0) {
        t.index = c.winner;
        t.decided = true;
        t.who = c.who[idx(c.winner)];
        if (c.watching >= 0) {
            const long call = c.watch_calls++;
            t.watched = true;
            t.timed = call >= kWatchSkip;
            t.agree = call == kWatchSkip + kWatch - 1;
        }
        return t;
    }
    const long call = c.round_calls++;
    t.index = c.in[static_cast<std::size_t>(call / kBlock)];
    t.timed = call % kBlock != 0;
    t.agree = c.round_calls == static_cast<long>(c.in.size()) * kBlock;
    if (t.agree) {
        c.round_calls = 0;
        ++c.rounds;
        t.last = c.rounds >= total_rounds();
    }
    t.who = c.who[idx(t.index)];
    return t;
}

void SizeTrials::record(const Turn& t, double seconds) {
    if (!t.timed || t.cls < 0 || t.cls >= kClasses) return;
    Class& c = classes_[idx(t.cls)];
    if (t.watched) {
        // Only the watched contender's own calls (a call it could not run
        // went to the table's choice: Selection::contest_turn).
        if (t.index == c.watching) {
            c.window_sum += seconds;
            ++c.window_n;
        }
        return;
    }
    if (t.index < 0 || idx(t.index) >= c.samples.size()) return;
    auto& s = c.samples[idx(t.index)];
    if (static_cast<int>(s.size()) < samples_) s.push_back(seconds);
}

std::vector<double> SizeTrials::medians(int cls) const {
    const Class& c = classes_[idx(cls)];
    std::vector<double> out;
    for (std::vector<double> s : c.samples) {  // a copy: sorted here
        if (s.empty()) {
            out.push_back(std::numeric_limits<double>::infinity());
            continue;
        }
        std::sort(s.begin(), s.end());
        const std::size_t h = s.size() / 2;
        out.push_back(s.size() % 2 ? s[h] : (s[h - 1] + s[h]) / 2);
    }
    return out;
}

bool SizeTrials::active(int cls, int index) const {
    const std::vector<int>& in = classes_[idx(cls)].in;
    return std::find(in.begin(), in.end(), index) != in.end();
}

double SizeTrials::drop_margin(int round) {
    return round <= 1 ? 0.30 : round == 2 ? 0.20 : kKeep;
}

int SizeTrials::prune(int cls, const std::vector<double>& pooled) {
    Class& c = classes_[idx(cls)];
    double best = std::numeric_limits<double>::infinity();
    for (int i : c.in)
        if (idx(i) < pooled.size()) best = std::min(best, pooled[idx(i)]);
    const double margin = drop_margin(c.rounds);
    std::vector<int> kept;
    for (int i : c.in)
        if (idx(i) < pooled.size() && pooled[idx(i)] <= best * (1 + margin)) kept.push_back(i);
    if (!kept.empty()) c.in = kept;
    if (c.in.size() == 1) {
        c.winner = c.in[0];
        c.samples.clear();
    }
    return c.winner;
}

bool SizeTrials::close_enough(int cls, const std::vector<double>& pooled) const {
    const Class& c = classes_[idx(cls)];
    if (c.winner >= 0 || c.rounds < kCloseRounds || c.in.size() < 2) return false;
    double best = std::numeric_limits<double>::infinity(), worst = 0;
    for (int i : c.in) {
        if (idx(i) >= pooled.size() || !std::isfinite(pooled[idx(i)])) return false;
        best = std::min(best, pooled[idx(i)]);
        worst = std::max(worst, pooled[idx(i)]);
    }
    return worst <= best * (1 + kClose);
}

void SizeTrials::decide_class(int cls, const std::vector<Contender>& who, int winner) {
    if (cls < 0 || cls >= kClasses || who.empty() || winner < 0 || winner >= static_cast<int>(who.size())) return;
    Class& c = classes_[idx(cls)];
    if (!c.who.empty()) return;
    c.who = who;
    c.in.assign(1, winner);
    c.winner = winner;
}

std::vector<double> SizeTrials::means(int cls) const {
    const Class& c = classes_[idx(cls)];
    std::vector<double> out;
    for (const std::vector<double>& s : c.samples) {
        double sum = 0;
        for (double v : s) sum += v;
        // A contender with no timed call (every call of the class kept it
        // out: PairCaps::previous_differs) never wins: +inf, also
        // once pooled.
        out.push_back(s.empty() ? std::numeric_limits<double>::infinity() : sum / static_cast<double>(s.size()));
    }
    return out;
}

int SizeTrials::settle(int cls, const std::vector<double>& pooled) {
    Class& c = classes_[idx(cls)];
    int best = c.in.empty() ? 0 : c.in[0];
    for (int i : c.in)
        if (idx(i) < pooled.size() && pooled[idx(i)] < pooled[idx(best)]) best = i;
    // The table's choice (contender 0), if still in, keeps the class unless
    // beaten by more than kKeep.
    if (best != 0 && active(cls, 0) && !pooled.empty() && pooled[0] <= pooled[idx(best)] * (1 + kKeep)) best = 0;
    c.winner = best;
    c.samples.clear();
    return best;
}

void SizeTrials::begin_watch(int cls, const std::vector<double>& pooled) {
    Class& c = classes_[idx(cls)];
    if (!watch_ || c.winner < 0 || c.who.size() < 2) return;
    const double inf = std::numeric_limits<double>::infinity();
    c.contest.assign(c.who.size(), inf);
    for (std::size_t i = 0; i < c.who.size() && i < pooled.size(); ++i)
        if (std::isfinite(pooled[i]) && pooled[i] > 0) c.contest[i] = pooled[i];
    c.watched.assign(c.who.size(), inf);
    c.contest_winner = c.winner;
    c.watching = c.winner;
    open_window(c);
}

void SizeTrials::open_window(Class& c) {
    c.watch_calls = 0;
    c.window_sum = 0;
    c.window_n = 0;
}

double SizeTrials::window_mean(int cls) const {
    const Class& c = classes_[idx(cls)];
    return c.window_n > 0 ? c.window_sum / c.window_n : std::numeric_limits<double>::infinity();
}

namespace {
// A contender's entry of a per-contender vector; +infinity where it has none.
double entry_or_inf(const std::vector<double>& v, int index) {
    return index >= 0 && static_cast<std::size_t>(index) < v.size() ? v[static_cast<std::size_t>(index)]
                                                                     : std::numeric_limits<double>::infinity();
}
}  // namespace

double SizeTrials::contest_mean(int cls, int index) const { return entry_or_inf(classes_[idx(cls)].contest, index); }

double SizeTrials::watched_mean(int cls, int index) const { return entry_or_inf(classes_[idx(cls)].watched, index); }

int SizeTrials::end_window(int cls, double pooled) {
    Class& c = classes_[idx(cls)];
    const int w = c.watching;
    if (w < 0) return c.winner;
    open_window(c);  // the next window's, if another contender gets one
    c.watched[idx(w)] = pooled;
    // No timed call anywhere, or the contest's winner ran as in its
    // contest: the watch ends.
    if (!std::isfinite(pooled) || (w == c.contest_winner && pooled <= c.contest[idx(w)] * (1 + kDrift))) {
        c.watching = -1;
        return c.winner;
    }
    // A contender not watched yet runs a window only where even its
    // contest mean (taken in short blocks, on the fast side) beats the
    // fastest watched mean so far by more than kKeep; the lowest such
    // contest mean first.
    double best = std::numeric_limits<double>::infinity();
    for (double v : c.watched) best = std::min(best, v);
    int next = -1;
    for (std::size_t i = 0; i < c.who.size(); ++i) {
        if (std::isfinite(c.watched[i]) || !std::isfinite(c.contest[i])) continue;
        if (c.contest[i] * (1 + kKeep) >= best) continue;
        if (next < 0 || c.contest[i] < c.contest[idx(next)]) next = static_cast<int>(i);
    }
    if (next >= 0) {
        c.watching = next;
        c.winner = next;
        return next;
    }
    // Every promising contender has a window: the fastest watched, the
    // contest's winner kept unless beaten by more than kKeep.
    int pick = c.contest_winner;
    for (std::size_t i = 0; i < c.watched.size(); ++i)
        if (c.watched[i] < c.watched[idx(pick)]) pick = static_cast<int>(i);
    if (c.watched[idx(c.contest_winner)] <= c.watched[idx(pick)] * (1 + kKeep)) pick = c.contest_winner;
    c.winner = pick;
    c.watching = -1;
    return pick;
}

}  // namespace topoar
