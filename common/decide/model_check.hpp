// topoar engine: the model's choice for large messages, checked by the calls
// themselves (coll_topoar_model_check).
//
// auto's table ranks large-message plans by the cost model, which knows the
// links as the probes read them and a network that carries every stream at
// its rate.  Real networks have details it does not (a shallow switch or
// token-bucket buffer, TCP with many concurrent flows, a probe that misread
// a host), and then the plan it ranked first can run 20-40 % slower than
// predicted while another would not.  A job that makes many calls of one
// size can find out at the cost of a call or two:
//
//   one size class (power of two) of auto's host calls across hosts on
//   measured links, at least adapt_min_bytes (1 MiB):
//
//     calls 1-3  the table's choice A      call 1 not timed (connections,
//                                          buffers); calls 2 and 3 timed,
//                                          their mean pooled over the ranks
//                                          at call 3
//                (A ran more than kOwn slower than its prediction: the
//                caller may extend the window by call 4 and predict the
//                plans ranked next for the call's size at its end)
//                A ran within (1 + kOwn) of its own prediction, or no other
//                plan is predicted faster than it ran by more than kGain:
//                decided, A from now on (the usual case: nothing else runs)
//     then       B, the next by prediction, 3 calls the same way (its first call
//                not timed: its connections and buffers are new too);
//                then C, at most kAlternatives plans, each only while it is
//                predicted to beat the fastest measured one by more than
//                kGain, and not after B ran as far from its prediction as
//                A did (the network, not the plan) unless A and B both lay
//                out shares by the measured links (flexreduce, flexrelay:
//                then those measurements are what is wrong)
//     then       the fastest measured, where an alternative must beat A by
//                more than kWin
//                (the fastest measured ran more than kLost x its own
//                prediction: the model does not know this machine, and
//                the previous module (tuned) gets 3 calls the same way,
//                handed down, its first timed one also pooled alone: more
//                than kAbort x slower than the fastest plan ends its turn;
//                it takes the class, handed down from then on, if its
//                window beats the fastest plan by more than kWin.  Not
//                for calls whose previous-module result could differ from
//                topoar's (PairCaps::previous_differs): those wait, and
//                run the fastest plan, in its turn and after)
//     later      the decided plan, where its window ran within kOwn of
//                its prediction, watched: its first call after the
//                decision not timed, then windows of kWatch timed calls,
//                each pooled at its end; two windows in a row each more
//                than kOwn slower than that prediction open the class
//                again, once: the plan's later mean takes the place of its
//                first window, and the plans not run before get their
//                turns as above (no more watching after that).  A plan
//                the model was wrong about already (the network, not the
//                plan) is not watched: its windows' drift is noise there.
//
// A plan's time is the mean of kSamples calls that run back to back, the
// ranks' numbers pooled once, after the last of them: one call, or one
// call right after the ranks met to pool their times, ran up to 8 % faster
// than the same plan's calls did later in the job (seed-23 shapes,
// docs/large-messages.md), and a choice measured so kept its class when it
// should not have.  So a class whose choice runs as predicted costs one
// small allgather; one where the model was wrong pays at most
// kAlternatives x (1 + kSamples) calls of plans it predicted faster than
// what A measured.  A plan's first calls can also outrun its later ones
// (seed-23 shape 1: leader's window ran 11.9 MB/s, its 100 calls 10.8 on
// average): the watch costs one small allgather per kWatch calls and,
// where the plan fell behind, one more round of tries.  Times are per
// byte (a class holds calls of up to twice one size) and pooled as the
// mean of the ranks'.
// Every rank takes the same turn: the turns depend only on how many calls
// of the class came before and on pooled numbers, the same on every rank.
// A pure state machine: no MPI, no clock, no plans (the caller passes the
// predictions).
#pragma once

#include <array>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/algorithm.hpp"

namespace topoar {

class ModelCheck {
public:
    static constexpr double kGain = 0.05;    // try B only if predicted faster than A measured by more than this
    static constexpr double kOwn = 0.05;     // A within this of its own prediction: the model was right, keep A
    static constexpr double kWin = 0.03;     // B replaces A only if measured faster by more than this
    static constexpr int kAlternatives = 2;  // at most this many plans besides A
    static constexpr int kSamples = 2;       // timed calls per plan, after its first (not timed)
    static constexpr int kWatch = 8;         // timed calls per window of a decided plan
    static constexpr int kClasses = 64;
    // The fastest plan measured ran more than this many times slower than
    // its own prediction: the previous module's turn (2+3 and 4+1 ranks on
    // unshaped links over two cores: every plan ran at a third to a fifth
    // of its prediction, tuned's 1.3-2x faster than any of them).  On s2
    // (racks, 200 Mbit/s uplinks) the plans ran 1.6-1.8x below their
    // predictions and tuned 3x slower than they: no turn there.
    static constexpr double kLost = 2.0;
    // The previous module's first timed call (after its warm-up), pooled
    // alone, ran more than this many times slower than the fastest plan:
    // its turn ends there (two calls, not three, spent where it loses
    // clearly).
    static constexpr double kAbort = 1.5;

    // Off, or from min_bytes on (each call of at least that size is in a class).
    void configure(bool on, std::size_t min_bytes);
    bool covers(std::size_t bytes) const { return on_ && bytes >= min_bytes_ && bytes > 0; }
    static int size_class(std::size_t bytes);

    struct Turn {
        int cls = -1;           // -1: not checked (covers() false)
        Algorithm algorithm = Algorithm::automatic;
        bool timed = false;     // sample() wants this call's seconds
        bool pool = false;      // the plan's last timed call: note() wants the ranks' pooled
                                // mean of its samples (collective)
        bool decided = false;   // the class has its plan
        bool watched = false;   // decided, and its calls still watched (timed: in a
                                // window of kWatch, pool: the window's last)
        bool previous = false;  // hand the call to the previous module (its turn, or
                                // decided so); `algorithm` is the fastest plan then
    };
    // This call's turn; `choice` (the table's) is taken when the class is new.
    // previous_ok: the previous module may run this call (its result is
    // topoar's); where not, a class handed down runs its fastest plan, and
    // the previous module's turn waits for a call it may run.
    Turn next(std::size_t bytes, Algorithm choice, bool previous_ok = false);

    // A timed turn's seconds per byte, on this rank: returns the mean of
    // the plan's samples so far (at a pool turn, what the ranks pool).
    double sample(const Turn& t, double per_byte);
    // At the choice's pool turn, instead of note(): its window goes on for
    // one more timed call, which pools again (its mean then of one more);
    // once per class (false: extended before, or not the choice's pool).
    bool extend(const Turn& t);

    // A watched class's pool turn whose window (pooled: `per_byte`) ran
    // more than kOwn slower than the plan's prediction when decided, and
    // so did the window before it (one window alone can be a disturbance:
    // on s3 one of tree's windows at 2 MiB ran 8 % slow, its job's calls
    // did not).
    bool falls_behind(const Turn& t, double per_byte) const;
    // Where falls_behind: the class is open again (once), its plan as if
    // it had been the choice and had run the mean of the two windows,
    // which is returned (else per_byte); note() then judges this pool turn
    // so, given that mean, the plans run before not tried again.  *line:
    // why, for verbose output (empty where not opened).
    double reopen(const Turn& t, double per_byte, std::string* line);

    // The ranks' pooled seconds per byte of a pool turn (the same number
    // on every rank): returns the algorithm the next call of the class runs
    // (the same on every rank); *line: a plan's turn or the outcome, for
    // verbose output.  At a decided class's pool turn not opened again
    // (reopen): the next window starts.
    // candidates: the other plans, with their predicted seconds per byte
    // (<= 0: none; the fastest qualifying one is tried).
    // own_predicted: the plan that ran, its prediction per byte (<= 0:
    // none); the choice that ran within kOwn of it keeps the class, and an
    // alternative that ran more than kOwn slower than it, and no faster
    // than the best measured, ends the tries (the network is what the
    // model got wrong).
    // previous_allowed: the previous module may take a turn (kLost).  At
    // the previous module's pool turn (t.previous) only per_byte is read.
    Algorithm note(const Turn& t, double per_byte, double own_predicted, const std::vector<Algorithm>& candidates,
                   const std::vector<double>& predicted_per_byte, std::string* line,
                   bool previous_allowed = false);

    // The class's plan once decided (automatic while not): its fastest
    // plan, also where the previous module takes its calls (handed_down).
    Algorithm winner(int cls) const;
    bool handed_down(int cls) const;
    // Plans the class has run so far (the choice first).
    int tried(int cls) const;
    // Forget every class (the table or the network changed).
    void reset();

private:
    struct Class {
        int in_plan = 0;                    // calls of the running plan so far
        int samples = 0;                    // its timed calls so far
        bool extended = false;              // the choice's window went on (extend)
        double sum = 0;                     // their seconds per byte, this rank's
        std::vector<Algorithm> tried;       // A first, then each alternative: the last one
                                            // runs while undecided; empty: a new class
        std::vector<double> measured;       // pooled seconds per byte, by tried
        Algorithm winner = Algorithm::automatic;
        std::vector<double> own;            // their predictions per byte (<= 0: none), by tried
        double held_to = 0;                 // what the winner's later calls are held to: its
                                            // prediction, where its window ran within kOwn of it
                                            // (0: not watched)
        std::vector<Algorithm> before;      // plans run before the class opened again
        bool reopened = false;              // opened again once: no more watching
        int previous = 0;                   // the previous module: 0 not run, 1 its turn, 2 ran
        std::size_t best = 0;               // from its turn on: index of the fastest plan in tried
        bool previous_won = false;          // decided: its calls are handed down
        int watch_calls = 0;                // the decided plan's calls so far
        int watch_samples = 0;              // its window's timed calls
        double watch_sum = 0;               // and their seconds per byte
        double behind_before = 0;           // the window before, pooled, where it fell behind
    };
    static bool window_behind(const Class& c, double per_byte);
    // A new window in the class (a plan's, or the previous module's).
    static void start_window(Class& c);
    // "<heading>ran at (MB/s) A x, B y" over the plans the class measured.
    static void ran_at(std::ostream& os, int cls, const Class& c);
    static std::size_t idx(int cls) { return static_cast<std::size_t>(cls); }
    bool on_ = false;
    std::size_t min_bytes_ = std::size_t(1) << 20;
    std::array<Class, kClasses> classes_{};
};

}  // namespace topoar
