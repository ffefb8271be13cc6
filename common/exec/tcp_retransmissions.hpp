// topoar engine: this host's TCP retransmissions, the send credit's signal.
//
// The send credit (ExecProgram::send_credit, exec/schedule_policy.hpp) keeps
// what a rank has sent to a peer on another host and the peer has not yet
// matched within two segments.  Where a link's queue is shallow that saves
// 2-3x (without it each TCP connection's window grows until the queue
// drops, and the drops cost retransmission timeouts); where queues are deep
// nothing drops and the credit only costs: each synchronous send waits for
// its peer's answer, which queues behind the data coming the other way (4
// hosts of one rank at 1 Gbit/s with the default 100 ms queue, forced ring
// and tree: 2-12 % slower at 512 KiB-1 MiB; docs/large-messages.md, "The
// credit where drops are seen").  A drop shows where the sender's kernel
// counts it: its host's TCP RetransSegs.  So with coll_topoar_send_credit
// auto a process credits its sends once a call of its own has seen its
// host retransmit kCreditRetransmits segments or more, and not before.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace topoar {

// Segments a host retransmits between two of the watch's reads (below)
// before the process credits its sends: a drop or two on a healthy
// network does not turn it on; the shallow queues that need it dropped
// thousands per job.
constexpr std::int64_t kCreditRetransmits = 8;

// RetransSegs from /proc/net/snmp's text (the "Tcp:" header line, then its
// values line); -1 where there is none.
std::int64_t parse_tcp_retransmissions(const std::string& snmp);

// This host's (network namespace's) TCP segments retransmitted so far; -1
// where that cannot be read (not Linux, no /proc): the credit then stays
// as it is.  One read costs what the kernel takes to sum its counters over
// the CPUs: 13-19 us on this 2-core machine, more on larger ones.
std::int64_t tcp_retransmissions();

// The watch around the calls the credit would hold (Engine::run), for the
// whole process: watch_start() before such a call reads a baseline where
// there is none; watch_end() after it reads again at most once per
// kWatchInterval and answers the segments retransmitted since the last
// read (which becomes the baseline), -1 where it did not read.  So the
// reads cost at most one per 10 ms of such calls, and what the host
// retransmitted between two of them counts, whoever sent it.
constexpr double kWatchInterval = 0.010;
void watch_start();
std::int64_t watch_end();

// Whether a call of this process has seen its host retransmit (sticky for
// the process: every engine credits from then on).
bool credit_retransmitted();
void note_credit_retransmitted();

// Tests: the counter read instead of /proc/net/snmp (an empty function:
// /proc/net/snmp again), and forgetting what was seen and the baseline.
void set_retransmission_reader(std::function<std::int64_t()> reader);
void reset_credit_retransmitted();

}  // namespace topoar
