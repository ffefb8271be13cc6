// topoar engine: what an engine is configured with.
//
// Below the cost model and everything else that reads a configuration
// (tests/check-engine-headers.sh ranks the folders): plain data, each
// field the parameter table sets (config/params.hpp) set by the
// constructor from the table's default, so a default is written once, in
// that table.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/params.hpp"
#include "core/algorithm.hpp"
#include "topology/discovery.hpp"
#include "topology/probe.hpp"
#include "topology/topology.hpp"

namespace topoar {

// coll_topoar_send_credit's values, in its keywords' order.
enum class SendCredit { never = 0, automatic = 1, always = 2 };

// The device cost model's parameters (model/device_model.hpp reads them).
struct DeviceModel {
    // coll_topoar_gpu_link: a GPU's link to the node's GPU fabric.
    Link gpu = default_gpu_link();
    // coll_topoar_gpu_nic_link: the NIC of one GPU (node up-link = this
    // times the node's GPUs).
    Link nic = default_gpu_nic_link();
    // coll_topoar_gpu_model_overhead: software cost per message, seconds.
    double overhead = default_gpu_model_overhead();
    // coll_topoar_gpu_pipeline_size: the planners' pipelining unit for
    // device buffers, bytes (0: none).
    std::size_t pipeline_bytes = default_gpu_pipeline_size();
    // NICs per node shared by its GPUs, each of `nic` (ABCI: 2 EDR HCAs for
    // 4 V100); every GPU's traffic off the node crosses its own NIC
    // (CostParams::node_nics).  0: one NIC per GPU, pooled (DGX H100).
    int nics = 0;
    // Bandwidth of the direct links between two GPUs of a node, per
    // direction (an NVLink mesh without NVSwitch; CostParams::peer_bandwidth).
    // 0: a switch, any peer reachable at the GPU's whole link.
    double peer_bandwidth = 0;
    // Bandwidth of the path between a GPU and the node's NICs, per GPU and
    // direction (PCIe through the GPU's switch: ABCI's Fig. 2 gives 128
    // GT/s, Gen3 x16, 15.75 GB/s), crossed by every flow of the GPU that
    // leaves or enters the node, not by NVLink traffic inside it
    // (CostParams::nic_path_bandwidth).  0: no such limit.
    double nic_path_bandwidth = 0;
    // Not parameters (see the top of this file).
    double gamma = 1.0 / 741e9;
    std::size_t eager_bytes = std::size_t(4) << 20;
};

// What an engine is configured with.  The fields the MCA parameters set
// carry the parameter's name, and their defaults come from the parameter
// table (config/params.hpp), applied by the constructor: set_param(&cfg, name,
// text) sets one by name, as the glue does.
struct EngineConfig {
    EngineConfig();  // every parameter of config/params.hpp at its default

    // coll_topoar_allreduce_algorithm: forced, or auto.
    Algorithm algorithm;
    // coll_topoar_segment_size: largest message the executor sends
    // (operations are cut into steps of this size and flow step by step).
    // At or below the TCP BTL's eager limit (64 KiB) no message waits for a
    // rendezvous handshake, which behind a full switch queue costs a
    // queueing delay each.
    std::size_t segment_size;
    // coll_topoar_pipeline_size: pipelining unit planners build into their
    // rounds (0: none; the executor's step-wise dataflow already pipelines
    // chains and trees).
    std::size_t pipeline_size;
    // coll_topoar_flight_size: across hosts, the bytes a rank keeps in
    // flight to one peer: the executor opens fewer rounds at once
    // (flight_window: two for rounds of a few units) and large calls
    // pipeline in units of at most half of it (0: no bound, four rounds
    // open; exec/schedule_policy.hpp).
    std::size_t flight_size;
    // coll_topoar_send_credit: whether sends to peers on other hosts under
    // the flight bound are synchronous and credited (ExecProgram::send_credit):
    // auto from the first call during which the host retransmitted
    // (exec/tcp_retransmissions.hpp).
    SendCredit send_credit;
    // coll_topoar_unit_time: across hosts on measured or described links,
    // the three above grow to what the slowest host link carries in this
    // time (seconds; 0: never): link_unit in exec/schedule_policy.hpp,
    // units_for_links in engine/selection.hpp.
    double unit_time;
    // coll_topoar_chunk_size: a call of more bytes runs as consecutive
    // chunks of this size (0: never), each with the same cached plan.
    std::size_t chunk_size;
    // coll_topoar_single_node_fallback: auto on a communicator within one
    // host hands the call down (tuned's shared-memory algorithms are faster
    // there than topoar's network-shaped ones; measured in
    // docs/performance.md).  A rules file still applies.
    bool single_node_fallback;
    // coll_topoar_small_msg_size: built-in choice when neither a rules file
    // nor the cost-model table decides: the latency algorithm up to this
    // size, trees above.
    std::size_t small_msg_size;
    // coll_topoar_model_table: auto's default table computed at set-up from
    // the cost model for the discovered topology (default_table.hpp); false
    // = only the fixed built-in choice above.
    bool model_table;
    // coll_topoar_model_overhead: the model's software cost per message,
    // seconds (auto: 40 us, and measured where set-up measures the links:
    // Engine::model_overhead).  given: set to a time, not auto; that
    // value then wins over a measured one.
    double model_overhead;
    bool model_overhead_given = false;
    // coll_topoar_model_margin: how much faster (a fraction) a candidate
    // must be predicted than a simpler one (algorithm.hpp's simplicity
    // order) to win a size of the default table.
    double model_margin;
    // coll_topoar_model_cpu_share: the share of the per-message cost each
    // end's CPU spends (CostParams::message_cpu_share), 0..0.5.
    double model_cpu_share;
    int num_trees = 0;              // aggregation trees (0: planner's choice)
    std::vector<int> hring_factors; // hierarchical ring (empty: from topology)
    // coll_topoar_topology_file, _rack_file and the *_link defaults.
    DiscoveryOptions discovery;
    // coll_topoar_probe: measure the links between hosts at set-up when no
    // file, Slurm address or coll_topoar_node_link describes them
    // (topology/probe.hpp, topology/measured.hpp); coll_topoar_probe_time:
    // what all probe rounds together aim at.
    bool probe;
    ProbeOptions probe_options;
    bool node_link_given = false;  // coll_topoar_node_link was set
    // coll_topoar_adapt, _adapt_interval, _adapt_threshold, _adapt_max:
    // online adaptation on measured links.  Calls of at least
    // adapt_min_bytes are timed against the cost model's prediction; every
    // adapt_interval of them the ranks compare notes, and when they ran
    // more than adapt_threshold slower (relative) than in the first window
    // after set-up, the links are measured again and the table and plans
    // rebuilt, at most adapt_max times per communicator.
    bool adapt;
    int adapt_interval;
    double adapt_threshold;
    int adapt_max;
    std::size_t adapt_min_bytes = std::size_t(1) << 20;
    // coll_topoar_model_check: auto's host calls of at least
    // adapt_min_bytes on measured links check the table's choice by timing
    // it, and try the plans predicted faster than it ran
    // (decide/model_check.hpp).
    bool model_check = true;
    // coll_topoar_trial_calls, _trial_max_size: auto's host calls across
    // hosts of at most trial_max_size bytes are a contest for their
    // power-of-two size class first: the table's choice, the previous
    // module and the latency algorithm each run trial_calls timed calls,
    // then the ranks agree on the fastest (decide/trials.hpp).  0: none.
    int trial_calls;
    std::size_t trial_max_size;
    // coll_topoar_trial_watch: after a contest its winner's calls are
    // watched (a window of them timed, pooled), and a winner that runs
    // well above its contest time lets the others run a window each
    // (decide/trials.hpp).
    bool trial_watch = true;
    // coll_topoar_deferred_setup: auto across hosts, a communicator's first
    // call of at most trial_max_size bytes goes to the previous module
    // while a nonblocking allgather of the ranks' records travels; the next
    // call completes the set-up (the glue: coll_topoar_host.c).
    bool deferred_setup = true;
    // coll_topoar_contest_cache_dir: "" (the default) keeps the contests'
    // outcomes for the job only; a directory keeps them across jobs in a
    // file per cluster, communicator shape, build and settings
    // (engine/outcome_store.hpp), read by rank 0 and agreed at set-up.
    std::string contest_cache_dir;
    // coll_topoar_gpu_link, _gpu_nic_link, _gpu_model_overhead: the cost
    // model for device buffers (model/device_model.hpp; its table:
    // build_device_default_table).
    DeviceModel gpu_model;
    // coll_topoar_rules_file (docs/rules-format.md) that auto consults
    // first; "" = none.
    std::string rules_file;
};

}  // namespace topoar
