// topoar_info: prints the topology topoar discovers for MPI_COMM_WORLD.
//
//   mpirun [--mca coll_topoar_rack_file F ...] -np N topoar_info [--text]
//
// It runs the same discovery as the component (host names, hwloc sockets,
// topology/rack file, Slurm, and across hosts with none of those the link
// probes), with the same settings: the coll_topoar_* parameters are read
// through MPI_T when the component is loaded, and --topology-file/
// --rack-file/--node-link/--probe... override them.  The output says which
// links were measured and which assumed.  --text prints the tree in the
// topology file format (input for topoar_plan/topoar_sim).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "engine.hpp"
#include "config/params.h"
#include "topoar_engine.h"
#include "topology/topology.hpp"
#include "topoar_mpi_io.h"

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

// The value of an integer control variable as decimal text, or "".
std::string read_number_cvar(const char* name, bool is_size) {
    int index = -1, count = 0;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return "";
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return "";
    unsigned long long v[2] = {0, 0};  // room for any integer type
    std::string value;
    if (MPI_T_cvar_read(h, v) == MPI_SUCCESS) {
        int i = 0;
        std::memcpy(&i, v, sizeof i);
        value = is_size ? std::to_string(static_cast<std::size_t>(v[0])) : std::to_string(i);
    }
    MPI_T_cvar_handle_free(&h);
    return value;
}

// Every engine parameter of the table (topoar_param_info) as the
// component has it, as text; "" where the component is not loaded (the
// engine's default then).
std::map<std::string, std::string> read_engine_params() {
    std::map<std::string, std::string> out;
    for (int i = 0; i < topoar_param_count(); ++i) {
        topoar_param_info_t p;
        topoar_param_glue_t g;
        if (topoar_param_info(i, &p) != TOPOAR_OK || topoar_param_glue(i, &g) != TOPOAR_OK || g.glue_only) continue;
        std::string cvar = std::string("coll_topoar_") + p.name;
        if (p.type == TOPOAR_PARAM_STRING) out[p.name] = read_cvar(cvar.c_str());
        else out[p.name] = read_number_cvar(cvar.c_str(), p.type == TOPOAR_PARAM_SIZE);
        if (p.type == TOPOAR_PARAM_BOOL && !out[p.name].empty()) out[p.name] = out[p.name] == "0" ? "0" : "1";
    }
    return out;
}

// The algorithm table (topoar_algorithm_info).
void print_algorithms() {
    std::printf("algorithms (coll_topoar_allreduce_algorithm):\n");
    for (int i = 0; i < topoar_algorithm_count(); ++i) {
        topoar_algorithm_info_t a;
        if (topoar_algorithm_info(i, &a) != TOPOAR_OK) continue;
        std::printf("  %d %-12s %s%s%s%s\n", a.id, a.name, a.description, a.alias ? " (deprecated name: " : "",
                    a.alias ? a.alias : "", a.alias ? ")" : "");
    }
}

void usage() {
    std::printf(
        "usage: topoar_info [--text | --algorithms] [--topology-file F] [--rack-file F]\n"
        "                   [--socket-link L] [--node-link L] [--rack-link L] [--spine-link L]\n"
        "                   [--model-overhead T] [--model-margin F] [--probe 0|1] [--probe-time T]\n"
        "Prints the topology topoar discovers for MPI_COMM_WORLD (run it under mpirun\n"
        "with the job's layout) and, without --text, the table auto would build from\n"
        "the cost model for it.  L is BANDWIDTH[,LATENCY], e.g. 200Mbit,50us; T a\n"
        "time such as 40us, or auto: measured with the links (default:\n"
        "coll_topoar_model_overhead); F a fraction such\n"
        "as 0.15 or 15%% (default: coll_topoar_model_margin).  Across hosts that no\n"
        "file describes, the links are measured as the component would\n"
        "(coll_topoar_probe; --probe 0 assumes them).  --algorithms lists the\n"
        "algorithms.\n");
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    std::map<std::string, std::string> params = read_engine_params();
    bool text = false, algorithms = false;
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
        // --NAME-WITH-DASHES sets the engine parameter NAME.
        std::string pname = a.size() > 2 ? a.substr(2) : "";
        std::replace(pname.begin(), pname.end(), '-', '_');
        if (a == "--text") text = true;
        else if (a == "--algorithms") algorithms = true;
        else if (pname == "topology_file" || pname == "rack_file" || pname == "socket_link" ||
                 pname == "node_link" || pname == "rack_link" || pname == "spine_link" ||
                 pname == "model_overhead" || pname == "model_margin" || pname == "probe" ||
                 pname == "probe_time")
            value(&params[pname]);
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


    // Every rank sets up, as in the component: measuring the links is
    // collective.
    int rc = 0;
    // The table auto builds at set-up (not for one host, which auto hands
    // down): always auto, as the component without a forced algorithm.
    params["allreduce_algorithm"] = "auto";
    params["model_table"] = text ? "0" : "1";
    params["single_node_fallback"] = "1";
    std::vector<const char*> names, values;
    for (const auto& kv : params) {
        names.push_back(kv.first.c_str());
        values.push_back(kv.second.c_str());
    }
    topoar_config_t cfg{static_cast<int>(names.size()), names.data(), values.data()};
    const std::string& topology_file = params["topology_file"];
    const std::string& rack_file = params["rack_file"];
    MPI_Comm comm;
    topoar_transport_t transport;
    topoar_setup_io_t io;
    topoar_engine_t* e = nullptr;
    const int setup = topoar_mpi_engine_setup(&cfg, &comm, &transport, &io, &e);
    if (!e) {
        std::fprintf(stderr, "topoar_info: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (setup != TOPOAR_OK) {
        if (rank == 0) std::fprintf(stderr, "topoar_info: discovery failed: %s\n", topoar_engine_error(e));
        rc = 1;
    } else if (rank != 0) {
    } else if (algorithms) {
        print_algorithms();
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
    MPI_Comm_free(&comm);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}
