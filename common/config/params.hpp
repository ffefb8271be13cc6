// topoar engine: its parameters — one table.
//
// Each row is one coll_topoar_NAME MCA variable the engine reads: its name,
// type, default, ompi_info level, whether every rank must have the same
// value (it decides which messages pair up), the parser that stores a value
// into EngineConfig, and the help text.  The glue registers the MCA
// variables by walking this table (topoar_param_count/_info in
// topoar_engine.h) and hands the values back by name as text
// (topoar_config_t); EngineConfig{} starts from the same defaults, so a
// default is written once, here.  Glue-only variables (priority, verbose,
// the GPU path's) are registered by the glue itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

struct EngineConfig;

// Values match TOPOAR_PARAM_* in topoar_engine.h.
enum class ParamType : int {
    integer = 0,
    size = 1,       // bytes (a size_t MCA variable)
    boolean = 2,
    string = 3,
    algorithm = 4,  // an algorithm of algorithm.hpp; an MCA enum of its names
};

struct ParamInfo {
    const char* name;           // the MCA name without "coll_topoar_"
    ParamType type;
    const char* default_value;  // as text, parsed like any value
    int level;                  // ompi_info level, 1..9
    bool must_agree;            // decides message pairing: compared across ranks at set-up
    bool names_file;            // the value is a file whose contents must agree too
    bool settable;              // MPI_T may write it at run time (read at set-up)
    // Parses `value` into cfg; an error without the parameter's name.
    Status (*parse)(const std::string& value, EngineConfig* cfg);
    std::string help;
};

const std::vector<ParamInfo>& param_table();
const ParamInfo* find_param(const std::string& name);  // nullptr if not in the table

// Parses one value into cfg ("" keeps the default); errors read
// "coll_topoar_NAME 'VALUE': why".
Status set_param(EngineConfig* cfg, const std::string& name, const std::string& value);

// The value's fingerprint for the set-up agreement: the text, and for a
// file parameter the file's contents (an unreadable file hashes as such).
std::uint64_t param_fingerprint(const ParamInfo& p, const std::string& value);

// Defaults for layers below the engine (cost model, default table), parsed
// from the table.
std::size_t default_segment_size();
double default_model_margin();
// The GPU model's (model/device_model.hpp): the table's default texts,
// parsed without an EngineConfig (which holds a DeviceModel).
Link default_gpu_link();
Link default_gpu_nic_link();
double default_gpu_model_overhead();
std::size_t default_gpu_pipeline_size();

}  // namespace topoar
