// topoar_sim: plans every all-reduce algorithm of the engine on a machine
// described on the command line (or in a topology file), predicts each
// plan's run time with the cost model, and prints time and bus bandwidth per
// algorithm and message size, the decision table that follows from them (as
// a rules file), and optionally the best hierarchical-ring factorization.
// --default-table prints the table the engine computes at communicator
// set-up (common/model/default_table.hpp) and what it cost.  --mem cuda
// does all of it for device buffers: the device topology (GPU link classes,
// common/topology/device_topology.hpp) and the device executor's model
// (common/model/device_model.hpp).
//
// The planners are the ones that run in MPI_Allreduce (make_plan,
// common/planners/planners.hpp), so a 2,048-rank cluster can be studied on a
// laptop.  See docs/cost-model.md for the model and an example.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "decide/decision.hpp"
#include "engine.hpp"
#include "model/chain_calls.hpp"
#include "model/cost_model.hpp"
#include "model/default_table.hpp"
#include "model/device_model.hpp"
#include "planners/planner_flex.hpp"
#include "planners/planner_hring.hpp"
#include "topology/device_topology.hpp"
#include "topology/topology.hpp"

using namespace topoar;

namespace {

const char* const kUsage =
    "usage: topoar_sim MACHINE [options]\n"
    "\n"
    "MACHINE, one of:\n"
    "  --racks R --nodes-per-rack N --ranks-per-node G   an even machine\n"
    "  --shape \"4,4,2;8,1\"     ranks per node, racks separated by ';'\n"
    "  --topology FILE         a topology file (docs/topology-format.md)\n"
    "links of --racks/--shape machines (BANDWIDTH,LATENCY, e.g. 100Gbit,2us):\n"
    "  --rank-link L           process <-> host, shared memory   [10GB/s,0.3us]\n"
    "  --node-link L           host NIC <-> rack switch          [100Gbit,1us]\n"
    "  --rack-link L           rack uplink; LATENCY alone keeps the bandwidth\n"
    "                          from --bisection                 [1us]\n"
    "  --bisection F           rack uplink = F x sum of the rack's node links\n"
    "                          (inter-rack oversubscription 1/F) [1]\n"
    "device data (docs/cost-model.md, \"Device data\"):\n"
    "  --mem M                 host, or cuda: GPU buffers, one GPU per rank, over\n"
    "                          the device links below with the device executor's\n"
    "                          model (round by round, whole operations, 741 GB/s\n"
    "                          reduction, eager 4M)                      [host]\n"
    "  --gpu-link L            GPU <-> node GPU fabric, per GPU: nvlink, pcie\n"
    "                          or BANDWIDTH[,LATENCY]        [nvlink = 450GB/s,1us]\n"
    "  --gpu-nic-link L        network link per GPU; a node's up-link is L x its\n"
    "                          GPUs                                  [400Gbit,3us]\n"
    "  --gpu-overhead T        software overhead per message          [8us]\n"
    "  --gpu-nics N            NICs per node shared by its GPUs, each of\n"
    "                          --gpu-nic-link; a GPU's flows off the node cross\n"
    "                          its own NIC (ABCI: 2 for 4 GPUs)   [0: one per GPU]\n"
    "  --gpu-peer-link BW      direct links between two GPUs of a node, per\n"
    "                          direction (an NVLink mesh, no switch)  [0: none]\n"
    "  --gpu-nic-path BW       path between a GPU and the NICs (PCIe), per GPU\n"
    "                          and direction, crossed by its flows off the node\n"
    "                          whichever NIC they use               [0: none]\n"
    "                          (--overhead, --reduce-bw, --mode, --segment and\n"
    "                          --eager, when given, override the device model)\n"
    "messages and algorithms:\n"
    "  --sizes LO:HI[:F]|LIST  message sizes in bytes, LO, LO*F, ... HI (F = 2\n"
    "                          or 4) or a list \"8,4K,1M\"          [8:32M:4]\n"
    "  --elem BYTES            element size                      [4]\n"
    "  --algs LIST             algorithms, comma separated       [all]\n"
    "  --trees K               aggregation trees for tree        [planner's]\n"
    "  --factors AxBxC         hierarchical ring factorization   [topology]\n"
    "  --search-hring          also try every hring factorization, report the best\n"
    "  --levels L              at most L factors in the search  [3]\n"
    "  --top K                 the search reports the K best factorizations [1]\n"
    "  --dims                  hring with --factors: time and bus bandwidth per\n"
    "                          dimension (round by round model only)\n"
    "cost model (docs/cost-model.md):\n"
    "  --overhead T            software overhead per message    [1us]\n"
    "  --reduce-bw BW          reduction throughput per rank     [5GB/s]\n"
    "  --mode M                dataflow (the executor) or rounds (round by\n"
    "                          round, the papers' closed forms)  [dataflow]\n"
    "  --segment BYTES         executor segment size             [32K]\n"
    "  --pipeline BYTES        planners' pipelining unit  [32K; --mem cuda: 1M]\n"
    "  --eager BYTES           eager limit                       [64K]\n"
    "  --unit-time T           fit segment, pipeline and flight to the slowest\n"
    "                          host or rack link as the engine does with\n"
    "                          coll_topoar_unit_time (its default: 200us)  [0: off]\n"
    "  --flight BYTES          across hosts, bytes a rank keeps in flight to one\n"
    "                          peer (coll_topoar_flight_size: fewer rounds open,\n"
    "                          large calls' units at most half of it); 0: none\n"
    "                          (four rounds open); host data only [64K]\n"
    "  --wire-efficiency F     payload share of link bandwidth   [1]\n"
    "                          (0.94: TCP over Ethernet)\n"
    "  --handshake-delay T     rendezvous answer behind data     [0]\n"
    "  --cpu-share F           dataflow mode: share of the overhead each end's\n"
    "                          CPU spends per message, the rest path latency;\n"
    "                          a rank's messages queue on its CPU (0..0.5) [0.25]\n"
    "  --round-latency T       rounds mode: each round of a rank costs T more on\n"
    "                          its critical path (a step's launch or handshake;\n"
    "                          NCCL ring step of s chunks: s x alpha)     [0]\n"
    "  --round-step B[,NODE]   rounds mode: a round's operations run as steps of\n"
    "                          at most B bytes, each costing --round-latency\n"
    "                          (NCCL 2.3: rings x 2 MiB slice); NODE for rounds\n"
    "                          within one host (its own rings)    [0: one step]\n"
    "  --flex-calls SLICE      flexreduce as its paper ran it (III-B, V), not\n"
    "                          topoar's plan: every subrange of its layout one\n"
    "                          NCCL reduce, then broadcast, along a chain\n"
    "                          pipelined in slices of SLICE bytes (NCCL 2.3:\n"
    "                          256K); a level's calls at once, levels one\n"
    "                          after the other (docs/cost-model.md) [off]\n"
    "  --chunk BYTES           the engine's chunk: calls above run as chunks of\n"
    "                          this size, one after the other; 0 = none  [64M]\n"
    "  --exact-flows N         exact max-min up to N flows       [128]\n"
    "output:\n"
    "  --rules FILE            write the decision table to FILE as a rules file\n"
    "  --csv FILE              one line per algorithm and size\n"
    "  --default-table         also build the engine's set-up table (budgeted)\n"
    "  --margin F              its margin: gain a candidate with more messages\n"
    "                          needs over a simpler one, 0.15 or 15%   [15%]\n"
    "  --table-max BYTES       its largest size (the ladder past 2 MiB\n"
    "                          simulates the last winner and the plans\n"
    "                          ahead of it only)                  [8M]\n"
    "  -v                      planning/simulation time, messages, busiest link\n";

struct Options {
    int racks = 0, nodes_per_rack = 0, ranks_per_node = 0;
    std::string shape, topology_file;
    Link rank_link{10e9, 0.3e-6};
    Link node_link{12.5e9, 1e-6};
    double rack_latency = 1e-6;
    double rack_bandwidth = 0;  // explicit; 0 = from bisection
    double bisection = 0;       // 0 = not given
    std::vector<std::size_t> sizes;
    std::size_t elem = 4;
    std::vector<Algorithm> algs;
    int trees = 0;
    std::vector<int> factors;
    bool search_hring = false;
    int levels = 3;
    int top = 1;
    bool dims = false;
    CostParams model;
    std::size_t pipeline = EngineConfig{}.pipeline_size;
    bool pipeline_given = false;  // else --mem cuda uses the device unit
    double unit_time = 0;         // --unit-time: units fit to the links as the engine's (0: as given)
    std::string rules_file, csv_file;
    bool verbose = false;
    bool default_table = false;
    double margin = EngineConfig{}.model_margin;
    std::size_t table_max = 0;  // --table-max: the default table's largest size (0: the engine's)
    // --mem cuda: the device model; *_given: model options set explicitly,
    // which override it.
    bool cuda = false;
    DeviceModel device;
    bool overhead_given = false, cpu_share_given = false, gamma_given = false, mode_given = false, segment_given = false,
         eager_given = false;
    std::size_t chunk = EngineConfig{}.chunk_size;
    std::size_t flex_calls = 0;  // --flex-calls: slice size, 0 = off
};

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "topoar_sim: %s\n", msg.c_str());
    std::exit(2);
}

void check(const Status& s) {
    if (!s) die(s.message());
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    if (!s.empty() && s.back() == sep) out.emplace_back();
    return out;
}

int parse_int(const std::string& s, const char* what, int lo) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || v < lo || v > 1000000)
        die(std::string("bad ") + what + " '" + s + "' (a whole number >= " + std::to_string(lo) + ")");
    return static_cast<int>(v);
}

Link parse_link(const std::string& s, const char* what) {
    auto parts = split(s, ',');
    if (parts.size() != 2) die(std::string(what) + " wants BANDWIDTH,LATENCY (e.g. 100Gbit,2us), got '" + s + "'");
    Link l;
    check(parse_bandwidth(parts[0], &l.bandwidth));
    check(parse_latency(parts[1], &l.latency));
    return l;
}

std::size_t parse_bytes(const std::string& s) {
    std::size_t v = 0;
    check(parse_size(s, &v));
    return v;
}

std::vector<std::size_t> parse_sizes(const std::string& s) {
    std::vector<std::size_t> out;
    if (s.find(':') != std::string::npos) {
        auto p = split(s, ':');
        if (p.size() < 2 || p.size() > 3) die("--sizes wants LO:HI[:FACTOR], got '" + s + "'");
        std::size_t lo = parse_bytes(p[0]), hi = parse_bytes(p[1]);
        int f = p.size() == 3 ? parse_int(p[2], "size factor", 2) : 4;
        if (lo == 0 || lo > hi) die("--sizes: need 0 < LO <= HI");
        for (std::size_t v = lo; v <= hi; v *= static_cast<std::size_t>(f)) {
            out.push_back(v);
            if (v > hi / static_cast<std::size_t>(f)) break;
        }
    } else {
        for (const auto& w : split(s, ',')) out.push_back(parse_bytes(w));
    }
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    o.model.flight_bytes = EngineConfig{}.flight_size;
    o.model.message_cpu_share = EngineConfig{}.model_cpu_share;
    std::string sizes = "8:32M:4";
    bool rack_link_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (a == "--racks") {
            o.racks = parse_int(val(), "--racks", 1);
        } else if (a == "--nodes-per-rack") {
            o.nodes_per_rack = parse_int(val(), "--nodes-per-rack", 1);
        } else if (a == "--ranks-per-node") {
            o.ranks_per_node = parse_int(val(), "--ranks-per-node", 1);
        } else if (a == "--shape") {
            o.shape = val();
        } else if (a == "--topology") {
            o.topology_file = val();
        } else if (a == "--rank-link") {
            o.rank_link = parse_link(val(), "--rank-link");
        } else if (a == "--node-link") {
            o.node_link = parse_link(val(), "--node-link");
        } else if (a == "--rack-link") {
            std::string v = val();
            rack_link_given = true;
            if (v.find(',') != std::string::npos) {
                Link l = parse_link(v, "--rack-link");
                o.rack_bandwidth = l.bandwidth;
                o.rack_latency = l.latency;
            } else {
                check(parse_latency(v, &o.rack_latency));
            }
        } else if (a == "--bisection") {
            char* end = nullptr;
            std::string v = val();
            o.bisection = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(o.bisection > 0) || o.bisection > 1000)
                die("bad --bisection '" + v + "' (a positive fraction, e.g. 0.25)");
        } else if (a == "--sizes") {
            sizes = val();
        } else if (a == "--elem") {
            o.elem = static_cast<std::size_t>(parse_int(val(), "--elem", 1));
        } else if (a == "--algs") {
            for (const auto& n : split(val(), ',')) {
                Algorithm alg;
                if (!algorithm_from_name(n, &alg) || alg == Algorithm::automatic) die("unknown algorithm '" + n + "'");
                o.algs.push_back(alg);
            }
        } else if (a == "--trees") {
            o.trees = parse_int(val(), "--trees", 1);
        } else if (a == "--factors") {
            for (const auto& f : split(val(), 'x')) o.factors.push_back(parse_int(f, "factor", 1));
        } else if (a == "--search-hring") {
            o.search_hring = true;
        } else if (a == "--levels") {
            o.levels = parse_int(val(), "--levels", 1);
        } else if (a == "--top") {
            o.top = parse_int(val(), "--top", 1);
        } else if (a == "--dims") {
            o.dims = true;
            o.model.record_round_ends = true;
        } else if (a == "--mem") {
            std::string m = val();
            if (m == "cuda")
                o.cuda = true;
            else if (m != "host")
                die("--mem wants host or cuda, got '" + m + "'");
        } else if (a == "--gpu-link") {
            std::string v = val();
            Status st = parse_gpu_link_class(v, &o.device.gpu);
            if (!st) die("bad --gpu-link '" + v + "': " + st.message());
        } else if (a == "--gpu-nic-link") {
            std::string v = val();
            Status st = parse_link_spec(v, &o.device.nic);
            if (!st) die("bad --gpu-nic-link '" + v + "': " + st.message());
        } else if (a == "--gpu-overhead") {
            check(parse_latency(val(), &o.device.overhead));
        } else if (a == "--gpu-nics") {
            o.device.nics = parse_int(val(), "--gpu-nics", 0);
        } else if (a == "--gpu-peer-link") {
            check(parse_bandwidth(val(), &o.device.peer_bandwidth));
        } else if (a == "--gpu-nic-path") {
            check(parse_bandwidth(val(), &o.device.nic_path_bandwidth));
        } else if (a == "--margin") {
            check(parse_fraction(val(), &o.margin));
        } else if (a == "--table-max") {
            check(parse_size(val(), &o.table_max));
        } else if (a == "--overhead") {
            check(parse_latency(val(), &o.model.overhead));
            o.overhead_given = true;
        } else if (a == "--reduce-bw") {
            double bw = 0;
            check(parse_bandwidth(val(), &bw));
            o.model.gamma = 1.0 / bw;
            o.gamma_given = true;
        } else if (a == "--mode") {
            std::string m = val();
            o.mode_given = true;
            if (m == "dataflow")
                o.model.mode = CostMode::dataflow;
            else if (m == "rounds")
                o.model.mode = CostMode::rounds;
            else
                die("--mode wants dataflow or rounds, got '" + m + "'");
        } else if (a == "--segment") {
            o.model.segment_bytes = parse_bytes(val());
            o.segment_given = true;
        } else if (a == "--flight") {
            o.model.flight_bytes = parse_bytes(val());
        } else if (a == "--unit-time") {
            check(parse_latency(val(), &o.unit_time));
        } else if (a == "--pipeline") {
            o.pipeline = parse_bytes(val());
            o.pipeline_given = true;
        } else if (a == "--wire-efficiency") {
            char* end = nullptr;
            std::string v = val();
            o.model.wire_efficiency = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(o.model.wire_efficiency > 0) || o.model.wire_efficiency > 1)
                die("bad --wire-efficiency '" + v + "' (a fraction in (0, 1])");
        } else if (a == "--cpu-share") {  // as coll_topoar_model_cpu_share: '0.25' or '25%'
            std::string v = val();
            check(parse_fraction(v, &o.model.message_cpu_share));
            if (o.model.message_cpu_share > 0.5) die("bad --cpu-share '" + v + "' (at most 0.5)");
            o.cpu_share_given = true;
        } else if (a == "--handshake-delay") {
            check(parse_latency(val(), &o.model.handshake_queue_delay));
        } else if (a == "--round-latency") {
            check(parse_latency(val(), &o.model.round_latency));
        } else if (a == "--flex-calls") {
            o.flex_calls = parse_bytes(val());
            if (o.flex_calls == 0) die("--flex-calls wants a slice size above 0");
        } else if (a == "--round-step") {
            const std::string v = val();
            const std::size_t comma = v.find(',');
            o.model.round_step_bytes = parse_bytes(v.substr(0, comma));
            o.model.round_step_bytes_node = comma == std::string::npos ? 0 : parse_bytes(v.substr(comma + 1));
        } else if (a == "--chunk") {
            o.chunk = parse_bytes(val());
        } else if (a == "--exact-flows") {
            o.model.exact_flows = static_cast<std::size_t>(parse_int(val(), "--exact-flows", 1));
        } else if (a == "--default-table") {
            o.default_table = true;
        } else if (a == "--eager") {
            o.model.eager_bytes = parse_bytes(val());
            o.eager_given = true;
        } else if (a == "--rules") {
            o.rules_file = val();
        } else if (a == "--csv") {
            o.csv_file = val();
        } else if (a == "-v") {
            o.verbose = true;
        } else {
            die("unknown option '" + a + "' (try --help)");
        }
    }
    const bool rounds = o.cuda && !o.mode_given ? true : o.model.mode == CostMode::rounds;  // device model: rounds
    if ((o.model.round_step_bytes > 0 || o.model.round_step_bytes_node > 0) && !rounds)
        die("--round-step applies to rounds mode (--mode rounds, or --mem cuda)");
    o.sizes = parse_sizes(sizes);
    if (o.sizes.empty()) die("no message sizes");
    if (o.bisection == 0 && !(rack_link_given && o.rack_bandwidth > 0)) o.bisection = 1;
    if (o.algs.empty())
        o.algs = o.cuda ? device_model_candidates() : model_candidates();  // device data: nccl_hier too
    int machines = (o.racks || o.nodes_per_rack || o.ranks_per_node) + !o.shape.empty() + !o.topology_file.empty();
    if (machines != 1) die("describe the machine with exactly one of --racks/--nodes-per-rack/--ranks-per-node, --shape, --topology");
    if (o.cuda) {  // the device executor's model, with what was given explicitly
        CostParams m = device_cost_params(o.device);
        if (o.overhead_given) m.overhead = o.model.overhead;
        if (o.gamma_given) m.gamma = o.model.gamma;
        if (o.mode_given) m.mode = o.model.mode;
        if (o.segment_given) m.segment_bytes = o.model.segment_bytes;
        if (o.eager_given) m.eager_bytes = o.model.eager_bytes;
        m.wire_efficiency = o.model.wire_efficiency;
        m.handshake_queue_delay = o.model.handshake_queue_delay;
        if (o.cpu_share_given) m.message_cpu_share = o.model.message_cpu_share;
        m.round_latency = o.model.round_latency;
        m.round_step_bytes = o.model.round_step_bytes;
        m.round_step_bytes_node = o.model.round_step_bytes_node;
        m.record_round_ends = o.model.record_round_ends;
        m.exact_flows = o.model.exact_flows;
        o.model = m;
    }
    return o;
}

// Racks of hosts of ranks: shape[r][n] = ranks on host n of rack r.  One
// rack: the hosts hang off the root (no rack switch).
Topology build_machine(const Options& o, const std::vector<std::vector<int>>& shape) {
    TopologyBuilder b;
    int next = 0, host = 0;
    const bool racks = shape.size() > 1;
    for (std::size_t r = 0; r < shape.size(); ++r) {
        int parent = b.root();
        if (racks) {
            double bw = o.rack_bandwidth;
            if (o.bisection > 0) {
                bw = 0;
                for (int g : shape[r])  // --mem cuda: the node's NICs for device data
                    bw += o.cuda ? o.device.nic.bandwidth * (o.device.nics > 0 ? std::min(o.device.nics, g) : g)
                                 : o.node_link.bandwidth;
                bw *= o.bisection;
            }
            parent = b.add(b.root(), Level::rack, "r" + std::to_string(r), Link{bw, o.rack_latency});
        }
        for (int g : shape[r]) {
            int h = b.add(parent, Level::node, "n" + std::to_string(host++), o.node_link);
            for (int k = 0; k < g; ++k) b.add_rank(h, next++, o.rank_link);
        }
    }
    Topology t;
    check(b.build(&t));
    return t;
}

Topology make_topology(const Options& o, std::string* what) {
    if (!o.topology_file.empty()) {
        Topology t;
        check(Topology::from_file(o.topology_file, &t));
        *what = o.topology_file;
        return t;
    }
    std::vector<std::vector<int>> shape;
    if (!o.shape.empty()) {
        for (const auto& rack : split(o.shape, ';')) {
            shape.emplace_back();
            for (const auto& g : split(rack, ',')) shape.back().push_back(parse_int(g, "ranks per node in --shape", 1));
        }
        *what = "shape \"" + o.shape + "\"";
    } else {
        int r = o.racks ? o.racks : 1, n = o.nodes_per_rack ? o.nodes_per_rack : 1,
            g = o.ranks_per_node ? o.ranks_per_node : 1;
        shape.assign(static_cast<std::size_t>(r), std::vector<int>(static_cast<std::size_t>(n), g));
        *what = std::to_string(r) + " racks x " + std::to_string(n) + " nodes x " + std::to_string(g) + " ranks";
    }
    return build_machine(o, shape);
}

// Seconds of CPU time of this process (the machine may be shared).
double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Result {
    bool ok = false;
    Code code = Code::ok;  // why not
    std::string note;
    double time = 0;       // predicted seconds
    double plan_cpu = 0;   // seconds to plan
    double sim_cpu = 0;    // seconds to predict
    Prediction pred;
};

Result evaluate(const Topology& topo, Algorithm alg, std::size_t bytes, const Options& o, const EngineConfig& cfg,
                PlanOptions popt) {
    Result r;
    std::size_t count = bytes / o.elem;
    if (count == 0) {
        r.note = "below one element";
        return r;
    }
    // As the engine cuts the call (call_units): chunks of chunk_size run one
    // after the other with one plan; large host calls use larger units.
    // The prediction is the chunk's, scaled by the chunks (and the
    // remainder's share).
    const CallUnits u = call_units(cfg, count, o.elem, o.cuda ? MemType::cuda : MemType::host, cfg.segment_size,
                                   static_cast<int>(topo.nodes_at(Level::node).size()));
    const double chunks = static_cast<double>(count) / static_cast<double>(u.chunk_count);
    count = u.chunk_count;
    popt.pipeline_elems = u.pipeline_bytes ? std::max<std::size_t>(1, u.pipeline_bytes / o.elem) : 0;
    CostParams model = o.model;
    if (!o.cuda) model.segment_bytes = u.segment_bytes;  // device: the device model's own
    if (alg == Algorithm::flexreduce && o.flex_calls > 0) {  // the paper's NCCL calls, not topoar's plan
        FlexLayout layout;
        double c0 = cpu_now();
        Status s = flex_layout(topo, count, &layout);
        r.plan_cpu = cpu_now() - c0;
        if (s) {
            c0 = cpu_now();
            s = predict_chain_calls(topo, flex_chain_calls(layout, o.elem), o.flex_calls, model, &r.pred);
            r.sim_cpu = cpu_now() - c0;
        }
        if (!s) {
            r.code = s.code();
            r.note = s.message();
            return r;
        }
        r.ok = true;
        r.time = r.pred.time * chunks;
        return r;
    }
    Plan plan;
    double c0 = cpu_now();
    Status s = make_plan(alg, topo, count, -1, popt, &plan);
    r.plan_cpu = cpu_now() - c0;
    if (!s) {
        r.code = s.code();
        r.note = s.message();
        return r;
    }
    c0 = cpu_now();
    s = predict(topo, plan, o.elem, model, &r.pred);
    r.sim_cpu = cpu_now() - c0;
    if (!s) {
        r.note = s.message();
        return r;
    }
    r.ok = true;
    r.time = r.pred.time * chunks;
    return r;
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string time_str(double s) {
    if (s < 1e-3) return fmt("%.1f us", s * 1e6);
    if (s < 1) return fmt("%.3f ms", s * 1e3);
    return fmt("%.3f s", s);
}

std::string human_size(std::size_t b) { return format_size(b); }

// Links in bits (as NICs are sold), memory paths in bytes.
std::string bw_str(double bytes_per_second) {
    if (bytes_per_second >= 1e9 / 8 * 1000) return fmt("%.4g Tbit/s", bytes_per_second * 8 / 1e12);
    if (bytes_per_second >= 1e9 / 8) return fmt("%.4g Gbit/s", bytes_per_second * 8 / 1e9);
    return fmt("%.4g Mbit/s", bytes_per_second * 8 / 1e6);
}

std::string lat_str(double s) {
    if (s < 1e-6) return fmt("%.4g ns", s * 1e9);
    if (s < 1e-3) return fmt("%.4g us", s * 1e6);
    return fmt("%.4g ms", s * 1e3);
}

// Time and bus bandwidth of each dimension of a hierarchical ring with
// factors f (hring paper, Tables II/III): dimension i is a ring of f[i]
// ranks over bytes / (f[0]...f[i-1]); its reduce-scatter takes rounds
// R(i)..R(i+1)-1 and its all-gather the mirror rounds at the end, R(i) =
// sum of f[j] - 1 for j < i.  A rank's time in a dimension runs from the end
// of its previous round (as a process timing its own call would see it);
// the mean over ranks is reported.  Needs every rank's round ends of the
// round-by-round replay (Prediction::rank_round_end), and every rank in
// every round (true of the hierarchical ring).  Bus bandwidth
// 2(f-1)/f * bytes_i / time_i, as the paper's tables.
bool dims_of(const Result& r, const std::vector<int>& f, std::size_t bytes, std::vector<double>* secs,
             std::vector<double>* busbw) {
    std::vector<std::size_t> R(f.size() + 1, 0);
    for (std::size_t i = 0; i < f.size(); ++i) R[i + 1] = R[i] + static_cast<std::size_t>(f[i] - 1);
    const std::size_t total = 2 * R.back();
    if (!r.ok || f.empty() || r.pred.rank_round_end.empty() || r.pred.time <= 0) return false;
    for (const auto& e : r.pred.rank_round_end)
        if (e.size() != total) return false;
    const double scale = r.time / r.pred.time;  // the call's chunks
    const double nranks = static_cast<double>(r.pred.rank_round_end.size());
    double n = static_cast<double>(bytes);
    secs->clear();
    busbw->clear();
    for (std::size_t i = 0; i < f.size(); ++i) {
        double t = 0;
        for (const auto& e : r.pred.rank_round_end) {
            auto end = [&](std::size_t k) { return k == 0 ? 0.0 : e[k - 1]; };
            t += end(R[i + 1]) - end(R[i]) + end(total - R[i]) - end(total - R[i + 1]);
        }
        t = t / nranks * scale;
        secs->push_back(t);
        busbw->push_back(t > 0 ? 2.0 * (f[i] - 1) / f[i] * n / t : 0);
        n /= f[i];
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    std::string what;
    const Topology host_topo = make_topology(o, &what);
    // --mem cuda: everything below runs on the device topology.
    Topology topo = host_topo;
    if (o.cuda) check(device_topology(host_topo, o.device, &topo));
    const int p = topo.num_ranks();
    std::vector<int> per_node;
    for (int h : topo.nodes_at(Level::node)) per_node.push_back(topo.num_ranks_under(h));
    const int racks = static_cast<int>(topo.nodes_at(Level::rack).size());
    CommShape shape = make_comm_shape(p, per_node, racks);

    // Device buffers: the planners' unit is coll_topoar_gpu_pipeline_size
    // unless --pipeline says otherwise (predictions and table alike).
    if (o.cuda) {
        if (o.pipeline_given) o.device.pipeline_bytes = o.pipeline;
        else o.pipeline = o.device.pipeline_bytes;
    }
    EngineConfig cfg;
    cfg.segment_size = o.model.segment_bytes;
    cfg.flight_size = o.model.flight_bytes;
    cfg.chunk_size = o.chunk;
    cfg.pipeline_size = o.pipeline;
    cfg.num_trees = o.trees;
    cfg.hring_factors = o.factors;
    cfg.gpu_model = o.device;  // --mem cuda: call_units takes the device pipelining unit from here
    if (!o.cuda && o.unit_time > 0) {
        // As the engine fits them on measured or described links
        // (units_for_links, coll_topoar_unit_time).
        cfg.unit_time = o.unit_time;
        cfg = units_for_links(cfg, topo);
        o.model.segment_bytes = cfg.segment_size;
        o.model.flight_bytes = cfg.flight_size;
        o.pipeline = cfg.pipeline_size;
    }
    PlanOptions popt = plan_options(cfg, o.elem);

    std::printf("topoar_sim: %s: %d ranks, %d nodes, %d racks%s\n", what.c_str(), p, shape.nodes, racks,
                o.cuda ? ", device buffers (mem=cuda)" : "");
    if (o.cuda) {
        std::printf("  device links: GPU %s %s, NIC %s %s %s", fmt("%.4g GB/s", o.device.gpu.bandwidth / 1e9).c_str(),
                    lat_str(o.device.gpu.latency).c_str(), bw_str(o.device.nic.bandwidth).c_str(),
                    lat_str(o.device.nic.latency).c_str(),
                    o.device.nics > 0 ? ("x " + std::to_string(o.device.nics) + " per node, shared by its GPUs").c_str()
                                      : "per GPU");
        if (o.device.peer_bandwidth > 0)
            std::printf(", GPU pairs %s", fmt("%.4g GB/s", o.device.peer_bandwidth / 1e9).c_str());
        if (o.device.nic_path_bandwidth > 0)
            std::printf(", GPU-NIC path %s", fmt("%.4g GB/s", o.device.nic_path_bandwidth / 1e9).c_str());
        std::string nodes;
        for (int h : topo.nodes_at(Level::node))
            if (nodes.size() < 200)
                nodes += (nodes.empty() ? "" : ", ") + topo.node(h).name + " " + std::to_string(topo.num_ranks_under(h)) +
                         " GPUs" + (h == topo.root() ? "" : " " + bw_str(topo.node(h).up.bandwidth));
        std::printf("%s%s%s\n", nodes.empty() ? "" : " (", nodes.c_str(), nodes.empty() ? "" : ")");
        for (int r : topo.nodes_at(Level::rack))
            std::printf("  rack %s up %s %s\n", topo.node(r).name.c_str(),
                        bw_str(topo.node(r).up.bandwidth).c_str(), lat_str(topo.node(r).up.latency).c_str());
    } else if (o.topology_file.empty()) {
        std::printf("  links: rank %s %s, node %s %s, rack ", fmt("%.4g GB/s", o.rank_link.bandwidth / 1e9).c_str(),
                    lat_str(o.rank_link.latency).c_str(), bw_str(o.node_link.bandwidth).c_str(),
                    lat_str(o.node_link.latency).c_str());
        if (racks == 0)
            std::printf("none\n");
        else if (o.bisection > 0)
            std::printf("%g x its node links (rack r0: %s) %s\n", o.bisection,
                        bw_str(topo.node(topo.nodes_at(Level::rack)[0]).up.bandwidth).c_str(),
                        lat_str(o.rack_latency).c_str());
        else
            std::printf("%s %s\n", bw_str(o.rack_bandwidth).c_str(), lat_str(o.rack_latency).c_str());
    }
    std::printf("  model: %s, overhead %s/message, reduction %s, segment %s, pipeline %s, eager %s, wire %.3g, "
                "handshake queue %s, flight %s, %zu-byte elements, CPU share %.3g per end\n",
                o.model.mode == CostMode::dataflow ? "dataflow" : "rounds",
                lat_str(o.model.overhead).c_str(),
                o.model.gamma > 0 ? fmt("%.4g GB/s", 1e-9 / o.model.gamma).c_str() : "free",
                o.model.segment_bytes ? format_size(o.model.segment_bytes).c_str() : "off",
                o.pipeline ? format_size(o.pipeline).c_str() : "off", format_size(o.model.eager_bytes).c_str(),
                o.model.wire_efficiency, lat_str(o.model.handshake_queue_delay).c_str(),
                o.model.flight_bytes ? format_size(o.model.flight_bytes).c_str() : "none", o.elem,
                o.model.mode == CostMode::dataflow ? o.model.message_cpu_share : 0.0);
    if (o.model.round_latency > 0 || o.chunk != EngineConfig{}.chunk_size)
        std::printf("  round latency %s, chunk %s\n", lat_str(o.model.round_latency).c_str(),
                    o.chunk ? format_size(o.chunk).c_str() : "off");
    if (o.model.round_step_bytes > 0 || o.model.round_step_bytes_node > 0)
        std::printf("  round steps of %s, within a host %s\n",
                    o.model.round_step_bytes ? format_size(o.model.round_step_bytes).c_str() : "any size",
                    o.model.round_step_bytes_node ? format_size(o.model.round_step_bytes_node).c_str() : "the same");

    if (o.flex_calls > 0)
        std::printf("  flexreduce as NCCL reduce/broadcast calls per subrange, slices of %s, levels in turn\n",
                    format_size(o.flex_calls).c_str());

    std::FILE* csv = nullptr;
    if (!o.csv_file.empty()) {
        csv = std::fopen(o.csv_file.c_str(), "w");
        if (!csv) die("cannot write " + o.csv_file);
        std::fprintf(csv, "algorithm,bytes,time_s,busbw_Bps,messages,busiest_link,busiest_bytes,plan_cpu_s,sim_cpu_s\n");
    }

    // results[a][s]
    std::vector<std::vector<Result>> results(o.algs.size(), std::vector<Result>(o.sizes.size()));
    std::vector<bool> skipped(o.algs.size(), false), noted(o.algs.size(), false);
    for (std::size_t a = 0; a < o.algs.size(); ++a) {
        for (std::size_t s = 0; s < o.sizes.size(); ++s) {
            Result& r = results[a][s];
            r = evaluate(topo, o.algs[a], o.sizes[s], o, cfg, popt);
            if (!r.ok && r.code == Code::unsupported) {
                std::printf("  note: %s skipped: %s\n", algorithm_name(o.algs[a]), r.note.c_str());
                skipped[a] = true;
                break;
            }
            if (!r.ok && (o.verbose || !noted[a])) {
                std::printf("  note: %s at %s: %s\n", algorithm_name(o.algs[a]), human_size(o.sizes[s]).c_str(),
                            r.note.c_str());
                noted[a] = true;
            }
            if (o.verbose && r.ok)
                std::printf("  %-18s %8s  %10s  plan %.2f s  sim %.2f s (CPU)  %zu messages, %zu events, "
                            "busiest %s (%.3g MB)\n",
                            algorithm_name(o.algs[a]), human_size(o.sizes[s]).c_str(), time_str(r.time).c_str(),
                            r.plan_cpu, r.sim_cpu, r.pred.messages, r.pred.events,
                            link_name(topo, r.pred.busiest_vertex, r.pred.busiest_up).c_str(),
                            r.pred.busiest_bytes / 1e6);
            if (csv && r.ok)
                std::fprintf(csv, "%s,%zu,%.9g,%.6g,%zu,%s,%.0f,%.3f,%.3f\n", algorithm_name(o.algs[a]), o.sizes[s],
                             r.time, bus_bandwidth(p, static_cast<double>(o.sizes[s]), r.time), r.pred.messages,
                             link_name(topo, r.pred.busiest_vertex, r.pred.busiest_up).c_str(), r.pred.busiest_bytes,
                             r.plan_cpu, r.sim_cpu);
            std::fflush(stdout);
        }
    }
    if (csv) std::fclose(csv);

    // The table: time and bus bandwidth per algorithm, best marked.
    std::printf("\npredicted time | bus bandwidth (GB/s, 2(P-1)/P * size / time); * = fastest\n");
    std::printf("%8s", "size");
    for (std::size_t a = 0; a < o.algs.size(); ++a)
        if (!skipped[a]) std::printf("  %22s", algorithm_name(o.algs[a]));
    std::printf("\n");
    std::vector<int> best(o.sizes.size(), -1);
    for (std::size_t s = 0; s < o.sizes.size(); ++s) {
        for (std::size_t a = 0; a < o.algs.size(); ++a)
            if (!skipped[a] && results[a][s].ok &&
                (best[s] < 0 || results[a][s].time < results[static_cast<std::size_t>(best[s])][s].time))
                best[s] = static_cast<int>(a);
        std::printf("%8s", human_size(o.sizes[s]).c_str());
        for (std::size_t a = 0; a < o.algs.size(); ++a) {
            if (skipped[a]) continue;
            const Result& r = results[a][s];
            if (!r.ok) {
                std::printf("  %22s", "-");
                continue;
            }
            std::string cell = time_str(r.time) + " |" +
                               fmt("%7.2f", bus_bandwidth(p, static_cast<double>(o.sizes[s]), r.time) / 1e9) +
                               (best[s] == static_cast<int>(a) ? "*" : " ");
            std::printf("  %22s", cell.c_str());
        }
        std::printf("\n");
    }

    // --dims: the hierarchical ring's dimensions.
    if (o.dims && !o.factors.empty())
        for (std::size_t a = 0; a < o.algs.size(); ++a) {
            if (o.algs[a] != Algorithm::hring || skipped[a]) continue;
            std::printf("\nhring %s per dimension (time | bus bandwidth GB/s):\n", format_hring_factors(o.factors).c_str());
            for (std::size_t s = 0; s < o.sizes.size(); ++s) {
                std::vector<double> t, bw;
                std::printf("%8s", human_size(o.sizes[s]).c_str());
                if (!dims_of(results[a][s], o.factors, o.sizes[s], &t, &bw)) {
                    std::printf("  (needs --mode rounds and a plan with every rank in every round)\n");
                    continue;
                }
                for (std::size_t i = 0; i < t.size(); ++i)
                    std::printf("  dim %zu (%d): %s |%8.3f", i + 1, o.factors[i], time_str(t[i]).c_str(), bw[i] / 1e9);
                std::printf("\n");
            }
        }

    // Decision table: ranges of sizes -> fastest algorithm.  A measured size
    // starts the range of its winner; the first range starts at 0 and the
    // last one is open.
    DecisionTable table;
    std::string origin_note;
    for (std::size_t s = 0; s < o.sizes.size();) {
        if (best[s] < 0) {
            ++s;
            continue;
        }
        std::size_t e = s;
        while (e + 1 < o.sizes.size() && best[e + 1] == best[s]) ++e;
        Rule rule;
        rule.size.lo = table.empty() ? 0 : o.sizes[s];
        rule.size.hi = e + 1 < o.sizes.size() ? o.sizes[e + 1] : SizeRange::kUnbounded;
        rule.ranks = CountRange{p, p};
        rule.nodes = CountRange{shape.nodes, shape.nodes};
        if (o.cuda) rule.mem = MemType::cuda;
        rule.algorithm = o.algs[static_cast<std::size_t>(best[s])];
        Status st = table.add(rule);
        if (!st) std::printf("  note: rule not added: %s\n", st.message().c_str());
        s = e + 1;
    }
    std::string comment = "topoar_sim prediction for " + what + " (" + std::to_string(p) + " ranks, " +
                          std::to_string(shape.nodes) + " nodes, " + std::to_string(racks) + " racks" +
                          (o.cuda ? ", device buffers" : "") + ")";
    std::string rules = table.to_text(comment);
    std::printf("\ndecision table (rules file, docs/rules-format.md):\n%s", rules.c_str());
    if (!o.rules_file.empty()) {
        std::ofstream f(o.rules_file);
        f << rules;
        if (!f) die("cannot write " + o.rules_file);
        std::printf("  written to %s\n", o.rules_file.c_str());
    }

    // Hierarchical ring factorizations.
    if (o.search_hring) {
        auto facts = hring_factorizations(p, o.levels);
        std::printf("\nhring factorizations of %d into at most %d factors (%zu), in topology order:\n", p, o.levels,
                    facts.size());
        std::printf("%8s  %24s  %12s  %12s  %s\n", "size", "best factors", "time", "busbw GB/s", "default hring");
        for (std::size_t s = 0; s < o.sizes.size(); ++s) {
            double best_t = 0;
            std::vector<int> best_f;
            std::vector<std::pair<double, std::vector<int>>> ranked;  // --top
            for (const auto& f : facts) {
                PlanOptions fo = popt;
                fo.factors = f;
                Result r = evaluate(topo, Algorithm::hring, o.sizes[s], o, cfg, fo);
                if (!r.ok) continue;
                ranked.emplace_back(r.time, f);
                if (best_f.empty() || r.time < best_t) {
                    best_t = r.time;
                    best_f = f;
                }
            }
            std::stable_sort(ranked.begin(), ranked.end(),
                             [](const auto& x, const auto& y) { return x.first < y.first; });
            std::string def = "-";
            for (std::size_t a = 0; a < o.algs.size(); ++a)
                if (o.algs[a] == Algorithm::hring && results[a][s].ok) def = time_str(results[a][s].time);
            if (best_f.empty()) {
                std::printf("%8s  %24s\n", human_size(o.sizes[s]).c_str(), "(hring unavailable)");
                continue;
            }
            std::printf("%8s  %24s  %12s  %12.2f  %s\n", human_size(o.sizes[s]).c_str(),
                        format_hring_factors(best_f).c_str(), time_str(best_t).c_str(),
                        bus_bandwidth(p, static_cast<double>(o.sizes[s]), best_t) / 1e9, def.c_str());
            for (std::size_t k = 1; k < ranked.size() && k < static_cast<std::size_t>(o.top); ++k)
                std::printf("%8s  %24s  %12s  %12.2f  (#%zu)\n", "", format_hring_factors(ranked[k].second).c_str(),
                            time_str(ranked[k].first).c_str(),
                            bus_bandwidth(p, static_cast<double>(o.sizes[s]), ranked[k].first) / 1e9, k + 1);
            std::fflush(stdout);
        }
    }

    // The table Engine::setup would build (budgeted), and its cost.
    if (o.default_table) {
        // The engine's options (ladder, budget), with this run's model.
        DefaultTableOptions dto = table_options(cfg);
        dto.elem_size = o.elem;
        dto.plan = popt;
        dto.min_gain = o.margin;
        if (o.table_max) dto.max_bytes = o.table_max;
        // --mem cuda: what build_device_default_table does with the engine's
        // options, on the device topology built above.
        if (o.cuda) dto = device_table_options(dto, o.device);
        dto.model = o.model;
        DecisionTable dt;
        DefaultTableReport rep;
        double c0 = cpu_now();
        auto w0 = std::chrono::steady_clock::now();
        check(build_default_table(topo, dto, &dt, &rep));
        double cpu = cpu_now() - c0;
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        std::printf("\n%s (%s): %.3f s CPU, %.3f s wall, %zu predictions, %zu executor steps\n%s",
                    o.cuda ? "device default table" : "default table",
                    o.cuda ? "common/model/device_model.hpp, build_device_default_table"
                           : "common/model/default_table.hpp, what Engine::setup builds",
                    cpu, wall, rep.predictions, rep.steps,
                    dt.to_text(std::string("cost model, ") + (o.cuda ? "device buffers, " : "") + what).c_str());
        for (const auto& n : rep.notes) std::printf("  note: %s\n", n.c_str());
    }

    // Cost of the simulation itself.
    std::printf("\nsimulator cost (CPU seconds, max over sizes): ");
    for (std::size_t a = 0; a < o.algs.size(); ++a) {
        if (skipped[a]) continue;
        double pl = 0, si = 0;
        for (const Result& r : results[a]) {
            pl = std::max(pl, r.plan_cpu);
            si = std::max(si, r.sim_cpu);
        }
        std::printf("%s%s plan %.2f + predict %.2f", a ? "; " : "", algorithm_name(o.algs[a]), pl, si);
    }
    std::printf("\n");
    return 0;
}
