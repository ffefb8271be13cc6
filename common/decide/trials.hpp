// topoar engine: measured choice for small messages (coll_topoar_trial_calls).
//
// The cost model knows links, not CPUs.  Where a message's software cost
// and the scheduling of processes that share cores outweigh the wire, its
// ranking of small-message plans, and of topoar against the module it sits
// on, can be off by 10-40 % (docs/performance.md, "Small messages across
// hosts").  So for auto's host calls across hosts of at most
// trial_max_size bytes, the first calls of each power-of-two size class are
// a contest: the table's choice, the previous module (tuned) and the
// latency algorithm take turns in blocks, the calls are timed, then the
// ranks pool their mean times (one allgather of a few numbers) and the
// fastest runs that class from then on.  Means, not medians: what a
// program sees is the average call, and on shared cores the occasional
// stalled call is part of it (medians picked the latency algorithm where
// whole-job averages favoured tuned).
//
//   one size class, 3 contenders, blocks of kBlock = 4 calls:
//
//     call:   0-3      4-7      8-11     12-15 ...           (rounds x 3 x 4)
//     turn:   A A A A  P P P P  L L L L  A A A A ...  -> agree -> winner
//     timed:  - x x x  - x x x  - x x x  - x x x ...
//
//   a round is one block of every contender still in; after each round
//   the ranks pool their medians and means (one allgather) and
//     - drop a contender whose pooled median is more than drop_margin(r)
//       above the best after round r: 30 % after the first round, 20 %
//       after the second, 10 % (kKeep) from the third on (a sequential
//       test: the more samples, the smaller a gap that counts as
//       evidence), so a clear loser costs one block, a moderate one two;
//     - settle, on means, once every contender still in lies within kClose
//       (= kKeep) of the best by medians after at least kCloseRounds = 3
//       rounds: with the third round's margin that is always the case
//       then, so a contest lasts three rounds at most (or trial_calls
//       timed calls each, if fewer); a gap under 10 % is inside this
//       machine's job-to-job noise and was not resolved by 24 calls
//       either (docs/performance.md), and kKeep still guards the table's
//       choice at the settle;
//   One contender left wins at once.  So a short job or a communicator with
//   few calls per size pays one to three rounds (at most 36 calls with
//   three contenders), not ~100 mixed calls.
//   Medians for dropping: three calls a contender, one of them stalled,
//   must not drop the best.
//
//   the winner watched (coll_topoar_trial_watch): a contest's blocks are
//   short and interleaved, and what a network did for a few calls after a
//   pause need not be what it does for calls back to back: a link's token
//   bucket or buffer refills while the other contenders run, so the
//   contender that moves the most bytes can look fastest and then run
//   1.5-2x slower alone (1+1+1 hosts at 200 Mbit/s, 4 KiB: the latency
//   algorithm 104-133 us in its contest, 182-250 after it;
//   docs/performance.md).  So after the contest the winner's calls are
//   watched: kWatchSkip calls untimed (what it alone does to the network
//   settles), then kWatch timed, their mean pooled (one allgather).
//     - within kDrift of its contest mean: it keeps the class, the watch
//       ends (the usual case: one allgather);
//     - else a contender whose contest mean (taken in the same short
//       blocks, so on the fast side) beats the fastest watched mean so
//       far by more than kKeep gets a window the same way, the lowest
//       contest mean first, and so on: each contender at most one
//       window; then the lowest watched mean runs the class, the
//       contest's winner kept unless beaten by more than kKeep.
//   Contenders dropped in an early round count with the mean of the calls
//   they ran.  A class that starts decided (an outcome kept) is not
//   watched again.
//
//   the first call of a block is not timed: it inherits the arrival skew
//   the previous contender left (a leader algorithm releases its leaders
//   first, a recursive doubling everyone at once), and its first use of a
//   plan pays for building it.
//
// Every call of a result is computed by one contender on all ranks: the
// turn depends only on how many calls of the class came before, which is
// the same on every rank (allreduce is collective and the ranks' byte
// counts match), so the ranks take the same turn and reach the agreement at
// the same call.  A pure state machine: no MPI, no clock (the caller times).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "core/algorithm.hpp"

namespace topoar {

// One contender: a topoar algorithm, or the previous module.
struct Contender {
    bool hand_down = false;
    Algorithm algorithm = Algorithm::automatic;
    bool operator==(const Contender& o) const { return hand_down == o.hand_down && algorithm == o.algorithm; }
};
std::string contender_name(const Contender& c);  // "tree", "previous module"

class SizeTrials {
public:
    static constexpr int kBlock = 4;         // calls per turn; the first is not timed
    static constexpr double kKeep = 0.10;    // the first contender keeps the class unless beaten by more than 10 %
    static constexpr double kClose = kKeep;  // all within 10 % (medians) after kCloseRounds rounds: settle
    static constexpr int kCloseRounds = 3;
    // After round r (1-based), a contender whose pooled median lies more
    // than this above the best is dropped: 0.30, 0.20, then kKeep.
    static double drop_margin(int round);
    static constexpr int kClasses = 64;
    // The watch after a contest: calls untimed, then timed and pooled per
    // window; a winner whose window ran more than kDrift above its contest
    // mean lets the others run a window each.
    static constexpr int kWatchSkip = 16;
    static constexpr int kWatch = 16;
    static constexpr double kDrift = 0.20;

    // samples: timed calls per contender (0: no trials); max_bytes: the
    // largest call size that has them; watch: the winner watched after
    // its contest.
    void configure(int samples, std::size_t max_bytes, bool watch = true);
    int samples() const { return samples_; }
    bool covers(std::size_t bytes) const { return samples_ > 0 && bytes > 0 && bytes <= max_bytes_; }
    static int size_class(std::size_t bytes);  // floor(log2(bytes)), 0 for 0 and 1

    // This call's turn.  `contenders` (the first is the table's choice, the
    // one kept on a tie) is taken when the class is new and ignored later.
    struct Turn {
        int cls = -1;
        int index = -1;        // into the class's contenders
        bool timed = false;    // record() wants this call's time
        bool decided = false;  // the class has a winner: no more trial
        bool agree = false;    // a round's last call: after record(), the ranks
                               // pool what they measured (Engine::note_trial)
                               // and call prune(), or settle() when `last`
        bool last = false;     // the contest's last call (agree is set too)
        bool watched = false;  // decided, and the class's contender still watched:
                               // `timed` in its window, `agree` at the window's
                               // last call (pool the window_mean(), end_window())
        Contender who;
    };
    Turn next(std::size_t bytes, const Contender* contenders, int n);
    Turn next(std::size_t bytes, const std::vector<Contender>& contenders) {
        return next(bytes, contenders.data(), static_cast<int>(contenders.size()));
    }
    // Stores a timed call's seconds (ignored for an untimed turn).
    void record(const Turn& t, double seconds);
    // Each contender's mean of its timed calls (after the last turn);
    // +infinity for one that had none.
    std::vector<double> means(int cls) const;
    // The same with medians (after an earlier round).
    std::vector<double> medians(int cls) const;
    // After a round that was not the last: pooled medians (every rank's
    // summed); drops the contenders more than drop_margin(rounds so far)
    // above the best of those still in.  Returns the winner's index when
    // one is left, else -1.
    int prune(int cls, const std::vector<double>& pooled);
    // After prune() left several: true when the class may settle now
    // (every contender still in within kClose of the best by the pooled
    // medians, after at least kCloseRounds rounds).
    bool close_enough(int cls, const std::vector<double>& pooled) const;
    // Rounds completed in the class's contest.
    int rounds(int cls) const { return classes_[idx(cls)].rounds; }
    // Still in the contest (all until a prune drops some).
    bool active(int cls, int index) const;
    // pooled: every rank's means summed (the same numbers on every rank);
    // returns the winner's index among those still in, which later turns
    // of the class run.
    int settle(int cls, const std::vector<double>& pooled);
    // After settle() or prune() decided a class: its winner is watched
    // (when configured so), `pooled` each contender's pooled mean in the
    // contest (+infinity: no timed call), in the units end_window() gets.
    void begin_watch(int cls, const std::vector<double>& pooled);
    bool watching(int cls) const { return classes_[idx(cls)].watching >= 0; }
    // This rank's mean of the current window's timed calls (+infinity: none).
    double window_mean(int cls) const;
    // At a watched turn with agree: the window's pooled mean (the same on
    // every rank).  Returns the contender that runs the class from now on
    // (another's window next while watching() stays true).
    int end_window(int cls, double pooled);
    // A contender's pooled contest mean and watched mean (+infinity: none).
    double contest_mean(int cls, int index) const;
    double watched_mean(int cls, int index) const;
    // The contest's own winner (before any watch; -1: not decided by a contest).
    int contest_winner(int cls) const { return classes_[idx(cls)].contest_winner; }
    const std::vector<Contender>& contenders(int cls) const { return classes_[idx(cls)].who; }
    int winner(int cls) const { return classes_[idx(cls)].winner; }
    // The class starts decided: contenders `who`, `winner` runs every call
    // (an outcome the ranks agreed on at set-up, engine/outcome_store.hpp).
    // Ignored for a class already started or a bad winner.
    void decide_class(int cls, const std::vector<Contender>& who, int winner);
    // Forget every class (the table or the network changed).
    void reset();

private:
    struct Class {
        std::vector<Contender> who;
        std::vector<std::vector<double>> samples;
        std::vector<int> in;  // indices still in, in turn order
        long round_calls = 0; // calls of the current round so far
        int rounds = 0;       // rounds completed
        int winner = -1;
        // The watch (begin_watch): the contender watched (-1: none), calls
        // of its window so far, this rank's timed seconds in it, and each
        // contender's pooled contest and watched means.
        int watching = -1;
        int contest_winner = -1;
        long watch_calls = 0;
        double window_sum = 0;
        int window_n = 0;
        std::vector<double> contest, watched;
    };
    static std::size_t idx(int cls) { return static_cast<std::size_t>(cls); }
    // A window of the watch starts: no call, no time yet.
    static void open_window(Class& c);
    int total_rounds() const;
    int samples_ = 0;
    std::size_t max_bytes_ = 0;
    bool watch_ = true;
    std::array<Class, kClasses> classes_{};
};

}  // namespace topoar
