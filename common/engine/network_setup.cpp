// The per-job caches of network set-up (network_setup.hpp).
#include "engine/network_setup.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace topoar {

std::string table_options_key(const DefaultTableOptions& o) {
    std::ostringstream k;
    k.precision(17);
    const CostParams& m = o.model;
    k << o.elem_size << ' ' << o.plan.pipeline_elems << ' ' << o.plan.num_trees << ' '
      << static_cast<int>(o.plan.hier_inter) << ' ' << o.plan.hier_small_elems << ' ';
    for (int f : o.plan.factors) k << f << ',';
    k << ' ' << static_cast<int>(m.mode) << ' ' << m.overhead << ' ' << m.gamma << ' ' << m.segment_bytes << ' '
      << m.flight_bytes << ' ' << m.eager_bytes << ' ' << m.unknown_bandwidth << ' ' << m.wire_efficiency << ' ' << m.handshake_queue_delay
      << ' ' << m.exact_flows << ' ' << m.rate_quantum << ' ' << o.min_bytes << ' ' << o.max_bytes << ' '
      << o.full_max_bytes << ' ' << o.size_factor << ' ' << static_cast<int>(o.mem) << ' ' << o.min_gain << ' ' << o.max_steps << ' '
      << o.max_total_steps << ' ' << o.coarse_ranks << ' ' << o.max_ranks << ' ';
    for (Algorithm a : o.candidates) k << static_cast<int>(a) << ',';
    return k.str();
}

namespace {

// auto's default tables already built by this process, by (topology,
// table options): a pure function of those, so a communicator over the
// same shape -- the same group again, a dup, any group on hosts of the
// same sizes and links -- takes it instead of simulating again (6-27 ms for
// 4-8 ranks on two hosts, measured; short-lived communicators pay that on
// their first call).  Every rank finds or computes the same table, so no
// agreement is needed.  Bounded; thread-safe (communicators may be set up
// concurrently under MPI_THREAD_MULTIPLE).
struct CachedTable {
    DecisionTable table;
    DefaultTableReport report;
};

// The table depends on the tree's shape, ranks and links, not on the names
// of hosts and racks: groups on other hosts with the same ranks per host
// and the same links share an entry.  The key is the tree's fields as raw
// bytes (exact links; building it takes a few microseconds where writing
// the topology as text, the key before, took a third of a millisecond of
// every fresh communicator's set-up on the emulated clusters).
template <typename T>
void put_raw(std::string* k, const T& v) {
    k->append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string table_key(const Topology& topo, const DefaultTableOptions& o) {
    std::string k;
    k.reserve(static_cast<std::size_t>(topo.num_nodes()) * 40 + 256);
    put_raw(&k, topo.num_nodes());
    for (const TopoNode& n : topo.nodes()) {
        put_raw(&k, static_cast<int>(n.level));
        put_raw(&k, n.parent);
        put_raw(&k, n.rank);
        put_raw(&k, n.up.bandwidth);
        put_raw(&k, n.up.latency);
        put_raw(&k, static_cast<int>(n.children.size()));
        for (int c : n.children) put_raw(&k, c);
    }
    return k + table_options_key(o);
}

constexpr std::size_t kMaxCachedTables = 32;
std::mutex table_cache_mutex;
std::map<std::string, std::shared_ptr<const CachedTable>>& table_cache() {
    static std::map<std::string, std::shared_ptr<const CachedTable>> cache;
    return cache;
}

}  // namespace

Status mean_over_ranks(SetupIo& io, int size, double mine, double* mean) {
    std::vector<double> all(static_cast<std::size_t>(size), 0.0);
    TOPOAR_TRY(io.allgather(&mine, sizeof mine, all.data()));
    double sum = 0;
    for (double x : all) sum += x;
    *mean = sum / static_cast<double>(size);
    return Status::ok();
}

Status build_default_table_cached(const Topology& topo, const DefaultTableOptions& opts, DecisionTable* table,
                                  DefaultTableReport* report, bool* hit) {
    const std::string key = table_key(topo, opts);
    {
        std::lock_guard<std::mutex> lock(table_cache_mutex);
        auto it = table_cache().find(key);
        if (it != table_cache().end()) {
            *table = it->second->table;
            *report = it->second->report;
            if (hit) *hit = true;
            return Status::ok();
        }
    }
    if (hit) *hit = false;
    auto built = std::make_shared<CachedTable>();
    TOPOAR_TRY(build_default_table(topo, opts, &built->table, &built->report));
    *table = built->table;
    *report = built->report;
    std::lock_guard<std::mutex> lock(table_cache_mutex);
    if (table_cache().size() >= kMaxCachedTables) table_cache().clear();
    table_cache().emplace(key, std::move(built));
    return Status::ok();
}

// Measured networks of this process, widest first; later communicators
// over the same hosts or a subset reuse them (RankInfo::probe_digest).
namespace {
constexpr std::size_t kMaxMeasuredNetworks = 8;
std::mutex measured_mutex;
std::vector<MeasuredNetwork>& measured_networks() {
    static std::vector<MeasuredNetwork> nets;
    return nets;
}
}  // namespace

// replace: the network changed (online adaptation): forget every earlier
// measurement that shares a host with this one.
void remember_network(const MeasuredNetwork& net, bool replace) {
    std::lock_guard<std::mutex> lock(measured_mutex);
    auto& nets = measured_networks();
    if (replace)
        nets.erase(std::remove_if(nets.begin(), nets.end(),
                                  [&](const MeasuredNetwork& old) {
                                      for (const std::string& h : old.hosts)
                                          if (std::find(net.hosts.begin(), net.hosts.end(), h) != net.hosts.end())
                                              return true;
                                      return false;
                                  }),
                   nets.end());
    const std::uint64_t d = net.digest();
    for (const MeasuredNetwork& n : nets)
        if (n.digest() == d) return;
    if (nets.size() >= kMaxMeasuredNetworks) nets.pop_back();
    nets.push_back(net);
    std::stable_sort(nets.begin(), nets.end(),
                     [](const MeasuredNetwork& a, const MeasuredNetwork& b) { return a.hosts.size() > b.hosts.size(); });
}

bool find_network(std::uint64_t digest, const std::vector<std::string>& hosts, MeasuredNetwork* out) {
    std::lock_guard<std::mutex> lock(measured_mutex);
    for (const MeasuredNetwork& n : measured_networks())
        if (n.digest() == digest) return n.restrict_to(hosts, out);
    return false;
}

// The widest measured network of this process that holds all `hosts`,
// restricted to them.
static bool find_covering(const std::vector<std::string>& hosts, MeasuredNetwork* out) {
    std::lock_guard<std::mutex> lock(measured_mutex);
    for (const MeasuredNetwork& n : measured_networks())
        if (n.restrict_to(hosts, out)) return true;
    return false;
}

// The lowest rank with a network holding every host of the communicator
// sends it to the others (point-to-point; sizes known from one allgather):
// ranks that measured in different earlier communicators agree on one
// measurement instead of probing again.  False: nobody has one.
Status share_network(const std::vector<std::string>& names, int rank, int size, SetupIo& io, MeasuredNetwork* net,
                     bool* shared) {
    *shared = false;
    MeasuredNetwork mine;
    std::string bytes;
    if (find_covering(names, &mine)) bytes = mine.to_bytes();
    const std::uint64_t len = bytes.size();
    std::vector<std::uint64_t> lens(static_cast<std::size_t>(size), 0);
    TOPOAR_TRY(io.allgather(&len, sizeof len, lens.data()));
    int src = -1;
    for (int r = 0; r < size && src < 0; ++r)
        if (lens[static_cast<std::size_t>(r)] > 0) src = r;
    if (src < 0) return Status::ok();
    Transport& t = *io.transport;
    if (rank == src) {
        for (int r = 0; r < size; ++r) {
            if (r == src) continue;
            Transport::Request req = nullptr;
            TOPOAR_TRY(t.isend(bytes.data(), bytes.size(), r, &req));
            TOPOAR_TRY(t.wait(&req));
        }
        *net = std::move(mine);
    } else {
        std::string in(static_cast<std::size_t>(lens[static_cast<std::size_t>(src)]), '\0');
        Transport::Request req = nullptr;
        TOPOAR_TRY(t.irecv(&in[0], in.size(), src, &req));
        TOPOAR_TRY(t.wait(&req));
        if (!MeasuredNetwork::from_bytes(in, net) || net->hosts != names)
            return Status::internal("the measured network rank " + std::to_string(src) + " sent does not read back");
    }
    *shared = true;
    return Status::ok();
}

std::uint64_t probe_cache_digest() {
    std::lock_guard<std::mutex> lock(measured_mutex);
    return measured_networks().empty() ? 0 : measured_networks().front().digest();
}

void clear_probe_cache() {
    std::lock_guard<std::mutex> lock(measured_mutex);
    measured_networks().clear();
}

const char* to_string(NetworkSource s) {
    switch (s) {
    case NetworkSource::single_host: return "one host";
    case NetworkSource::described: return "described (file or Slurm)";
    case NetworkSource::assumed: return "assumed (built-in or coll_topoar_*_link defaults)";
    case NetworkSource::measured: return "measured at this set-up";
    case NetworkSource::cached: return "measured earlier in this job";
    }
    return "?";
}

}  // namespace topoar
