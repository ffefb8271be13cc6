// topoar engine: the extern "C" entry points the Open MPI glue calls.
// No C++ exception may cross this boundary into Open MPI.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.hpp"
#include "engine/call_operation.hpp"
#include "planners/planner_barrier.hpp"
#include "planners/planner_nccl_hier.hpp"
#include "topology/nic_probe.hpp"


#include "topoar_engine.h"
#include "topology/hwloc_probe.hpp"

static_assert(TOPOAR_MEM_HOST == static_cast<int>(topoar::MemType::host), "C and C++ memory types differ");
static_assert(TOPOAR_MEM_CUDA == static_cast<int>(topoar::MemType::cuda), "C and C++ memory types differ");
static_assert(TOPOAR_ORIGIN_FORCED == static_cast<int>(topoar::Origin::forced) &&
                  TOPOAR_ORIGIN_RULE == static_cast<int>(topoar::Origin::rule) &&
                  TOPOAR_ORIGIN_MODEL == static_cast<int>(topoar::Origin::model) &&
                  TOPOAR_ORIGIN_BUILTIN == static_cast<int>(topoar::Origin::builtin) &&
                  TOPOAR_ORIGIN_HAND_DOWN == static_cast<int>(topoar::Origin::hand_down) &&
                  TOPOAR_ORIGIN_MEASURED == static_cast<int>(topoar::Origin::measured),
              "C and C++ origins differ");
static_assert(TOPOAR_ALG_AUTO == static_cast<int>(topoar::Algorithm::automatic) &&
                  TOPOAR_ALG_NCCL == static_cast<int>(topoar::Algorithm::nccl) &&
                  TOPOAR_ALG_NCCL_HIER == static_cast<int>(topoar::Algorithm::nccl_hier) &&
                  topoar::kNumAlgorithms <= TOPOAR_ALG_MAX,
              "the algorithm table does not fit the C interface");
static_assert(TOPOAR_PARAM_INT == static_cast<int>(topoar::ParamType::integer) &&
                  TOPOAR_PARAM_SIZE == static_cast<int>(topoar::ParamType::size) &&
                  TOPOAR_PARAM_BOOL == static_cast<int>(topoar::ParamType::boolean) &&
                  TOPOAR_PARAM_STRING == static_cast<int>(topoar::ParamType::string) &&
                  TOPOAR_PARAM_ALGORITHM == static_cast<int>(topoar::ParamType::algorithm),
              "C and C++ parameter types differ");

using namespace topoar;

struct topoar_engine {
    Engine engine;
    // The set-up I/O as the glue gave it (its callbacks and context stay
    // valid as long as the communicator), and as the engine takes it: set
    // up once, used by set-up and by online adaptation during calls.
    topoar_transport_t io_transport{};
    topoar_setup_io_t io{};
    std::unique_ptr<Transport> io_link;  // over io_transport; null: no I/O given
    SetupIo setup_io;
    std::string error;
    // Each text result has its own buffer, valid until the next call of the
    // same function on this engine (never invalidated by another one).
    std::string described;  // topoar_engine_describe
    std::string notice;     // topoar_engine_notice
    std::string topology;   // topoar_engine_topology_text
    std::string origin;     // topoar_engine_last_origin
    PreparedCall call;   // the last prepared call
    // topoar_engine_prepare's memo: `call` answers the next host call of
    // the same count, element size and flags while the engine's
    // generation stays (Engine::repeatable).
    bool memo_ok = false;
    int memo_flags = 0;
    std::uint64_t memo_generation = 0;
    // The fast path's scratch (exec/fast_executor.hpp): grown at prepare,
    // never per call; one blocking call at a time uses it.
    std::unique_ptr<unsigned char[]> fast_scratch;
    std::size_t fast_scratch_size = 0;
    topoar_device_caps_t caps{};  // as the glue registered them (pair tests)
    Status config_error; // a bad parameter value, reported by setup
    topoar_engine(int rank, int size, EngineConfig cfg, Status bad)
        : engine(rank, size, std::move(cfg)), config_error(std::move(bad)) {}
};

namespace {

int to_code(const Status& s) {
    switch (s.code()) {
    case Code::ok: return TOPOAR_OK;
    case Code::invalid_argument: return TOPOAR_ERR_INVALID;
    case Code::unsupported: return TOPOAR_ERR_UNSUPPORTED;
    case Code::io_error: return TOPOAR_ERR_IO;
    case Code::transport_error: return TOPOAR_ERR_TRANSPORT;
    default: return TOPOAR_ERR_INTERNAL;
    }
}

int fail(topoar_engine* e, const Status& s) {
    // Failures while running say where (a fallback's reason stays the plain message).
    const bool located = s.code() == Code::transport_error || s.code() == Code::internal_error;
    e->error = located ? s.describe() : s.message();
    return to_code(s);
}

class CallbackTransport final : public Transport {
public:
    explicit CallbackTransport(const topoar_transport_t& t) : t_(t) {}
    Status isend(const void* buf, std::size_t bytes, int peer, Request* req) override {
        return check(t_.isend(t_.ctx, buf, bytes, peer, req), "isend", peer);
    }
    Status issend(const void* buf, std::size_t bytes, int peer, Request* req) override {
        if (!t_.issend) return isend(buf, bytes, peer, req);
        return check(t_.issend(t_.ctx, buf, bytes, peer, req), "issend", peer);
    }
    Status irecv(void* buf, std::size_t bytes, int peer, Request* req) override {
        return check(t_.irecv(t_.ctx, buf, bytes, peer, req), "irecv", peer);
    }
    Status wait(Request* req) override { return check(t_.wait(t_.ctx, req), "wait", -1); }
    Status test(Request* req, bool* done) override {
        int flag = 0;
        Status s = check(t_.test(t_.ctx, req, &flag), "test", -1);
        *done = flag != 0;
        return s;
    }
    void progress() override { t_.progress(t_.ctx); }
    Status cancel(Request* req) override {
        if (!t_.cancel) return wait(req);  // NULL: complete it instead
        return check(t_.cancel(t_.ctx, req), "cancel", -1);
    }

private:
    static Status check(int rc, const char* what, int peer) {
        if (rc == 0) return Status::ok();
        std::ostringstream s;
        s << what << " failed with error " << rc;
        if (peer >= 0) s << " (peer " << peer << ")";
        return Status(Code::transport_error, s.str());
    }
    const topoar_transport_t& t_;
};

class CallbackReducer final : public Reducer {
public:
    explicit CallbackReducer(const topoar_reducer_t& r) : r_(r) {}
    void reduce(const void* in, void* inout, std::size_t count) override { r_.reduce(r_.ctx, in, inout, count); }

private:
    const topoar_reducer_t& r_;
};

class CallbackDeviceTransport final : public DeviceTransport {
public:
    explicit CallbackDeviceTransport(const topoar_device_transport_t& t) : t_(t) {}
    Status group_start() override { return check(t_.group_start(t_.ctx), "group start"); }
    Status send(const void* buf, std::size_t bytes, int peer) override {
        return check(t_.send(t_.ctx, buf, bytes, peer), "send");
    }
    Status recv(void* buf, std::size_t bytes, int peer) override {
        return check(t_.recv(t_.ctx, buf, bytes, peer), "recv");
    }
    Status group_end() override { return check(t_.group_end(t_.ctx), "group end"); }
    Status reduce(const void* in, void* inout, std::size_t count) override {
        return check(t_.reduce(t_.ctx, in, inout, count), "reduce");
    }
    Status scratch(std::size_t bytes, void** out) override { return check(t_.scratch(t_.ctx, bytes, out), "scratch"); }
    Status synchronize() override { return check(t_.synchronize(t_.ctx), "synchronize"); }
    Status host_reduce_scatter(const void* send, void* recv, std::size_t recv_count) override {
        if (!t_.host_reduce_scatter) return DeviceTransport::host_reduce_scatter(send, recv, recv_count);
        return check(t_.host_reduce_scatter(t_.ctx, send, recv, recv_count), "reduce-scatter in the host");
    }
    Status host_reduce(const void* send, void* recv, std::size_t count, int root) override {
        if (!t_.host_reduce) return DeviceTransport::host_reduce(send, recv, count, root);
        return check(t_.host_reduce(t_.ctx, send, recv, count, root), "reduce in the host");
    }
    Status host_all_gather(const void* send, void* recv, std::size_t send_count) override {
        if (!t_.host_all_gather) return DeviceTransport::host_all_gather(send, recv, send_count);
        return check(t_.host_all_gather(t_.ctx, send, recv, send_count), "all-gather in the host");
    }
    Status host_broadcast(const void* send, void* recv, std::size_t count, int root) override {
        if (!t_.host_broadcast) return DeviceTransport::host_broadcast(send, recv, count, root);
        return check(t_.host_broadcast(t_.ctx, send, recv, count, root), "broadcast in the host");
    }

private:
    Status check(int rc, const char* what) const {
        if (rc == 0) return Status::ok();
        const char* why = t_.error ? t_.error(t_.ctx) : nullptr;
        return Status(Code::transport_error, std::string(what) + " failed: " + (why && *why ? why : "error " + std::to_string(rc)));
    }
    const topoar_device_transport_t& t_;
};

void copy_name(char* dst, const char* src) {
    std::snprintf(dst, TOPOAR_NAME_MAX, "%s", src ? src : "");
}

}  // namespace

extern "C" {

int topoar_algorithm_count(void) { return kNumAlgorithms; }

int topoar_algorithm_info(int id, topoar_algorithm_info_t* out) {
    if (id < 0 || id >= kNumAlgorithms) return TOPOAR_ERR_INVALID;
    const AlgorithmInfo& a = algorithm_table()[id];
    out->id = id;
    out->name = a.name;
    out->alias = a.alias;
    out->description = a.description;
    out->multi_host = a.multi_host ? 1 : 0;
    out->device_only = a.device_only ? 1 : 0;
    return TOPOAR_OK;
}

const char* topoar_algorithm_name(int algorithm) { return algorithm_name(static_cast<Algorithm>(algorithm)); }

int topoar_algorithm_from_name(const char* name) {
    Algorithm a;
    return name && algorithm_from_name(name, &a) ? static_cast<int>(a) : -1;
}

int topoar_param_count(void) {
    try {
        return static_cast<int>(param_table().size());
    } catch (...) {
        return 0;
    }
}

int topoar_param_info(int index, topoar_param_info_t* out) {
    try {
        const auto& t = param_table();
        if (index < 0 || index >= static_cast<int>(t.size())) return TOPOAR_ERR_INVALID;
        const ParamInfo& p = t[static_cast<std::size_t>(index)];
        out->name = p.name;
        out->type = static_cast<int>(p.type);
        out->default_value = p.default_value;
        out->level = p.level;
        out->must_agree = p.must_agree ? 1 : 0;
        out->settable = p.settable ? 1 : 0;
        out->help = p.help.c_str();
        return TOPOAR_OK;
    } catch (...) {
        return TOPOAR_ERR_INTERNAL;
    }
}

void topoar_settings_fingerprint(const topoar_config_t* cfg, topoar_rank_info_t* out) {
    try {
        const auto& t = param_table();
        static_assert(sizeof(out->settings[0]) >= sizeof(std::uint64_t), "fingerprints are 64-bit");
        for (std::size_t i = 0; i < t.size() && i < TOPOAR_PARAM_MAX; ++i) {
            out->settings[i] = 0;
            if (!t[i].must_agree) continue;
            std::string value;
            for (int k = 0; cfg && k < cfg->count; ++k)
                if (cfg->names[k] && std::strcmp(cfg->names[k], t[i].name) == 0 && cfg->values[k])
                    value = cfg->values[k];
            out->settings[i] = param_fingerprint(t[i], value);
        }
    } catch (...) {
        // Fingerprints stay as they are: at worst a mismatch is reported.
    }
}

int topoar_settings_mismatch(const topoar_rank_info_t* all, int size, int* param, int* rank) {
    for (int i = 0; i < TOPOAR_PARAM_MAX; ++i)
        for (int r = 1; r < size; ++r)
            if (all[r].settings[i] != all[0].settings[i]) {
                *param = i;
                *rank = r;
                return 1;
            }
    return 0;
}

namespace {
// The process's names, read once: every new communicator's first call makes
// a record, and a system call plus three environment scans were a
// measurable part of a small first call (docs/performance.md, fresh
// communicators).  A process's host and Slurm placement do not change.
struct ProcessNames {
    char host[TOPOAR_NAME_MAX] = {0};
    char slurm_addr[TOPOAR_NAME_MAX] = {0};
    char slurm_pattern[TOPOAR_NAME_MAX] = {0};
    ProcessNames() {
        char h[256] = {0};
        if (gethostname(h, sizeof(h) - 1) != 0) std::strcpy(h, "unknown");
        // TOPOAR_HOSTNAME: the host this process says it is on, for tests
        // that emulate several hosts on one machine (tests/gpu/fake-hosts.sh
        // gives each rank one).  Only topoar's discovery sees it: Open MPI's
        // own locality, and NCCL's, still see the real host.
        const char* fake = std::getenv("TOPOAR_HOSTNAME");
        if (fake && *fake) std::snprintf(h, sizeof(h), "%s", fake);
        copy_name(host, h);
        copy_name(slurm_addr, std::getenv("SLURM_TOPOLOGY_ADDR"));
        copy_name(slurm_pattern, std::getenv("SLURM_TOPOLOGY_ADDR_PATTERN"));
    }
};
}  // namespace

void topoar_local_rank_info(topoar_rank_info_t* out) {
    std::memset(out, 0, sizeof(*out));
    static const ProcessNames names;
    std::memcpy(out->host, names.host, sizeof(out->host));
    std::memcpy(out->slurm_addr, names.slurm_addr, sizeof(out->slurm_addr));
    std::memcpy(out->slurm_pattern, names.slurm_pattern, sizeof(out->slurm_pattern));
    // The machine's hwloc topology is loaded once per process
    // (hwloc_probe.cpp); only the binding is asked here.
    try {
        out->socket = probe_socket_of_current_binding();
        out->probe_digest = probe_cache_digest();
        out->contest_outcomes = OutcomeStore::process().count();
        out->nic_bandwidth = nic_bandwidth_prior();
    } catch (...) {
        out->socket = -1;
    }
}

namespace {
// The parameters as the glue hands them over (names and values as text).
std::vector<std::string> config_texts(const topoar_config_t* cfg) {
    std::vector<std::string> t;
    for (int k = 0; cfg && k < cfg->count; ++k) {
        t.emplace_back(cfg->names[k] ? cfg->names[k] : "");
        t.emplace_back(cfg->values[k] ? cfg->values[k] : "");
    }
    return t;
}

// The last configuration parsed in this process: every communicator's
// engine is made from the same texts while the parameters keep their
// values, and parsing them (bandwidths, sizes, lists) was most of an
// engine's creation.  Compared text for text, so any change parses again.
struct ParsedConfig {
    std::vector<std::string> texts;
    EngineConfig config;
    Status bad = Status::ok();
};
std::mutex parsed_config_mutex;
std::shared_ptr<const ParsedConfig> parsed_config;

std::shared_ptr<const ParsedConfig> parse_config(const topoar_config_t* cfg) {
    std::vector<std::string> texts = config_texts(cfg);
    {
        std::lock_guard<std::mutex> lock(parsed_config_mutex);
        if (parsed_config && parsed_config->texts == texts) return parsed_config;
    }
    auto p = std::make_shared<ParsedConfig>();
    for (std::size_t k = 0; k + 1 < texts.size() && p->bad; k += 2)
        p->bad = set_param(&p->config, texts[k], texts[k + 1]);
    p->texts = std::move(texts);
    std::lock_guard<std::mutex> lock(parsed_config_mutex);
    parsed_config = p;
    return p;
}
}  // namespace

topoar_engine_t* topoar_engine_create(int rank, int size, const topoar_config_t* cfg) {
    try {
        const std::shared_ptr<const ParsedConfig> p = parse_config(cfg);
        return new topoar_engine(rank, size, EngineConfig(p->config), Status(p->bad));
    } catch (...) {
        return nullptr;
    }
}

void topoar_engine_destroy(topoar_engine_t* e) { delete e; }

int topoar_config_hands_down_single_host(const topoar_config_t* cfg, const char** why) {
    try {
        EngineConfig c;
        for (int k = 0; cfg && k < cfg->count; ++k)
            if (!set_param(&c, cfg->names[k] ? cfg->names[k] : "", cfg->values[k] ? cfg->values[k] : "")) return 0;
        // Engine::decide on a one-host communicator: auto with the fallback
        // and no rules file hands every host call down (no model table is
        // built there, so nothing else claims a size).  With a topology or
        // rack file the full set-up runs, so a file that cannot be read or
        // parsed is still reported on every communicator.
        if (!one_host_hands_down(c.algorithm, c.single_node_fallback) || !c.rules_file.empty() ||
            !c.discovery.topology_file.empty() || !c.discovery.rack_file.empty())
            return 0;
        if (why) *why = kOneHostHandDownReason;
        return 1;
    } catch (...) {
        return 0;
    }
}

int topoar_engine_setup(topoar_engine_t* e, const topoar_rank_info_t* all) {
    return topoar_engine_setup_io(e, all, nullptr);
}

int topoar_engine_setup_io(topoar_engine_t* e, const topoar_rank_info_t* all, const topoar_setup_io_t* io) {
    try {
        if (!e->config_error) return fail(e, e->config_error);
        std::vector<RankInfo> ranks;
        int n = e->engine.size();
        ranks.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) {
            RankInfo r;
            r.host = all[i].host;
            r.socket = all[i].socket;
            r.slurm_addr = all[i].slurm_addr;
            r.slurm_pattern = all[i].slurm_pattern;
            r.probe_digest = all[i].probe_digest;
            r.nic_bandwidth = all[i].nic_bandwidth;
            r.contest_outcomes = all[i].contest_outcomes;
            ranks.push_back(std::move(r));
        }
        if (io && io->transport && io->allgather) {
            e->io_transport = *io->transport;
            e->io = *io;
            e->io.transport = &e->io_transport;
            e->io_link.reset(new CallbackTransport(e->io_transport));
            e->setup_io.transport = e->io_link.get();
            const topoar_setup_io_t* stored = &e->io;
            e->setup_io.allgather = [stored](const void* mine, std::size_t bytes, void* gathered) {
                return stored->allgather(stored->ctx, mine, bytes, gathered) == 0
                           ? Status::ok()
                           : Status(Code::transport_error, "allgather of " + std::to_string(bytes) + " bytes failed");
            };
        }
        Status s = e->engine.setup(ranks, e->io_link ? &e->setup_io : nullptr);
        return s ? TOPOAR_OK : fail(e, s);
    } catch (const std::exception& ex) {
        return fail(e, Status::internal(std::string("setup: ") + ex.what()));
    } catch (...) {
        return fail(e, Status::internal("setup: unknown exception"));
    }
}

}  // extern "C"

namespace {
// The glue's view of the prepared call p.
void export_call(const PreparedCall& p, topoar_call_t* call) {
    call->route = static_cast<int>(p.route);
    call->why = p.why;
    call->algorithm = static_cast<int>(p.algorithm);
    call->plan_algorithm = static_cast<int>(p.plan_algorithm);
    call->origin = static_cast<int>(p.origin);
    call->mem = static_cast<int>(p.mem);
    call->count = p.count;
    call->elem_size = p.elem_size;
    call->fast = p.fast ? 1 : 0;
}

int prepare_call(topoar_engine_t* e, size_t count, size_t elem_size, int mem, const PairCaps& pair,
                 topoar_call_t* call, const CallKind& kind = CallKind{}) {
    try {
        e->memo_ok = false;
        std::memset(call, 0, sizeof(*call));
        if (mem != TOPOAR_MEM_HOST && mem != TOPOAR_MEM_CUDA)
            return fail(e, Status::invalid("prepare: memory type " + std::to_string(mem)));
        Status s = e->engine.prepare(count, elem_size, static_cast<MemType>(mem), &e->call, pair, kind);
        if (!s) return fail(e, s);
        PreparedCall& p = e->call;
        if (p.fast && p.plan->fast.scratch_bytes > e->fast_scratch_size) {
            e->fast_scratch.reset(new (std::nothrow) unsigned char[p.plan->fast.scratch_bytes]);
            e->fast_scratch_size = e->fast_scratch ? p.plan->fast.scratch_bytes : 0;
            if (!e->fast_scratch) p.fast = false;  // the executor runs it
        }
        export_call(p, call);
        return TOPOAR_OK;
    } catch (const std::bad_alloc&) {
        return fail(e, Status::internal("prepare: out of memory"));
    } catch (const std::exception& ex) {
        return fail(e, Status::internal(std::string("prepare: ") + ex.what()));
    } catch (...) {
        return fail(e, Status::internal("prepare: unknown exception"));
    }
}

// The call the glue hands back is the one prepared last (the engine keeps
// its plans until the next prepare).
bool is_last_prepared(const topoar_engine_t* e, const topoar_call_t* call) {
    const PreparedCall& p = e->call;
    return call->count == p.count && call->elem_size == p.elem_size && call->route == static_cast<int>(p.route) &&
           call->algorithm == static_cast<int>(p.algorithm);
}
}  // namespace

extern "C" {

int topoar_engine_prepare(topoar_engine_t* e, size_t count, size_t elem_size, int mem, int flags,
                          topoar_call_t* call) {
    // The same call as the last one, nothing changed since: its answer
    // again (the fast path's other half: no decision, lookup or copy).
    if (e->memo_ok && count == e->call.count && elem_size == e->call.elem_size && mem == TOPOAR_MEM_HOST &&
        flags == e->memo_flags && e->engine.generation() == e->memo_generation) {
        export_call(e->call, call);
        return TOPOAR_OK;
    }
    PairCaps pair;
    pair.previous_differs = (flags & TOPOAR_PREPARE_OWN_RESULT_ONLY) != 0;
    CallKind kind;
    kind.nonblocking = (flags & TOPOAR_PREPARE_NONBLOCKING) != 0;
    kind.no_hand_down = (flags & TOPOAR_PREPARE_NO_HAND_DOWN) != 0;
    const int rc = prepare_call(e, count, elem_size, mem, pair, call, kind);
    if (rc == TOPOAR_OK && mem == TOPOAR_MEM_HOST && e->engine.repeatable(e->call)) {
        e->memo_ok = true;
        e->memo_flags = flags;
        e->memo_generation = e->engine.generation();
    }
    return rc;
}

int topoar_engine_set_device_caps(topoar_engine_t* e, const topoar_device_caps_t* caps) {
    e->caps = *caps;
    DeviceCaps c;
    c.nccl = caps->nccl != 0;
    c.host_comms = caps->host_comms != 0;
    e->engine.set_device_caps(c);
    return TOPOAR_OK;
}

int topoar_engine_prepare_device(topoar_engine_t* e, size_t count, size_t elem_size, int redop, int redtype,
                                 topoar_call_t* call) {
    PairCaps pair;
    pair.nccl_reduces = e->caps.nccl_reduces && e->caps.nccl_reduces(redop, redtype);
    pair.kernels_reduce = e->caps.kernels_reduce && e->caps.kernels_reduce(redop, redtype);
    return prepare_call(e, count, elem_size, TOPOAR_MEM_CUDA, pair, call);
}

int topoar_engine_trial_done(topoar_engine_t* e, const topoar_call_t* call, double seconds) {
    try {
        const PreparedCall& p = e->call;
        if (!is_last_prepared(e, call) ||
            (p.route != Route::contest_host && p.route != Route::contest_down && p.route != Route::check_down))
            return fail(e, Status::internal("trial_done: the call is not the last trial prepared on this engine"));
        if (!e->io_link) return TOPOAR_OK;  // no trials without set-up I/O (prepare never starts one)
        Status s = p.route == Route::check_down ? e->engine.note_check(p, seconds, e->setup_io)
                                                : e->engine.note_trial(p, seconds, e->setup_io);
        return s ? TOPOAR_OK : fail(e, s);
    } catch (const std::bad_alloc&) {
        return fail(e, Status::internal("trial_done: out of memory"));
    } catch (const std::exception& ex) {
        return fail(e, Status::internal(std::string("trial_done: ") + ex.what()));
    } catch (...) {
        return fail(e, Status::internal("trial_done: unknown exception"));
    }
}

int topoar_engine_run(topoar_engine_t* e, const topoar_call_t* call, void* buf, const topoar_transport_t* transport,
                      const topoar_reducer_t* reducer) {
    try {
        const PreparedCall& p = e->call;
        if (!is_last_prepared(e, call))
            return fail(e, Status::internal("run: the call is not the last one prepared on this engine"));
        CallbackTransport t(*transport);
        CallbackReducer r(*reducer);
        Status s = e->engine.run(p, buf, t, r, e->io_link ? &e->setup_io : nullptr);
        return s ? TOPOAR_OK : fail(e, s);
    } catch (const std::bad_alloc&) {
        return fail(e, Status::internal("allreduce: out of memory"));
    } catch (const std::exception& ex) {
        return fail(e, Status::internal(std::string("allreduce: ") + ex.what()));
    } catch (...) {
        return fail(e, Status::internal("allreduce: unknown exception"));
    }
}

}  // extern "C"

namespace {
// The fast path's transport and reduction (exec/fast_executor.hpp: run_fast
// calls these directly; each forwards to the glue's callback).
class CallbackFastIo {
public:
    CallbackFastIo(const topoar_fast_transport_t& t, int redop, int redtype, const topoar_reducer_t& r)
        : t_(t), own_(redop, redtype), r_(r) {}
    int isend(const void* buf, std::size_t bytes, int peer, void** req) {
        return t_.isend(t_.ctx, buf, bytes, peer, req);
    }
    int irecv(void* buf, std::size_t bytes, int peer, void** req) { return t_.irecv(t_.ctx, buf, bytes, peer, req); }
    int wait_all(int n, void** reqs) { return t_.wait_all(t_.ctx, n, reqs); }
    void cancel(void** req) { t_.cancel(t_.ctx, req); }
    void reduce(const void* in, void* inout, std::size_t count) {
        if (!own_(in, inout, count)) r_.reduce(r_.ctx, in, inout, count);
    }

private:
    const topoar_fast_transport_t& t_;
    FastReduce own_;
    const topoar_reducer_t& r_;
};
}  // namespace

extern "C" int topoar_engine_run_fast(topoar_engine_t* e, const topoar_call_t* call, void* buf,
                                      const topoar_fast_transport_t* transport, int redop, int redtype,
                                      const topoar_reducer_t* reducer) {
    try {
        const PreparedCall& p = e->call;
        if (!is_last_prepared(e, call) || !p.fast)
            return fail(e, Status::internal("run_fast: the call is not the last fast call prepared on this engine"));
        CallbackFastIo io(*transport, redop, redtype, *reducer);
        FastFailure f;
        const int rc = run_fast(p.plan->fast, static_cast<char*>(buf),
                                reinterpret_cast<char*>(e->fast_scratch.get()), io, &f);
        if (rc == 0) return TOPOAR_OK;
        std::ostringstream m;
        m << "fast path: " << f.call << " of step " << f.step << " (round " << f.round;
        if (f.peer >= 0) m << ", peer " << f.peer << ", " << f.bytes << " bytes";
        m << ") failed with error " << rc;
        return fail(e, Status(Code::transport_error, m.str()));
    } catch (const std::bad_alloc&) {
        return fail(e, Status::internal("allreduce (fast path): out of memory"));
    } catch (...) {
        return fail(e, Status::internal("allreduce (fast path): unknown exception"));
    }
}

// An operation: its own copy of the call, of the glue's transport and
// reducer structures, and the operation running them.
struct topoar_op {
    topoar_transport_t t;
    topoar_reducer_t r;
    CallbackTransport transport{t};
    CallbackReducer reducer{r};
    PreparedCall call;
    CallOperation op;
    // A small plan's calls (call.fast: one chunk, a FastProgram) run as a
    // FastOperation instead: no scheduling policy, no per-step queues.
    FastOperation fast;
    bool use_fast = false;
    std::string error;
    topoar_op(const topoar_transport_t& tt, const topoar_reducer_t& rr, const PreparedCall& c)
        : t(tt), r(rr), call(c) {}
};

namespace {
int op_fail(topoar_op* op, const Status& s) {
    op->error = s.describe();
    return to_code(s);
}
}  // namespace

extern "C" {

topoar_op_t* topoar_engine_op_create(topoar_engine_t* e, const topoar_call_t* call,
                                     const topoar_transport_t* transport, const topoar_reducer_t* reducer) {
    try {
        const PreparedCall& p = e->call;
        if (!is_last_prepared(e, call)) {
            fail(e, Status::internal("op_create: the call is not the last one prepared on this engine"));
            return nullptr;
        }
        if (p.route != Route::host) {
            fail(e, Status::internal(std::string("op_create: a call whose route is ") + route_name(p.route)));
            return nullptr;
        }
        return new topoar_op(*transport, *reducer, p);
    } catch (const std::bad_alloc&) {
        fail(e, Status::internal("op_create: out of memory"));
    } catch (...) {
        fail(e, Status::internal("op_create: unknown exception"));
    }
    return nullptr;
}

int topoar_op_start(topoar_op_t* op, void* buf) {
    try {
        op->use_fast = op->call.fast && op->call.plan && op->call.plan->fast.usable();
        Status s = op->use_fast ? op->fast.start(op->call.plan->fast, static_cast<char*>(buf), op->transport,
                                                 op->reducer)
                                : op->op.start(op->call, buf, op->transport, op->reducer);
        return s ? TOPOAR_OK : op_fail(op, s);
    } catch (const std::bad_alloc&) {
        return op_fail(op, Status::internal("start: out of memory"));
    } catch (...) {
        return op_fail(op, Status::internal("start: unknown exception"));
    }
}

int topoar_op_advance(topoar_op_t* op, int* done, int* moved) {
    try {
        bool d = false, m = false;
        Status s = op->use_fast ? op->fast.advance(&d, &m) : op->op.advance(&d, &m);
        *done = d ? 1 : 0;
        *moved = m ? 1 : 0;
        return s ? TOPOAR_OK : op_fail(op, s);
    } catch (const std::bad_alloc&) {
        return op_fail(op, Status::internal("advance: out of memory"));
    } catch (...) {
        return op_fail(op, Status::internal("advance: unknown exception"));
    }
}

const char* topoar_op_error(const topoar_op_t* op) { return op->error.c_str(); }

void topoar_op_destroy(topoar_op_t* op) {
    if (!op) return;
    try {
        op->op.abandon();
        op->fast.abandon();
    } catch (...) {
    }
    delete op;
}

int topoar_engine_run_device(topoar_engine_t* e, const topoar_call_t* call, void* buf,
                             const topoar_device_transport_t* transport) {
    try {
        const PreparedCall& p = e->call;
        if (!is_last_prepared(e, call))
            return fail(e, Status::internal("run_device: the call is not the last one prepared on this engine"));
        CallbackDeviceTransport t(*transport);
        Status s = e->engine.run_device(p, buf, t);
        return s ? TOPOAR_OK : fail(e, s);
    } catch (const std::bad_alloc&) {
        return fail(e, Status::internal("allreduce (device): out of memory"));
    } catch (const std::exception& ex) {
        return fail(e, Status::internal(std::string("allreduce (device): ") + ex.what()));
    } catch (...) {
        return fail(e, Status::internal("allreduce (device): unknown exception"));
    }
}

int topoar_engine_host_position(topoar_engine_t* e, int* host, int* local, int* hosts) {
    try {
        Status s = e->engine.host_position(host, local, hosts);
        return s ? TOPOAR_OK : fail(e, s);
    } catch (...) {
        return fail(e, Status::internal("host_position: unknown exception"));
    }
}

int topoar_engine_barrier_steps(topoar_engine_t* e, topoar_barrier_step_t* steps, int* n, int* hosts) {
    static_assert(static_cast<int>(TOPOAR_BARRIER_SEND) == static_cast<int>(BarrierStep::send) &&
                      static_cast<int>(TOPOAR_BARRIER_RECV) == static_cast<int>(BarrierStep::recv) &&
                      static_cast<int>(TOPOAR_BARRIER_EXCHANGE) == static_cast<int>(BarrierStep::exchange) &&
                      static_cast<int>(TOPOAR_BARRIER_MAX_STEPS) == kBarrierMaxSteps,
                  "C and C++ barrier steps differ");
    try {
        HostLayout l;
        Status s = e->engine.host_layout_of(&l);
        if (!s) return fail(e, s);
        std::vector<BarrierStep> mine;
        s = plan_barrier(l, e->engine.rank(), &mine);
        if (!s) return fail(e, s);
        for (std::size_t k = 0; k < mine.size(); ++k) steps[k] = {mine[k].kind, mine[k].to, mine[k].from};
        *n = static_cast<int>(mine.size());
        *hosts = static_cast<int>(l.members.size());
        return TOPOAR_OK;
    } catch (...) {
        return fail(e, Status::internal("barrier_steps: unknown exception"));
    }
}

int topoar_engine_barrier_kept(const topoar_engine_t* e) {
    static_assert(TOPOAR_BARRIER_KEPT_PREVIOUS == Selection::kBarrierPrevious &&
                      TOPOAR_BARRIER_KEPT_TOPOAR == Selection::kBarrierTopoar,
                  "C and C++ barrier kinds differ");
    return e->engine.barrier_outcome();
}

void topoar_engine_keep_barrier(topoar_engine_t* e, int kind) {
    try {
        e->engine.keep_barrier_outcome(kind);
    } catch (...) {
        // the store could not grow: the next communicator times again
    }
}

int topoar_engine_hands_down_all(const topoar_engine_t* e, const char** why) {
    try {
        if (!e->engine.hands_down_all()) return 0;
        if (why) *why = kOneHostHandDownReason;
        return 1;
    } catch (...) {
        return 0;  // prepare() decides per call then
    }
}

const char* topoar_engine_last_origin(topoar_engine_t* e) {
    try {
        e->origin = Engine::describe_origin(e->call);
    } catch (...) {
        e->origin = "?";
    }
    return e->origin.c_str();
}

const char* topoar_engine_error(const topoar_engine_t* e) { return e->error.c_str(); }

const char* topoar_engine_notice(topoar_engine_t* e) {
    try {
        e->notice = e->engine.take_notice();
    } catch (...) {
        e->notice.clear();
    }
    return e->notice.empty() ? nullptr : e->notice.c_str();
}

const char* topoar_engine_describe(topoar_engine_t* e) {
    try {
        std::ostringstream s;
        if (e->engine.ready()) {
            describe(e->engine.topology(), s);
            if (e->engine.network_source() != NetworkSource::single_host) s << e->engine.describe_network();
            if (!e->engine.selection().agreed_outcomes().empty())
                s << e->engine.selection().agreed_outcomes();
            const auto& t = e->engine.model_table();
            if (!t.empty()) {
                char took[32];
                std::snprintf(took, sizeof took, "%.3f", e->engine.model_setup_seconds());
                s << "auto's default table (cost model, built in " << took << " s"
                  << (e->engine.model_table_cached() ? ", found in this process's cache" : "") << "):\n"
                  << t.to_text("cost model");
            }
        }
        e->described = s.str();
    } catch (...) {
        e->described.clear();
    }
    return e->described.c_str();
}

double topoar_engine_model_overhead(const topoar_engine_t* e) {
    return e->engine.ready() ? e->engine.model_overhead() : 0;
}

const char* topoar_engine_topology_text(topoar_engine_t* e) {
    try {
        e->topology = e->engine.ready() ? e->engine.topology().to_text() : std::string();
    } catch (...) {
        e->topology.clear();
    }
    return e->topology.c_str();
}

}  // extern "C"
