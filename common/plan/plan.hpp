// topoar engine: a Plan is the data an all-reduce algorithm compiles to.
//
// A plan lists, for every rank, ordered rounds of point-to-point operations
// on element ranges of the result buffer:
//
//   send         peer <- buf[offset, offset+count)
//   recv_reduce  buf[range] = incoming (op) buf[range]   (incoming first)
//                or buf[range] = buf[range] (op) incoming (local first)
//   recv_copy    buf[range] = incoming
//
// Semantics of one round on one rank: every operation of the round is posted
// at once; sends read the buffer as it was when the round began; received
// data is reduced (or copied) after all of the round's operations completed.
// So a round may send a range and reduce into the same range.
//
// Plans are built for all ranks at once by PlanBuilder::transfer(), which
// appends the matching send and receive in the same order on both sides.
// With MPI's non-overtaking rule this pairs every message correctly, and
// because rounds are globally numbered, executing them in order cannot
// deadlock: round r of every rank only waits for round r of others.
//
// The operand order of recv_reduce lets planners fix one expression tree for
// every element, so all ranks get bit-identical results and non-commutative
// operations would see ranks in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "status.hpp"

namespace topoar {

enum class OpKind : std::uint8_t { send, recv_reduce, recv_copy };
enum class Operand : std::uint8_t { incoming_first, local_first };

struct Op {
    OpKind kind;
    Operand order;
    int peer;
    std::size_t offset;  // in elements
    std::size_t count;   // in elements, never 0
};

struct Round {
    std::vector<Op> ops;
};

struct RankSchedule {
    std::vector<Round> rounds;      // non-empty rounds only, in order
    std::size_t scratch_elems = 0;  // largest sum of recv_reduce counts in a round
};

struct Plan {
    Algorithm algorithm = Algorithm::ring;
    std::size_t count = 0;
    int nranks = 0;
    int only_rank = -1;                // >= 0: only this rank's schedule was kept
    std::vector<RankSchedule> ranks;   // indexed by comm rank

    const RankSchedule& of(int rank) const { return ranks[rank]; }
    std::size_t num_rounds(int rank) const { return ranks[rank].rounds.size(); }
};

class PlanBuilder {
public:
    // only_rank >= 0 keeps just that rank's operations (what a running rank
    // needs); -1 keeps all (tests, simulator, topoar_plan).
    PlanBuilder(Algorithm alg, int nranks, std::size_t count, int only_rank = -1);

    // One message of `count` elements at `offset` from src to dst in global
    // round `round`; dst reduces it (kind recv_reduce) or stores it.
    void transfer(int round, int src, int dst, std::size_t offset, std::size_t count,
                  OpKind recv_kind, Operand order = Operand::incoming_first);

    // Drops empty rounds and computes scratch sizes.
    Plan finish();

private:
    Round& round_of(int rank, int round);
    Plan plan_;
};

// Checks the structural invariants every plan must satisfy: ranges inside
// [0, count), peers valid and not self, sends matched by receives in order,
// no recv_copy overlapping a send or another receive in the same round.
// Needs a plan built with only_rank == -1.
Status validate_plan(const Plan& plan);

// Human-readable listing of one rank's rounds (topoar_plan, verbose output).
std::string describe_schedule(const Plan& plan, int rank);

}  // namespace topoar
