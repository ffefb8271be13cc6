// topoar_info: prints the topology topoar discovers for MPI_COMM_WORLD.
//
//   mpirun [--mca coll_topoar_rack_file F ...] -np N topoar_info [--text]
//
// It runs the same discovery as the component (host names, hwloc sockets,
// topology/rack file, Slurm), with the same settings: the coll_topoar_*
// parameters are read through MPI_T when the component is loaded, and
// --topology-file/--rack-file/--node-link... override them.  --text prints
// the tree in the topology file format (input for topoar_plan/topoar_sim).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "engine.hpp"
#include "topoar_engine.h"
#include "topology.hpp"
#include "units.hpp"

namespace {

// The value of a string control variable, or "" if it does not exist.
std::string read_cvar(const char* name) {
    int index = -1, count = 0;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return "";
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return "";
    std::vector<char> buf(static_cast<std::size_t>(count > 0 ? count : 1) + 4096, '\0');
    std::string value;
    if (MPI_T_cvar_read(h, buf.data()) == MPI_SUCCESS) value = buf.data();
    MPI_T_cvar_handle_free(&h);
    return value;
}

// The value of a size_t control variable, or fallback if it does not exist.
std::size_t read_size_cvar(const char* name, std::size_t fallback) {
    int index = -1, count = 0;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return fallback;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return fallback;
    unsigned long long v[2] = {fallback, 0};  // room for any integer type
    std::size_t value = fallback;
    if (MPI_T_cvar_read(h, v) == MPI_SUCCESS) value = static_cast<std::size_t>(v[0]);
    MPI_T_cvar_handle_free(&h);
    return value;
}

void usage() {
    std::printf(
        "usage: topoar_info [--text] [--topology-file F] [--rack-file F]\n"
        "                   [--socket-link L] [--node-link L] [--rack-link L] [--spine-link L]\n"
        "                   [--model-overhead T] [--model-margin F]\n"
        "Prints the topology topoar discovers for MPI_COMM_WORLD (run it under mpirun\n"
        "with the job's layout) and, without --text, the table auto would build from\n"
        "the cost model for it.  L is BANDWIDTH[,LATENCY], e.g. 200Mbit,50us; T a\n"
        "time such as 40us (default: coll_topoar_model_overhead); F a fraction such\n"
        "as 0.15 or 15%% (default: coll_topoar_model_margin).\n");
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    std::string topology_file = read_cvar("coll_topoar_topology_file");
    std::string rack_file = read_cvar("coll_topoar_rack_file");
    std::string links[4] = {read_cvar("coll_topoar_socket_link"), read_cvar("coll_topoar_node_link"),
                            read_cvar("coll_topoar_rack_link"), read_cvar("coll_topoar_spine_link")};
    std::string overhead = read_cvar("coll_topoar_model_overhead");
    std::string margin = read_cvar("coll_topoar_model_margin");
    bool text = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](std::string* out) {
            if (i + 1 >= argc) {
                if (rank == 0) std::fprintf(stderr, "topoar_info: %s needs a value\n", a.c_str());
                MPI_Finalize();
                std::exit(2);
            }
            *out = argv[++i];
        };
        if (a == "--text") text = true;
        else if (a == "--topology-file") value(&topology_file);
        else if (a == "--rack-file") value(&rack_file);
        else if (a == "--socket-link") value(&links[0]);
        else if (a == "--node-link") value(&links[1]);
        else if (a == "--rack-link") value(&links[2]);
        else if (a == "--spine-link") value(&links[3]);
        else if (a == "--model-overhead") value(&overhead);
        else if (a == "--model-margin") value(&margin);
        else if (a == "-h" || a == "--help") {
            if (rank == 0) usage();
            MPI_Finalize();
            return 0;
        } else {
            if (rank == 0) {
                std::fprintf(stderr, "topoar_info: unknown option %s\n", a.c_str());
                usage();
            }
            MPI_Finalize();
            return 2;
        }
    }

    topoar_rank_info_t mine;
    topoar_local_rank_info(&mine);
    std::vector<topoar_rank_info_t> all(static_cast<std::size_t>(size));
    MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);

    int rc = 0;
    if (rank == 0) {
        topoar_config_t cfg{};
        cfg.algorithm = TOPOAR_ALG_AUTO;
        cfg.topology_file = topology_file.c_str();
        cfg.rack_file = rack_file.c_str();
        cfg.socket_link = links[0].c_str();
        cfg.node_link = links[1].c_str();
        cfg.rack_link = links[2].c_str();
        cfg.spine_link = links[3].c_str();
        // The table auto builds at set-up (not for one host, which auto
        // hands down).
        cfg.model_table = text ? 0 : 1;
        cfg.single_node_hand_down = 1;
        cfg.model_overhead = overhead.c_str();
        cfg.model_margin = margin.c_str();
        cfg.segment_bytes = read_size_cvar("coll_topoar_segment_size", 32768);
        cfg.pipeline_bytes = read_size_cvar("coll_topoar_pipeline_size", 32768);
        cfg.small_msg_bytes = read_size_cvar("coll_topoar_small_msg_size", 65536);
        topoar_engine_t* e = topoar_engine_create(0, size, &cfg);
        if (!e) {
            std::fprintf(stderr, "topoar_info: out of memory\n");
            rc = 1;
        } else if (topoar_engine_setup(e, all.data()) != TOPOAR_OK) {
            std::fprintf(stderr, "topoar_info: discovery failed: %s\n", topoar_engine_error(e));
            rc = 1;
        } else if (text) {
            std::string t = topoar_engine_topology_text(e);
            if (!t.empty() && t.back() != '\n') t += '\n';
            std::fputs(t.c_str(), stdout);
        } else {
            std::printf("topoar topology of MPI_COMM_WORLD (%d ranks)%s%s%s%s:\n", size,
                        topology_file.empty() ? "" : ", topology file ", topology_file.c_str(),
                        rack_file.empty() ? "" : ", rack file ", rack_file.c_str());
            std::fputs(topoar_engine_describe(e), stdout);
        }
        topoar_engine_destroy(e);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}
