// topoar cost model, part 2 of 3: the network sharing model.
//
//   message a -> b:   one "flow" over the tree path
//
//                          lca
//                   up ↗        ↘ down          every edge is full duplex:
//                 ...              ...          its up and down directions
//            up ↗                      ↘ down   are separate links with the
//           a                            b      edge's bandwidth
//
//       t_deliver = t_drained + sum(edge latencies) + overhead
//       the bytes drain at the flow's max-min fair share of every link on
//       its path, recomputed whenever a flow starts or ends (progressive
//       filling), so two flows over one link each get half of it.
//
// A rank pair's messages leave one after the other (one connection, the
// "wire" of its Box).  Which message may go next, and what its draining
// means, is the replay's business (NetworkClient); replay.hpp has the two
// replays.  Internal to the cost model (cost_model.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "model/event_queue.hpp"
#include "topology/topology.hpp"

namespace topoar {
namespace model {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A directed rank pair: its path through the tree and its message queues.
struct Box {
    int src = -1, dst = -1;
    std::vector<int> path;   // every link crossed (for the byte counts)
    std::vector<int> links;  // the ones with finite bandwidth (for sharing)
    double latency = 0;      // path latency + overhead
    IntQueue wire;           // messages sent and not yet drained, in order
    IntQueue unmatched_msgs;
    IntQueue unmatched_slots;
    bool flowing = false;
    bool armed = false;      // dataflow: a kWireReady event is pending
};

struct Flow {
    int msg = -1;
    int box = -1;
    double remaining = 0;  // bytes left at time `last`
    double rate = 0;       // bytes per second since `last`
    double last = 0;
    std::uint32_t version = 0;  // 29 bits used
    std::vector<int> links;  // the box's limited links, copied here for locality
    std::vector<int> pos;    // index in active[link] for each of links
};

// What the network asks of the replay that feeds it.
class NetworkClient {
public:
    virtual ~NetworkClient() = default;
    // The pair's front message if it may go now (*bytes: its size); -1 if not.
    virtual int ready_front(int box, double t, double* bytes) = 0;
    // Message `msg` of `box` has drained at t (the sender's send is done; it
    // reaches the receiver one path latency later).
    virtual void drained(int box, int msg, double t) = 0;
};

class Network {
public:
    Network(const Topology& topo, const CostParams& params);
    void set_client(NetworkClient* client) { client_ = client; }
    const Topology& topology() const { return topo_; }

    // The directed pair src -> dst (made on first use).
    int box_of(int src, int dst);
    Box& box(int id) { return boxes_[static_cast<std::size_t>(id)]; }
    std::size_t num_boxes() const { return boxes_.size(); }
    // Starts the pair's front message if the client says it may go.
    void try_start_wire(int box, double t);
    // Whether the direction opposite to b's path carries data now (a
    // handshake answer would queue behind it).
    bool reverse_busy(const Box& b) const;

    // The event queue, shared with the replay.
    void push(double t, EventType type, std::uint32_t id, std::uint32_t version = 0) {
        heap_.push(Event{t, id, (version << kTypeBits) | type});
    }
    EventQueue& queue() { return heap_; }
    // A kFlowEnd event: false if a rate change superseded it.
    bool flow_end(const Event& e, double t) {
        if (flows_[e.id].version != (e.tag >> kTypeBits)) return false;
        end_flow(static_cast<int>(e.id), t);
        return true;
    }
    // A kRecompute event: recompute_rates does the work.
    void recompute_due() { recompute_armed_ = false; }
    void recompute_rates(double t);

    // Messages, bytes, rate updates and the per-link statistics.
    void report(Prediction* out) const;

    // For models that move data without this class's flows (chain_calls.hpp):
    // a link's capacity (bytes/s, infinity if unlimited), how many links
    // there are, and `bytes` in `messages` messages over box's path counted
    // in the statistics report() gives.
    double capacity(int link) const { return cap_[static_cast<std::size_t>(link)]; }
    std::size_t num_links() const { return cap_.size(); }
    void account(int box, double bytes, std::size_t messages);

private:
    void count_message(int box, double bytes);
    void start_flow(int msg, int box, double bytes, double t);
    void end_flow(int flow, double t);
    void set_rate(int flow, double rate, double t);
    void mark_dirty(int link) {
        if (dirty_stamp_[static_cast<std::size_t>(link)] != dirty_epoch_) {
            dirty_stamp_[static_cast<std::size_t>(link)] = dirty_epoch_;
            dirty_.push_back(link);
        }
    }
    double provisional_rate(int flow) const;

    const Topology& topo_;
    CostParams params_;
    NetworkClient* client_ = nullptr;

    // The extra links of device data (CostParams::node_nics, peer_bandwidth):
    // pairs of links (up, down) numbered from 2 * vertices on.
    void add_device_links();
    int add_link_pair(double bandwidth);
    // The node's vertex of a rank and its index among the node's ranks.
    std::vector<int> rank_node_, rank_local_;
    std::vector<int> nic_base_;   // per vertex: first NIC pair, -1 if none
    std::vector<int> nic_count_;  // per vertex: NICs
    std::vector<int> peer_base_;  // per vertex: first peer pair (G x G), -1 if none
    int path_base_ = -1;          // first GPU-NIC path pair (one per rank), -1 if none

    std::vector<double> cap_;                  // per link (2 * vertex + down; then the extra pairs)
    std::vector<std::vector<int>> active_;     // flows on each link
    std::vector<double> link_bytes_;
    std::vector<std::uint32_t> link_stamp_, dirty_stamp_;
    std::vector<double> rem_;                  // progressive filling scratch
    std::vector<int> cnt_;
    std::vector<int> dirty_;
    std::uint32_t dirty_epoch_ = 1, bfs_epoch_ = 0;

    std::vector<Box> boxes_;
    std::vector<std::vector<std::pair<int, int>>> out_boxes_;  // per src: (dst, box), sorted
    std::vector<Flow> flows_;
    std::vector<int> free_flows_;
    std::vector<std::uint32_t> flow_stamp_;
    std::vector<double> new_rate_;

    EventQueue heap_;

    std::vector<int> comp_links_, comp_flows_, stack_;
    std::vector<std::pair<double, int>> link_heap_;
    // Rates of many flows: recomputed at most every quantum_ (see
    // recompute_rates); used_[l] = sum of the rates on link l.
    std::vector<double> used_;
    std::vector<int> unrated_;  // flows started since the last recomputation, no rate yet
    std::size_t active_flows_ = 0;
    double quantum_ = 0, next_recompute_ = 0;
    bool recompute_armed_ = false;
    std::size_t messages_ = 0, rate_updates_ = 0;
    double bytes_sent_ = 0;
};

}  // namespace model
}  // namespace topoar
