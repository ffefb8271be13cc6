// topoar_probe: measures the links between the job's hosts as topoar's
// set-up does when no file describes them (coll_topoar_probe), and writes
// the result as a topology file a user can keep, edit and pass with
// coll_topoar_topology_file (no probing then).
//
//   mpirun --map-by node [-np N] topoar_probe [-o FILE] [--probe-time T] [--ranks]
//
// Run it on the hosts of the jobs it is for, with at least one rank per
// host (two on a host to measure inside it).  Without --ranks the file
// describes racks and hosts only, so it fits any job on those hosts (ranks
// and sockets are discovered at run time); with --ranks it is this job's
// complete tree.  The measured values go to stderr as well.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "topoar_engine.h"
#include "topoar_mpi_io.h"
#include "topology/measured.hpp"
#include "topology/topology.hpp"

using namespace topoar;

namespace {

void usage() {
    std::printf(
        "usage: topoar_probe [-o FILE] [--probe-time T] [--ranks]\n"
        "Measures the links between the hosts of this job (one leader per host, pairs of\n"
        "hosts probed concurrently, round-robin) and writes them in the topology file\n"
        "format (docs/topology-format.md) to FILE or stdout.  T: what all probes together\n"
        "aim at (default: coll_topoar_probe_time's default, 300ms).  --ranks: write this\n"
        "job's full tree with its ranks instead of the racks and hosts alone.\n");
}

// human_bandwidth / human_latency ("512.3 Mbit/s") as one word of the
// file format ("512.3Mbit/s").
std::string word(std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    return s;
}

// Racks, spines and hosts with their up-links; what lies inside a host is
// discovered at run time.
std::string structure_text(const Topology& t, const std::string& comment) {
    std::string out = "# topoar topology v1\n" + comment;
    for (const TopoNode& v : t.nodes()) {
        if (v.level != Level::spine && v.level != Level::rack && v.level != Level::node) continue;
        int depth = 0;
        for (int p = v.parent; p >= 0; p = t.node(p).parent)
            if (t.node(p).level == Level::spine || t.node(p).level == Level::rack) ++depth;
        out += std::string(static_cast<std::size_t>(2 * depth), ' ') + to_string(v.level) + " " + v.name +
               " bw=" + word(human_bandwidth(v.up.bandwidth, true)) + " lat=" + word(human_latency(v.up.latency));
        if (v.level == Level::node && !v.children.empty()) {
            const TopoNode& first = t.node(v.children.front());
            if (first.is_leaf() && v.children.size() > 1)
                out += "  # inside: " + human_bandwidth(first.up.bandwidth, false);
        }
        out += "\n";
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::string out_path, probe_time;
    bool with_ranks = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "-o" || a == "--probe-time") && i + 1 < argc) {
            (a == "-o" ? out_path : probe_time) = argv[++i];
        } else if (a == "--ranks") {
            with_ranks = true;
        } else {
            if (rank == 0) {
                if (a != "-h" && a != "--help") std::fprintf(stderr, "topoar_probe: unknown option %s\n", a.c_str());
                usage();
            }
            MPI_Finalize();
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }

    // A fresh process has measured nothing: set-up probes.
    const char* names[] = {"allreduce_algorithm", "model_table", "probe", "probe_time"};
    const char* values[] = {"ring", "0", "1", probe_time.c_str()};
    topoar_config_t cfg{4, names, values};
    MPI_Comm comm;
    topoar_transport_t transport;
    topoar_setup_io_t io;
    topoar_engine_t* e = nullptr;
    double t0 = MPI_Wtime();
    int rc = topoar_mpi_engine_setup(&cfg, &comm, &transport, &io, &e) == TOPOAR_OK ? 0 : 1;
    if (!e) MPI_Abort(MPI_COMM_WORLD, 1);
    double took = MPI_Wtime() - t0;
    if (rank == 0) {
        std::string description = topoar_engine_describe(e);
        std::string text = topoar_engine_topology_text(e);
        Topology t;
        if (rc != 0) {
            std::fprintf(stderr, "topoar_probe: set-up failed: %s\n", topoar_engine_error(e));
        } else if (description.find("links between hosts: measured") == std::string::npos) {
            std::fprintf(stderr, "topoar_probe: nothing was measured (%s)\n",
                         description.find("links between hosts") == std::string::npos
                             ? "all ranks on one host"
                             : description.substr(description.find("links between hosts")).c_str());
            rc = 1;
        } else if (!Topology::from_text(text, "measured", &t)) {
            std::fprintf(stderr, "topoar_probe: internal error: the measured tree does not read back\n");
            rc = 1;
        } else {
            std::fprintf(stderr, "topoar_probe: %d ranks, set-up with probes took %.1f ms\n%s", size, took * 1e3,
                         description.substr(description.find("links between hosts")).c_str());
            // The file's latencies are what the measured one-way times
            // leave beyond the software cost per message; a job reading
            // the file measures nothing, so that cost must come with it.
            char comment[384];
            const double cost_us = topoar_engine_model_overhead(e) * 1e6;
            std::snprintf(comment, sizeof comment,
                          "# measured by topoar_probe on %d ranks; latencies exclude the cost model's\n"
                          "# software cost per message, %.3gus here: use this file with\n"
                          "# --mca coll_topoar_model_overhead %.3gus\n",
                          size, cost_us, cost_us);
            const std::string body = with_ranks ? std::string(comment) + text : structure_text(t, comment);
            FILE* f = out_path.empty() ? stdout : std::fopen(out_path.c_str(), "w");
            if (!f) {
                std::fprintf(stderr, "topoar_probe: cannot write %s: %s\n", out_path.c_str(), std::strerror(errno));
                rc = 1;
            } else {
                std::fputs(body.c_str(), f);
                if (f != stdout) std::fclose(f);
            }
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    topoar_engine_destroy(e);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return rc;
}
