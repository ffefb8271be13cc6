// topoar engine: its parameters — one table.
//
// Each row is one coll_topoar_NAME MCA variable: its name, type, default,
// ompi_info level, whether every rank must have the same value (it decides
// which messages pair up), the parser that stores a value into
// EngineConfig, and the help text.  The glue registers every MCA variable
// by walking this table (topoar_param_count/_info in topoar_engine.h, and
// topoar_param_glue in config/params.h for the scope, the keywords and
// whether a row is the glue's own) and hands the engine's values back by
// name as text (topoar_config_t); EngineConfig{} starts from the same
// defaults, so a name, default and help text are written once, here.
// The engine's rows come first, then the glue's own (priority, verbose,
// the GPU path's, the barrier's): registered by the same walk, stored by
// the glue, never parsed by the engine.  At most TOPOAR_PARAM_MAX rows in
// all: a row's index is its slot in the set-up fingerprints, which the
// glue's rows that must agree (coll_topoar_barrier, ...) fill too (the
// glue hands their values over as text with the engine's).
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
    keyword = 5,    // an int MCA enum of ParamInfo::keywords (value: the index)
};

// Where an MCA variable may be set (MCA_BASE_VAR_SCOPE_*); values match
// TOPOAR_PARAM_SCOPE_* in config/params.h.
enum class ParamScope : int {
    all = 0,       // anywhere, MPI_T included, and may differ between processes
    local = 1,     // this process only
    readonly = 2,  // fixed once the component is registered
};

struct ParamInfo {
    const char* name;           // the MCA name without "coll_topoar_"
    ParamType type;
    const char* default_value;  // as text, parsed like any value
    int level;                  // ompi_info level, 1..9
    bool must_agree;            // decides message pairing: compared across ranks at set-up
                                // (a glue row's too; then it is not settable)
    bool names_file;            // the value is a file whose contents must agree too
    bool settable;              // MPI_T may write it at run time (read at set-up)
    // Parses `value` into cfg; an error without the parameter's name.
    Status (*parse)(const std::string& value, EngineConfig* cfg);
    std::string help;
    // The glue's own (priority, verbose, the GPU path's): registered by the
    // same walk, not handed to the engine (no parse; set_param ignores it,
    // EngineConfig has no field for it).  Only after the engine's rows.
    bool glue_only = false;
    ParamScope scope = ParamScope::all;
    // ParamType::keyword: the names of the values 0, 1, ..., then nullptr.
    const char* const* keywords = nullptr;
};

// The number of leading rows that are the engine's (the rest are the glue's).
std::size_t engine_param_count();

const std::vector<ParamInfo>& param_table();
const ParamInfo* find_param(const std::string& name);  // nullptr if not in the table

// Parses one value into cfg ("" keeps the default); errors read
// "coll_topoar_NAME 'VALUE': why".  A glue-only row sets nothing.
Status set_param(EngineConfig* cfg, const std::string& name, const std::string& value);

// The value's fingerprint for the set-up agreement: the text, and for a
// file parameter the file's contents (an unreadable file hashes as such).
std::uint64_t param_fingerprint(const ParamInfo& p, const std::string& value);

// Defaults for layers below the engine (cost model, default table), parsed
// from the table.
std::size_t default_segment_size();
double default_model_margin();
// coll_topoar_model_overhead 'auto' on a communicator within one host:
// the assumed cost of a shared-memory message, seconds.
double assumed_host_overhead();
// The GPU model's (model/device_model.hpp): the table's default texts,
// parsed without an EngineConfig (which holds a DeviceModel).
Link default_gpu_link();
Link default_gpu_nic_link();
double default_gpu_model_overhead();
std::size_t default_gpu_pipeline_size();

}  // namespace topoar
