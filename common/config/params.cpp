#include "config/params.hpp"
#include "config/params.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "core/algorithm.hpp"
#include "core/hash.hpp"
#include "core/units.hpp"
#include "decide/decision.hpp"
#include "config/engine_config.hpp"
#include "topology/device_topology.hpp"

// coll_topoar_cuda_library's default: where the build installs the CUDA
// library (common/Makefile.am defines it as the glue is built alike).
#ifndef TOPOAR_CUDA_LIBRARY
#error "TOPOAR_CUDA_LIBRARY: the CUDA library's installed path (common/Makefile.am sets it)"
#endif

namespace topoar {

namespace {

Status parse_bool(const std::string& v, bool* out) {
    if (v == "1" || v == "true" || v == "yes") *out = true;
    else if (v == "0" || v == "false" || v == "no") *out = false;
    else return Status::invalid("not a boolean (1 or 0)");
    return Status::ok();
}

// A decimal integer in [lo, hi] (an MCA int: the glue hands it over as
// text).
Status parse_int(const std::string& v, int lo, int hi, int* out) {
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || end != v.c_str() + v.size() || errno != 0 || n < INT_MIN || n > INT_MAX)
        return Status::invalid("not an integer");
    if (n < lo || n > hi) return Status::invalid("must be " + std::to_string(lo) + " to " + std::to_string(hi));
    *out = static_cast<int>(n);
    return Status::ok();
}

// "BANDWIDTH[,LATENCY]" over a default link.
Status parse_link(const std::string& text, Link* link) { return parse_link_spec(text, link); }

Status parse_algorithm(const std::string& v, Algorithm* out) {
    if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
        int n = std::atoi(v.c_str());
        if (v.size() > 3 || n >= kNumAlgorithms) return Status::invalid("no algorithm has this number");
        *out = static_cast<Algorithm>(n);
        return Status::ok();
    }
    if (!algorithm_from_name(v, out))
        return Status::invalid("unknown algorithm (auto, " + algorithm_names(concrete_algorithms()) + ")");
    return Status::ok();
}

// coll_topoar_model_overhead's value where 'auto' measures nothing.
const char* const kAssumedModelOverhead = "40us";
// ... and on a communicator within one host (shared memory).
const char* const kAssumedHostOverhead = "1us";

// coll_topoar_cuda_aware_mpi's values, by number (TOPOAR_CUDA_AWARE_* in
// ompi_coll_topoar/coll_topoar.h).
const char* const kCudaAwareKeywords[] = {"never", "auto", "always", nullptr};
// coll_topoar_barrier (TOPOAR_BARRIER_* in the glue, valued by index).
const char* const kBarrierKeywords[] = {"never", "auto", "always", nullptr};
// coll_topoar_send_credit, in SendCredit's order.
const char* const kSendCreditKeywords[] = {"never", "auto", "always", nullptr};

Status parse_send_credit(const std::string& v, EngineConfig* c) {
    for (int k = 0; kSendCreditKeywords[k]; ++k)
        if (v == kSendCreditKeywords[k] || v == std::to_string(k)) {
            c->send_credit = static_cast<SendCredit>(k);
            return Status::ok();
        }
    return Status::invalid("not never, auto or always");
}

std::vector<ParamInfo> make_table() {
    using T = ParamType;
    const std::string order = algorithm_names(model_candidates());
    std::string aliases;
    for (Algorithm a : concrete_algorithms())
        if (algorithm_info(a).alias)
            aliases += std::string(aliases.empty() ? " Deprecated names: " : ", ") + algorithm_info(a).alias +
                       " (now " + algorithm_name(a) + ")";
    if (!aliases.empty()) aliases += ".";
    // Rows in ompi_info's order: the engine's, then the glue's own.
    // Types, defaults, levels and help texts are what users see; keep them
    // stable.
    return {
        {"allreduce_algorithm", T::algorithm, "auto", 5, true, false, true,
         [](const std::string& v, EngineConfig* c) { return parse_algorithm(v, &c->algorithm); },
         "Force one MPI_Allreduce algorithm (auto: choose per message size and topology). "
         "Must be the same on all ranks. Settable through MPI_T at run time (topoar_tune does): "
         "applies to communicators set up afterwards." + aliases},
        {"segment_size", T::size, "32768", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->segment_size); },
         "Largest message in bytes: transfers are cut into segments of this size that flow independently "
         "(pipelining). Keep it at or below the BTL's eager limit (TCP: 64 KiB) so no segment waits for a "
         "rendezvous handshake (0: whole transfers). Calls above 8 MiB on one host use larger segments; "
         "across hosts no message exceeds this size. Must be the same on all ranks."},
        {"pipeline_size", T::size, "32768", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->pipeline_size); },
         "Pipelining unit in bytes that planners build into their rounds (0: none); calls above 8 MiB "
         "use a larger one (call bytes / 256, at most chunk_size / 64). Must be the same on all ranks."},
        {"flight_size", T::size, "65536", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->flight_size); },
         "Across hosts, the bytes a rank keeps in flight to one peer: the executor keeps fewer rounds of a "
         "call open at once (one to four) so that what it has sent to a peer and the peer has not yet taken "
         "stays within this (two for rounds of a few units to one peer, each within it and at most four times "
         "it in all), and calls above 8 MiB pipeline in units of at most half of it; sends to ranks on other "
         "hosts are held to a credit of flight_size / segment (coll_topoar_send_credit). What queues beyond "
         "a full link adds no speed; on shallow-buffered links it costs (a 64 KiB token bucket at 1 Gbit/s: "
         "reordered packets and TCP retransmissions). auto's table prefers plans whose rounds keep within it "
         "(a plan predicted within coll_topoar_model_margin of one that does not), and where none does, "
         "plans of a few units per round over whole operations. Raise it for links with a "
         "large bandwidth-delay product (0: no bound, four rounds open, units of call bytes / 256, no "
         "preference). Must be the same on all ranks."},
        {"send_credit", T::keyword, "auto", 6, false, false, false, parse_send_credit,
         "Across hosts under coll_topoar_flight_size, calls that send a rank on another host at least four "
         "times the bound: always makes those sends synchronous (done once the peer has matched them) with at "
         "most flight_size / segment of them (at least 2, at most 64) posted to one peer at once, so a rank's "
         "data never waits in quantity in a socket (on links whose queue holds 1 ms of traffic that data "
         "overflowed the queue and such calls ran 2-3x slower than han; with the credit at its speed); where "
         "queues are deep nothing drops and each synchronous send waits for its peer's answer (2-12 % at "
         "512 KiB-1 MiB on 4 hosts at 1 Gbit/s). auto credits once a call of the process has seen its host's "
         "TCP retransmit at least 8 segments (Linux: RetransSegs of /proc/net/snmp, read at most once per "
         "10 ms of such calls until then; verbose 10 says when), never does not. The cost model always predicts "
         "with the credit.",
         false, ParamScope::all, kSendCreditKeywords},
        {"unit_time", T::string, "200us", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_latency(v, &c->unit_time); },
         "Across hosts on measured or described links: coll_topoar_segment_size and _pipeline_size grow to "
         "what the slowest host or rack link carries in this time, as a power of two up to 1 MiB, where that "
         "is at least 4x the size as set, and coll_topoar_flight_size to at least twice the segment (the "
         "defaults stay up to about 5 Gbit/s; 256 KiB at 10 Gbit/s). Per-message costs then stay a small share of a message's time on fast "
         "links; with 32 KiB messages over unshaped links five ranks on two cores ran 1.2-1.5x slower than "
         "tuned, with 256 KiB at its speed. '0' keeps the three as set. Must be the same on all ranks."},
        {"chunk_size", T::size, "67108864", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->chunk_size); },
         "Calls larger than this many bytes run as consecutive chunks of it, each a complete all-reduce of "
         "its part with one cached plan, so plans, scratch memory and messages in flight stay bounded "
         "whatever the message size (0: never cut; not recommended above 1 GiB). "
         "Must be the same on all ranks."},
        {"small_msg_size", T::size, "65536", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->small_msg_size); },
         "auto's fixed choice (used when no rule and no cost-model table decides): messages of at most this "
         "many bytes use the latency algorithm, larger ones aggregation trees"},
        {"num_trees", T::integer, "0", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_int(v, 0, 256, &c->num_trees); },
         "Aggregation trees (algorithm tree): how many trees share the vector, each rooted elsewhere (0, the "
         "default: the planner's choice, the fewest whose busiest link is within 1 % of the best). Fewer "
         "trees: fewer connections across each host link. Must be the same on all ranks."},
        {"single_node_fallback", T::boolean, "1", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->single_node_fallback); },
         "auto: hand calls on communicators within one host to the previous module (tuned's shared-memory "
         "algorithms win there); 0 makes topoar run them too. A rules file takes precedence."},
        {"topology_file", T::string, "", 4, true, true, false,
         [](const std::string& v, EngineConfig* c) {
             c->discovery.topology_file = v;
             return Status::ok();
         },
         "Topology file describing racks/switches above the nodes and their links "
         "(format: docs/topology-format.md); takes precedence over rack_file and Slurm"},
        {"rack_file", T::string, "", 4, true, true, false,
         [](const std::string& v, EngineConfig* c) {
             c->discovery.rack_file = v;
             return Status::ok();
         },
         "Host-to-rack map: lines 'hostname rack [bw=.. lat=..]'"},
        {"rules_file", T::string, "", 4, true, true, false,
         [](const std::string& v, EngineConfig* c) {
             c->rules_file = v;
             return Status::ok();
         },
         "Decision rules for auto: message size, communicator shape and memory type -> algorithm "
         "(format: docs/rules-format.md; topoar_tune writes one). Must be the same on all ranks."},
        {"model_table", T::boolean, "1", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->model_table); },
         "auto without a matching rule: choose per message size from a table the cost model computes at "
         "communicator set-up for the discovered topology (1), or only the fixed choice (0: latency "
         "algorithm up to coll_topoar_small_msg_size, trees above). Verbose 10 prints the table."},
        // The model's software cost per message: measured with the links
        // (MeasuredNetwork::message_cost), else Open MPI's TCP BTL on this
        // class of machine (docs/cost-model.md "Default table").
        {"model_overhead", T::string, "auto", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             c->model_overhead_given = v != "auto";
             if (!c->model_overhead_given) return parse_latency(kAssumedModelOverhead, &c->model_overhead);
             return parse_latency(v, &c->model_overhead);
         },
         std::string("Software cost per message the cost model charges. 'auto' (the default): measured where "
                     "set-up measures the links between hosts (no topology file, rack file, Slurm address or "
                     "coll_topoar_node_link; the one-way time of a 1-byte message between two ranks of one "
                     "host, verbose 10 prints it), else ") +
             kAssumedModelOverhead +
             " (Open MPI's TCP BTL) between hosts and " + kAssumedHostOverhead +
             " (shared memory) on a communicator within one host. A time such as '2us' (RDMA networks) is "
             "used as given, also where links are measured; a topology file's latencies are link latencies "
             "that this cost comes on top of. "
             "Larger values move the switch from the latency algorithm to the bandwidth algorithms to larger "
             "messages. Must be the same on all ranks."},
        // LogP's o: a rank's messages queue on its CPU (docs/cost-model.md
        // "Messages on a rank's CPU").
        {"model_cpu_share", T::string, "25%", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             const Status st = parse_fraction(v, &c->model_cpu_share);
             if (!st) return st;
             if (c->model_cpu_share > 0.5)
                 return Status::invalid("more than 50% (the share of each message's cost at each end)");
             return Status::ok();
         },
         "Share of the per-message cost (coll_topoar_model_overhead) that the cost model charges on each "
         "end's CPU, '25%' (the default) or '0.25', at most 50%; the rest is path latency. A rank's sends and "
         "receives queue on its CPU, so a rank that handles k messages at once (the root of a star) pays k "
         "shares where one message's time is unchanged. 0: a rank handles any number of messages at once "
         "(the papers' alpha-beta model). Must be the same on all ranks."},
        // The model charges extra messages less than they cost where
        // processes share cores (docs/cost-model.md "Default table").
        {"model_margin", T::string, "15%", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_fraction(v, &c->model_margin); },
         "How much faster the cost model must predict an algorithm with more messages (order: " + order +
             ") than a simpler one for the table to choose it, '0.15' or '15%' (the default); 0 takes the "
             "fastest prediction. Must be the same on all ranks."},
        // Zero-configuration discovery (topology/probe.hpp, topology/measured.hpp).
        {"probe", T::boolean, "1", 4, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->probe); },
         "Measure the links between hosts at a communicator's first set-up when no topology file, rack "
         "file, Slurm address or coll_topoar_node_link describes them (1, the default): host up-links, "
         "racks and their uplinks, the rate inside a host; measured once per set of hosts and reused by "
         "later communicators. 0: assume the built-in links. Verbose 10 prints what was measured. Must be "
         "the same on all ranks."},
        {"probe_time", T::string, "300ms", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             double t = 0;
             TOPOAR_TRY(parse_latency(v, &t));
             if (t <= 0 || t > 60) return Status::invalid("must be above 0 and at most 60s");
             c->probe_options.total_seconds = t;
             return Status::ok();
         },
         "What the link probes of coll_topoar_probe aim to take in all, e.g. '300ms' (the default); each "
         "round of concurrent host pairs gets an equal share, at least 2 ms, so slow networks and many hosts "
         "take longer and fast networks far less. Must be the same on all ranks."},
        // Online adaptation (engine.cpp, Engine::note_call_time).
        {"adapt", T::boolean, "1", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->adapt); },
         "On measured links (coll_topoar_probe): time every call of 1 MiB or more against the cost "
         "model's prediction and, when the ranks find calls persistently slower than in the first "
         "window after set-up (coll_topoar_adapt_threshold), measure the links again and rebuild the "
         "table and plans, all ranks at the same call. Verbose 10 says when. Must be the same on all ranks."},
        {"adapt_interval", T::integer, "8", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_int(v, 1, 1000000, &c->adapt_interval); },
         "Online adaptation: timed calls per window; after each window the ranks compare notes (one "
         "allgather of one number). Must be the same on all ranks."},
        {"adapt_threshold", T::string, "50%", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             double f = 0;
             TOPOAR_TRY(parse_fraction(v, &f));
             if (f <= 0) return Status::invalid("must be above 0");
             c->adapt_threshold = f;
             return Status::ok();
         },
         "Online adaptation: how much slower than the first window after set-up (relative to the cost "
         "model's prediction) a window must run to measure the links again, '0.5' or '50%' (the default). "
         "Must be the same on all ranks."},
        {"adapt_max", T::integer, "4", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_int(v, 0, 1000, &c->adapt_max); },
         "Online adaptation: re-measurements per communicator at most (0: never). Must be the same on all "
         "ranks."},
        // The model's large-message choice checked by the calls (decide/model_check.hpp).
        {"model_check", T::boolean, "1", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->model_check); },
         "auto across hosts on measured links (coll_topoar_probe), calls of 1 MiB or more that the cost "
         "model's table decides: the second and third calls of each power-of-two size class are timed (the "
         "ranks pool their mean, one allgather of one number), and when the choice ran more than 5 % slower "
         "than its own prediction, the plans ranked next are predicted for the call's size and one predicted "
         "5 % faster than the choice ran gets the next three calls, the last two timed (at most two such "
         "plans); the fastest measured runs the class from then on, and where it ran within 5 % of its "
         "prediction it is watched (windows of 8 calls, pooled): two windows in a row more than 5 % slower "
         "than that prediction check the class again, once. Where the fastest plan measured ran more than "
         "2x slower than its own prediction (the model does not know this machine), the previous module "
         "(tuned) gets three calls the same way (its first timed one pooled alone too: 1.5x slower than the "
         "fastest plan ends its turn) and takes the class, handed down, if it ran 3 % faster; "
         "8- and 16-bit integer sums and products under op/avx still run topoar's plan (1, the default; 0: "
         "the table decides). Verbose 10 prints each outcome. Must be the same on all ranks."},
        // Measured choice for small messages (decide/trials.hpp).
        {"trial_calls", T::integer, "24", 5, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_int(v, 0, 1000, &c->trial_calls); },
         "auto across hosts, host buffers of at most coll_topoar_trial_max_size bytes: the first calls of each "
         "power-of-two size class take turns between auto's table choice, the previous module (tuned) and "
         "the latency algorithm, at most this many timed calls each (24, the default; 0: no trials, the "
         "table decides), then the ranks agree on the fastest for that class (one allgather); a clear loser "
         "is dropped after a round, and a contest ends after three rounds at the latest. Outcomes are kept for the job: a "
         "later communicator of the same shape starts decided where all its ranks hold the same. Every "
         "call's result is still computed alike on all ranks. Verbose 10 prints each outcome. Must be the "
         "same on all ranks."},
        {"trial_watch", T::boolean, "1", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->trial_watch); },
         "After a small-message contest (coll_topoar_trial_calls) its winner is watched: 16 calls untimed, "
         "then 16 timed and pooled (one allgather). A winner that ran more than 20 % slower than in its "
         "contest (its blocks were short and interleaved: a link's buffer or token bucket refills while the "
         "others run) lets each contender whose contest time beats it by more than 10 % run 32 calls the "
         "same way, and the fastest of those windows runs the class from then on (1, the default; 0: the "
         "contest decides alone). Verbose 10 prints each window. Must be the same on all ranks."},
        {"trial_max_size", T::size, "65536", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->trial_max_size); },
         "Largest call (bytes) that coll_topoar_trial_calls applies to (65536, the default). Must be the "
         "same on all ranks."},
        {"deferred_setup", T::boolean, "1", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_bool(v, &c->deferred_setup); },
         "A communicator spanning hosts: its next allreduce after the first completes the set-up (links, "
         "contest outcomes, agreement), and with auto a first allreduce of at most "
         "coll_topoar_trial_max_size bytes goes to the previous module while a nonblocking allgather of "
         "the ranks' records travels beside it (1, the default). 0: the first call completes the set-up "
         "and runs topoar's choice. Either way a first call whose data is at most 8192 bytes / (ranks - 1) "
         "carries the records itself: one allgather of data and record, reduced by every rank. Must be "
         "the same on all ranks."},
        {"contest_cache_dir", T::string, "", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             c->contest_cache_dir = v;
             return Status::ok();
         },
         "Off when empty (the default). A directory where the small-message contests' outcomes "
         "(coll_topoar_trial_calls) are kept across jobs: one file per cluster (host names), communicator "
         "shape, links, build and settings, read by rank 0 and carried to the others at set-up, written "
         "atomically by rank 0 when a class settles. A later job of the same kind starts those classes "
         "decided. A file that does not read back is ignored (said at verbose 10). Must be the same on all "
         "ranks."},
        {"socket_link", T::string, "", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_link(v, &c->discovery.default_socket); },
         "Default link of a rank to its socket, 'BANDWIDTH[,LATENCY]' e.g. '20GB/s,0.5us'"},
        {"node_link", T::string, "", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) {
             c->node_link_given = true;
             return parse_link(v, &c->discovery.default_node);
         },
         "Default up-link of a node (its network port), 'BANDWIDTH[,LATENCY]' e.g. '100Gbit,2us'. Setting it "
         "also turns off measuring the links (coll_topoar_probe)."},
        {"rack_link", T::string, "", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_link(v, &c->discovery.default_rack); },
         "Default up-link of a rack to the spine, 'BANDWIDTH[,LATENCY]'"},
        {"spine_link", T::string, "", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_link(v, &c->discovery.default_spine); },
         "Default up-link of a spine switch, 'BANDWIDTH[,LATENCY]'"},
        // The cost model for device data (model/device_model.hpp): link
        // classes and overhead are assumptions from data sheets and NCCL,
        // not measured (docs/cost-model.md "Device data").
        {"gpu_link", T::string, "nvlink", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_gpu_link_class(v, &c->gpu_model.gpu); },
         "Cost model for device buffers: a GPU's link to the other GPUs of its node, per GPU and direction: "
         "'nvlink' (the default: 450GB/s,1us, NVLink 4 through NVSwitch as on a DGX H100), 'pcie' "
         "(50GB/s,2us, PCIe Gen5 x16) or 'BANDWIDTH[,LATENCY]'. Must be the same on all ranks."},
        {"gpu_nic_link", T::string, "400Gbit,3us", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_link_spec(v, &c->gpu_model.nic); },
         "Cost model for device buffers: the network link of one GPU, 'BANDWIDTH[,LATENCY]' (default "
         "'400Gbit,3us': one InfiniBand NDR NIC per GPU with GPUDirect RDMA, as on a DGX H100); a node's "
         "up-link for device data is this times its GPUs (ranks). Must be the same on all ranks."},
        {"gpu_model_overhead", T::string, "8us", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_latency(v, &c->gpu_model.overhead); },
         "Cost model for device buffers: software cost per message (a grouped NCCL launch and its "
         "progress), e.g. '8us' (the default); the counterpart of coll_topoar_model_overhead. "
         "Must be the same on all ranks."},
        {"gpu_pipeline_size", T::size, "1048576", 6, true, false, false,
         [](const std::string& v, EngineConfig* c) { return parse_size(v, &c->gpu_model.pipeline_bytes); },
         "Pipelining unit in bytes planners build into their rounds for device buffers (0: none); the "
         "device executor launches one NCCL group per round, so it is larger than coll_topoar_pipeline_size "
         "(the device cost model: docs/cost-model.md, Device data). Must be the same on all ranks."},

        // The glue's own (ompi_coll_topoar/coll_topoar_component.c stores
        // them): not the engine's, registered by the same walk.
        {"priority", T::integer, "50", 6, false, false, true, nullptr,
         "Priority of the topoar coll component (it provides MPI_Allreduce, MPI_Iallreduce, persistent "
         "allreduce and, across hosts, MPI_Barrier); negative: not used. "
         "Settable through MPI_T at run time: applies to communicators created afterwards "
         "(topoar_tune --compare --previous uses this to measure the module topoar hands calls to).",
         true, ParamScope::all},
        {"verbose", T::integer, "0", 9, false, false, false, nullptr,
         "Verbosity: 1 set-up problems and fallbacks, 10 discovered topology (rank 0), "
         "20 chosen algorithm per call size class, 50 every call",
         true, ParamScope::local},
        {"cuda", T::boolean, "1", 4, false, false, false, nullptr,
         "GPU path: load the topoar CUDA library at start-up and take MPI_Allreduce calls on device "
         "buffers (NCCL, or staging through pinned host memory). Off, or without a library, driver or "
         "device: device pointers are not detected (as in a host-only build).",
         true, ParamScope::readonly},
        {"cuda_library", T::string, TOPOAR_CUDA_LIBRARY, 6, false, false, false, nullptr,
         "The topoar CUDA library the GPU path loads (built with --with-cuda)", true, ParamScope::readonly},
        {"nccl", T::boolean, "1", 5, true, false, false, nullptr,
         "Device buffers: run topoar's plans over NCCL (one NCCL communicator per MPI communicator, made "
         "at the first device call); 0 stages device data through pinned host memory and the MPI "
         "transport. Must be the same on all ranks.",
         true, ParamScope::all},
        {"nccl_max_comms", T::integer, "16", 6, false, false, false, nullptr,
         "At most this many NCCL communicators per process (each holds device memory; nccl_hier's per-host "
         "ones count too); communicators beyond stage device data through the host, and nccl_hier without "
         "room for its per-host one runs the built-in plan",
         true, ParamScope::all},
        {"check_mem_type", T::boolean, "0", 5, false, false, false, nullptr,
         "Verify on every call that all ranks pass buffers in the same memory type (host or device), "
         "at the cost of one small allreduce per call; disagreeing calls are staged. Off: assumed, as "
         "with any CUDA-aware MPI. Set it alike on every rank: it acts from the first call, before "
         "set-up compares the settings, so ranks set differently wait on each other there.",
         true, ParamScope::all},
        {"mem_type_cache", T::boolean, "1", 6, false, false, false, nullptr,
         "Remember the last few pointers found to be host memory (exact addresses), so that a program "
         "passing the same host buffers again pays no pointer query. Sound under unified addressing "
         "except when a host buffer is unmapped and a device allocation then starts at exactly its "
         "address (docs/gpu.md); 0 asks the driver on every call.",
         true, ParamScope::readonly},
        {"cuda_aware_mpi", T::keyword, "auto", 5, true, false, false, nullptr,
         "Device buffers of the calls topoar hands to the previous module: auto gives them unstaged when "
         "the MPI library reports CUDA support (MPIX_Query_cuda_support, asked once when the component "
         "opens), never always stages them through pinned host memory, always gives them unstaged "
         "without asking. Must be the same on all ranks.",
         true, ParamScope::all, kCudaAwareKeywords},
        {"barrier", T::keyword, "auto", 5, true, false, false, nullptr,
         "MPI_Barrier on communicators that span hosts. topoar's: the ranks of each host report to its "
         "first rank along a binomial tree, those first ranks meet in a barrier of their own (pairwise "
         "exchange for a power of two hosts, else dissemination; one message each way between two hosts "
         "per round) and release their hosts' ranks. auto times topoar's against the previous module's "
         "(coll_topoar_barrier_trial barriers each, interleaved, at the first blocking MPI_Allreduce that "
         "runs with topoar set up on the communicator; the slowest rank's times decide, alike on every "
         "rank; kept per communicator shape with auto's small-message contest outcomes, also where no contest "
         "runs, so later communicators of the same shape "
         "start decided) and keeps the faster; always takes topoar's from that call without timing; never (or 0) "
         "leaves every barrier to the previous module. Before that call and within one host: the previous "
         "module's. Must be the same on all ranks.",
         true, ParamScope::all, kBarrierKeywords},
        {"barrier_trial", T::integer, "8", 6, true, false, false, nullptr,
         "coll_topoar_barrier auto: how many barriers of each kind (topoar's, the previous module's) are "
         "timed to choose between them, in four interleaved blocks (each block's mean per barrier, the best "
         "block per rank, the slowest rank's); 0 or less: topoar's untimed, as always. Must be the same on "
         "all ranks.",
         true, ParamScope::all},
    };
}

}  // namespace

const std::vector<ParamInfo>& param_table() {
    static const std::vector<ParamInfo> table = make_table();
    return table;
}

std::size_t engine_param_count() {
    static const std::size_t n = [] {
        std::size_t k = 0;
        while (k < param_table().size() && !param_table()[k].glue_only) ++k;
        return k;
    }();
    return n;
}

const ParamInfo* find_param(const std::string& name) {
    for (const ParamInfo& p : param_table())
        if (name == p.name) return &p;
    return nullptr;
}

// Every field the table sets, from its default (written once: the table).
EngineConfig::EngineConfig() {
    for (const ParamInfo& p : param_table()) {
        Status s = set_param(this, p.name, p.default_value);
        if (!s) throw std::logic_error("parameter table default: " + s.message());
    }
}

Status set_param(EngineConfig* cfg, const std::string& name, const std::string& value) {
    const ParamInfo* p = find_param(name);
    if (!p) return Status::invalid("coll_topoar_" + excerpt(name) + ": no such engine parameter");
    if (p->glue_only) return Status::ok();  // the glue's own: nothing of the engine's
    // "" (an unset string variable) keeps the default.
    const std::string v = value.empty() ? p->default_value : value;
    if (v.empty()) return p->names_file ? p->parse(v, cfg) : Status::ok();  // no file / built-in link
    Status s = p->parse(v, cfg);
    if (!s) return Status::invalid("coll_topoar_" + name + " '" + excerpt(v) + "': " + s.message());
    return Status::ok();
}

std::uint64_t param_fingerprint(const ParamInfo& p, const std::string& value) {
    const std::string v = value.empty() ? p.default_value : value;
    std::uint64_t h = fnv1a(v.data(), v.size());
    if (p.names_file && !v.empty()) {
        std::ifstream in(v, std::ios::binary);
        if (!in) {
            const char unreadable[] = "\1unreadable";
            return fnv1a(unreadable, sizeof unreadable, h);
        }
        std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        h = fnv1a(contents.data(), contents.size(), fnv1a("\1", 1, h));
    }
    return h;
}

std::size_t default_segment_size() {
    static const std::size_t v = EngineConfig{}.segment_size;
    return v;
}
double assumed_host_overhead() {
    static const double v = [] {
        double t = 0;
        (void)parse_latency(kAssumedHostOverhead, &t);
        return t;
    }();
    return v;
}

double default_model_margin() {
    static const double v = EngineConfig{}.model_margin;
    return v;
}

// Not through EngineConfig{}: it holds a DeviceModel whose members
// default to these.
Link default_gpu_link() {
    static const Link v = [] {
        Link l;
        (void)parse_gpu_link_class(find_param("gpu_link")->default_value, &l);
        return l;
    }();
    return v;
}
Link default_gpu_nic_link() {
    static const Link v = [] {
        Link l;
        (void)parse_link_spec(find_param("gpu_nic_link")->default_value, &l);
        return l;
    }();
    return v;
}
std::size_t default_gpu_pipeline_size() {
    static const std::size_t v = [] {
        std::size_t b = 0;
        (void)parse_size(find_param("gpu_pipeline_size")->default_value, &b);
        return b;
    }();
    return v;
}

double default_gpu_model_overhead() {
    static const double v = [] {
        double t = 0;
        (void)parse_latency(find_param("gpu_model_overhead")->default_value, &t);
        return t;
    }();
    return v;
}

}  // namespace topoar

// The C view of the rows' glue fields (config/params.h); no exception
// leaves it.
extern "C" int topoar_param_glue(int index, topoar_param_glue_t* out) {
    static_assert(TOPOAR_PARAM_KEYWORD == static_cast<int>(topoar::ParamType::keyword), "C and C++ types differ");
    static_assert(TOPOAR_PARAM_SCOPE_READONLY == static_cast<int>(topoar::ParamScope::readonly),
                  "C and C++ scopes differ");
    try {
        const auto& t = topoar::param_table();
        if (index < 0 || index >= static_cast<int>(t.size())) return 1;
        const topoar::ParamInfo& p = t[static_cast<std::size_t>(index)];
        out->glue_only = p.glue_only ? 1 : 0;
        out->scope = static_cast<int>(p.scope);
        out->keywords = p.keywords;
        out->names_file = p.names_file ? 1 : 0;
        return 0;
    } catch (...) {
        return 1;
    }
}
