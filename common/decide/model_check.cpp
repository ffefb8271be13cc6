// The model's choice for large messages, checked by the calls (model_check.hpp).
#include "decide/model_check.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "decide/decision.hpp"
#include "decide/route.h"

namespace topoar {

namespace {
// Seconds per byte as MB/s, rounded to 0.1 (verbose output).
double mb_per_s(double per_byte) {
    return per_byte > 0 ? std::round(1e-5 / per_byte) / 10 : 0;
}

// The start of a size class's verbose line: "model check, allreduce of 8M-16M: ".
std::string heading(int cls) {
    const std::size_t lo = std::size_t(1) << cls;
    return "model check, allreduce of " + format_size(lo) + "-" + format_size(2 * lo) + ": ";
}
}  // namespace

void ModelCheck::configure(bool on, std::size_t min_bytes) {
    on_ = on;
    min_bytes_ = std::max<std::size_t>(1, min_bytes);
    reset();
}

void ModelCheck::reset() {
    for (Class& c : classes_) c = Class{};
}

int ModelCheck::size_class(std::size_t bytes) { return topoar_size_class(bytes); }

ModelCheck::Turn ModelCheck::next(std::size_t bytes, Algorithm choice, bool previous_ok) {
    Turn t;
    if (!covers(bytes)) return t;
    t.cls = size_class(bytes);
    Class& c = classes_[idx(t.cls)];
    if (c.tried.empty()) c.tried.assign(1, choice);
    if (c.winner != Algorithm::automatic) {
        t.algorithm = c.winner;
        t.decided = true;
        t.previous = c.previous_won && previous_ok;
        // Watched until opened again once: the first call after the
        // decision not timed (it may switch back to a plan run earlier),
        // then windows of kWatch timed calls.
        if (!c.reopened && c.held_to > 0) {
            t.watched = true;
            const int k = c.watch_calls++;
            t.timed = k > 0;
            t.pool = t.timed && k % kWatch == 0;
        }
        return t;
    }
    if (c.previous == 1) {
        // The previous module's turn; a call it may not run takes the
        // fastest plan, untimed, and the turn goes on at the next call.
        t.algorithm = c.tried[c.best];
        if (!previous_ok) return t;
        t.previous = true;
        // Its window as a plan's (a first call to warm up, then
        // kSamples timed), its first timed call also pooled alone (kAbort).
        const int k = c.in_plan++;
        t.timed = k > 0;
        t.pool = k == 1 || k == kSamples;
        return t;
    }
    t.algorithm = c.tried.back();
    // A plan's first call warms it up (connections, pages, plans); the
    // next kSamples are timed, and the last of them pools.
    const int k = c.in_plan++;
    t.timed = k > 0;
    t.pool = k == kSamples;
    return t;
}

double ModelCheck::sample(const Turn& t, double per_byte) {
    if (t.cls < 0 || !t.timed) return per_byte;
    Class& c = classes_[idx(t.cls)];
    if (t.decided) {
        c.watch_sum += per_byte;
        return c.watch_sum / ++c.watch_samples;
    }
    c.sum += per_byte;
    return c.sum / ++c.samples;
}

bool ModelCheck::extend(const Turn& t) {
    if (t.cls < 0 || t.decided || !t.pool) return false;
    Class& c = classes_[idx(t.cls)];
    if (c.extended || c.tried.size() != 1) return false;
    c.extended = true;
    c.in_plan = kSamples;  // the next call pools again
    return true;
}

void ModelCheck::start_window(Class& c) {
    c.in_plan = 0;
    c.samples = 0;
    c.sum = 0;
}

void ModelCheck::ran_at(std::ostream& os, int cls, const Class& c) {
    os << heading(cls) << "ran at (MB/s)";
    for (std::size_t i = 0; i < c.measured.size(); ++i)
        os << (i ? ", " : " ") << algorithm_name(c.tried[i]) << " " << mb_per_s(c.measured[i]);
}

bool ModelCheck::window_behind(const Class& c, double per_byte) {
    return c.held_to > 0 && per_byte > (1 + kOwn) * c.held_to;
}

bool ModelCheck::falls_behind(const Turn& t, double per_byte) const {
    if (t.cls < 0 || !t.decided || !t.pool) return false;
    const Class& c = classes_[idx(t.cls)];
    return !c.reopened && c.behind_before > 0 && window_behind(c, per_byte);
}

double ModelCheck::reopen(const Turn& t, double per_byte, std::string* line) {
    line->clear();
    if (!falls_behind(t, per_byte)) return per_byte;
    Class& c = classes_[idx(t.cls)];
    const double mean = (per_byte + c.behind_before) / 2;  // two windows of kWatch
    std::ostringstream os;
    os << heading(t.cls) << algorithm_name(c.winner) << "'s later calls ran at " << mb_per_s(mean) << " MB/s (the mean of "
       << 2 * c.watch_samples << " calls and of the ranks; two windows in a row), more than "
       << static_cast<int>(kOwn * 100 + 0.5) << " % slower than its prediction (" << mb_per_s(c.held_to)
       << " MB/s), which its window met: checked again\n";
    *line = os.str();
    // The plan as if it were the choice and had run its later mean; the
    // plans run before are not run again.
    for (Algorithm a : c.tried)
        if (a != c.winner) c.before.push_back(a);
    c.tried.assign(1, c.winner);
    c.measured.clear();
    c.own.clear();
    c.winner = Algorithm::automatic;
    c.reopened = true;
    c.extended = true;
    c.samples = 2 * c.watch_samples;
    return mean;
}

namespace {
// Plans whose layout weighs ranks by the measured link bandwidths.
bool weighs_links(Algorithm a) { return a == Algorithm::flexreduce || a == Algorithm::flexrelay; }
}  // namespace

Algorithm ModelCheck::note(const Turn& t, double per_byte, double own_predicted,
                           const std::vector<Algorithm>& candidates, const std::vector<double>& predicted_per_byte,
                           std::string* line, bool previous_allowed) {
    line->clear();
    if (t.cls < 0 || !t.pool) return t.algorithm;
    Class& c = classes_[idx(t.cls)];
    if (t.decided && c.winner != Algorithm::automatic) {
        // Not opened again (reopen): the next window, which opens the
        // class only if this one fell behind too.
        c.behind_before = window_behind(c, per_byte) ? per_byte : 0;
        c.watch_samples = 0;
        c.watch_sum = 0;
        return c.winner;
    }
    if (c.winner != Algorithm::automatic) return c.winner;
    std::ostringstream os;
    if (c.previous == 1) {
        if (!t.previous) return c.tried[c.best];
        const bool first = c.samples == 1 && kSamples > 1;
        if (first && per_byte <= kAbort * c.measured[c.best]) return c.winner;  // not far behind: its window goes on
        // Its window, or its first call far behind the fastest plan: it
        // takes the class if it beat that plan by more than kWin.  Not
        // watched either way.
        c.previous = 2;
        c.previous_won = !first && per_byte < (1 - kWin) * c.measured[c.best];
        c.winner = c.tried[c.best];
        c.held_to = 0;
        os << heading(t.cls) << "the previous module ran at " << mb_per_s(per_byte) << " MB/s";
        if (first) os << " (its first timed call, more than " << kAbort << "x slower: no more of its calls)";
        os << ", " << algorithm_name(c.winner) << " at " << mb_per_s(c.measured[c.best]) << ": "
           << (c.previous_won ? "the previous module" : algorithm_name(c.winner)) << " from now on\n";
        *line = os.str();
        return c.winner;
    }
    c.measured.push_back(per_byte);
    c.own.push_back(own_predicted);
    // The fastest measured so far; A keeps the class unless beaten by kWin.
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.measured.size(); ++i)
        if (c.measured[i] < c.measured[best] && c.measured[i] < (1 - kWin) * c.measured[0]) best = i;
    const double best_measured = c.measured[best];
    // The next plan worth a call: not run yet, predicted faster than the
    // best measured by more than kGain (the fastest such prediction).
    // Only where the model was wrong about the choice itself: one that ran
    // within kOwn (about the model's own error on the emulated clusters) of
    // its prediction keeps the class at once (the table ranked it with the
    // same model, and a plan it favours less is no safer bet than the one
    // it ran as predicted).
    const bool as_predicted = c.measured.size() == 1 && own_predicted > 0 && per_byte <= (1 + kOwn) * own_predicted;
    // An alternative that ran as far from its own prediction as the choice
    // did from its, and no faster than the best: the model is wrong about
    // the network (a probe that misread a link, a bottleneck it does not
    // know), not about which plan suits it, and the next plan it ranks is
    // predicted with the same error.  No more tries (on s2 with its racks
    // not found, every plan ran at half its prediction and at one speed).
    // Except where the two share their layout's input: flexreduce and
    // flexrelay both lay their shares out by the measured link bandwidths,
    // so both running slow says those measurements are wrong, and a plan
    // that does not weigh by them (tree, hring) still gets its turn (racks
    // 1+2 | 2+3 with a 64 KiB bucket and its racks not found: flexreduce
    // 12.2 MB/s, flexrelay 11.3, tree 23.4 in another job).
    const bool same_input = weighs_links(c.tried.front()) && weighs_links(t.algorithm);
    const bool network_wrong = c.measured.size() > 1 && own_predicted > 0 && !same_input &&
                               per_byte > (1 + kOwn) * own_predicted && best != c.measured.size() - 1;
    int pick = -1;
    if (!as_predicted && !network_wrong && static_cast<int>(c.tried.size()) <= kAlternatives) {
        for (std::size_t i = 0; i < candidates.size() && i < predicted_per_byte.size(); ++i) {
            const double p = predicted_per_byte[i];
            if (!(p > 0) || std::find(c.tried.begin(), c.tried.end(), candidates[i]) != c.tried.end() ||
                std::find(c.before.begin(), c.before.end(), candidates[i]) != c.before.end())
                continue;
            if ((1 + kGain) * p < best_measured &&
                (pick < 0 || p < predicted_per_byte[static_cast<std::size_t>(pick)]))
                pick = static_cast<int>(i);
        }
    }
    if (pick >= 0) {
        const Algorithm b = candidates[static_cast<std::size_t>(pick)];
        os << heading(t.cls) << algorithm_name(t.algorithm) << " ran at " << mb_per_s(per_byte)
           << " MB/s (bytes / time, the mean of "
           << c.samples << " calls and of the ranks";
        if (c.measured.size() == 1 && own_predicted > 0) os << "; predicted " << mb_per_s(own_predicted) << " MB/s";
        os << "), "
           << algorithm_name(b) << " predicted " << mb_per_s(predicted_per_byte[static_cast<std::size_t>(pick)])
           << " MB/s: its turn next\n";
        c.tried.push_back(b);
        start_window(c);
        *line = os.str();
        return b;
    }
    if (previous_allowed && c.previous == 0 && c.own[best] > 0 && c.measured[best] > kLost * c.own[best]) {
        // The model is far off for every plan run: the previous module's
        // turn (the same window), before the class is decided.
        c.previous = 1;
        c.best = best;
        start_window(c);
        ran_at(os, t.cls, c);
        os << "; " << algorithm_name(c.tried[best]) << " more than " << kLost
           << "x slower than its prediction (" << mb_per_s(c.own[best])
           << " MB/s): the previous module's turn next\n";
        *line = os.str();
        return c.tried[best];
    }
    c.winner = c.tried[best];
    // Watched only where the model was right about it (its window within
    // kOwn of its own prediction), and held to that prediction: where the
    // model was wrong about the winner too (the network, not the plan:
    // s2, unshaped links on two cores), its ranking of the others is no
    // better later, and a window's drift is the machine's noise.
    const double own_best = c.own[best];
    c.held_to = own_best > 0 && c.measured[best] <= (1 + kOwn) * own_best ? own_best : 0;
    ran_at(os, t.cls, c);
    os << ": " << algorithm_name(c.winner) << " from now on";
    if (c.reopened && best == 0 && c.tried.size() == 1)
        os << " (no plan not run before predicted faster than its later calls ran)";
    else if (c.reopened && best == 0)
        os << " (the plan that was decided)";
    else if (best == 0 && c.tried.size() == 1 && as_predicted)
        os << " (auto's table's choice, at most " << static_cast<int>(kOwn * 100 + 0.5)
           << " % slower than its prediction, " << mb_per_s(own_predicted) << " MB/s)";
    else if (best == 0 && c.tried.size() == 1)
        os << " (auto's table's choice; no other plan predicted faster than it ran)";
    else if (network_wrong)
        os << " (" << algorithm_name(t.algorithm) << " too ran more than " << static_cast<int>(kOwn * 100 + 0.5)
           << " % slower than its prediction: the network, not the plan; no more tries)";
    else if (best == 0)
        os << " (auto's table's choice)";
    os << "\n";
    *line = os.str();
    return c.winner;
}

Algorithm ModelCheck::winner(int cls) const {
    if (cls < 0 || cls >= kClasses) return Algorithm::automatic;
    return classes_[idx(cls)].winner;
}

bool ModelCheck::handed_down(int cls) const {
    if (cls < 0 || cls >= kClasses) return false;
    return classes_[idx(cls)].previous_won;
}

int ModelCheck::tried(int cls) const {
    if (cls < 0 || cls >= kClasses) return 0;
    return static_cast<int>(classes_[idx(cls)].tried.size());
}

}  // namespace topoar
