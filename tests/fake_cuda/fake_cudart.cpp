/*
 * topoar's fake CUDA runtime: a libcudart.so.13 for tests on machines
 * without a GPU.  Built against the REAL cuda_runtime_api.h so every
 * signature matches; exported under the real library's symbol version
 * (libcudart.map), so a program linked with the real libcudart.so.13 runs
 * on this one through LD_LIBRARY_PATH alone.  See README.md here for what is
 * faithful and what is not.
 *
 * Model in one paragraph: device memory is a memfd mapped twice, a
 * PROT_NONE view handed out (a host dereference faults like real device
 * memory) and a private read/write view the fake works on.  Every
 * asynchronous operation (memcpy/memset async, kernel launch, NCCL
 * operation) becomes an item on its stream's queue, numbered in global
 * submission order, and runs only when a host synchronization (or query)
 * reaches it; an item first runs what it depends on: the earlier items of
 * its stream, the legacy default stream's implicit ordering with blocking
 * streams, the events it waits for.
 */
#include <cuda_runtime_api.h>
#include <fatbinary_section.h>

#include "fakecuda.h"
#include "fakecuda_internal.h"

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

/* ------------------------------------------------------------------ state */

enum MemKind { MEM_DEVICE = cudaMemoryTypeDevice, MEM_HOST = cudaMemoryTypeHost,
               MEM_MANAGED = cudaMemoryTypeManaged };

struct Alloc {
    uintptr_t base = 0;
    size_t size = 0;          /* bytes requested */
    size_t mapped = 0;        /* bytes mapped (page multiple), 0 if not ours */
    char *view = nullptr;     /* host-accessible view (== base unless device) */
    int device = 0;
    MemKind kind = MEM_DEVICE;
    bool registered = false;  /* cudaHostRegister: memory is the caller's */
};

struct Stream;

struct SharedOp {             /* one item queued on one or more streams */
    std::function<void()> fn;
    bool done = false;
    std::vector<Stream *> streams;
};

struct Item {
    uint64_t seq;
    std::shared_ptr<SharedOp> op;
};

struct Stream {
    int device = 0;
    bool blocking = true;     /* false: cudaStreamNonBlocking */
    bool legacy = false;      /* the device's legacy default stream */
    std::deque<Item> q;
};

struct Event {
    int device = 0;
    unsigned flags = 0;
    bool recorded = false;
    Stream *stream = nullptr; /* last record */
    uint64_t seq = 0;
    std::shared_ptr<SharedOp> rec;  /* the record item; done when reached */
    uint64_t gen = 0;
};

struct KernelInfo {
    std::string name;
    bool sizes_known = false;
    std::vector<size_t> sizes;      /* from the cubin */
};

struct Twin {
    fakecuda_kernel_fn fn = nullptr;
    bool sizes_given = false;
    std::vector<size_t> sizes;
};

struct Module {
    const void *wrapper = nullptr;
    std::map<std::string, std::vector<size_t>> params;  /* kernel -> sizes */
};

struct State {
    std::recursive_mutex mu;
    int ndev = 1;
    bool trace = false;
    bool check_leaks = false;
    bool host_accessible = false;            /* FAKECUDA_HOST_ACCESSIBLE: device memory readable/writable */
    std::map<uintptr_t, Alloc> allocs;
    std::vector<Stream *> legacy;            /* per device */
    std::set<Stream *> streams;              /* created (not legacy) */
    std::set<Event *> events;
    std::map<const void *, KernelInfo> kernels;   /* host fn -> info */
    uint64_t next_seq = 1;
    unsigned long long syncs = 0, launches = 0, bytes[4] = {0, 0, 0, 0};
    unsigned long long pointer_queries = 0;  /* cudaPointerGetAttributes calls */
    std::vector<Module *> modules;
};

std::map<std::string, Twin> &twin_table() {
    static auto *t = new std::map<std::string, Twin>;  /* twins register from constructors */
    return *t;
}

State &S() {
    static State *s = [] {
        auto *st = new State;
        const char *e = getenv("FAKECUDA_DEVICES");
        st->ndev = e ? atoi(e) : 1;
        if (st->ndev < 0) st->ndev = 0;
        st->trace = getenv("FAKECUDA_TRACE") && atoi(getenv("FAKECUDA_TRACE")) > 0;
        st->check_leaks = getenv("FAKECUDA_CHECK_LEAKS") && atoi(getenv("FAKECUDA_CHECK_LEAKS")) > 0;
        st->host_accessible = getenv("FAKECUDA_HOST_ACCESSIBLE") && atoi(getenv("FAKECUDA_HOST_ACCESSIBLE")) > 0;
        for (int d = 0; d < st->ndev; d++) {
            auto *ls = new Stream;
            ls->device = d;
            ls->legacy = true;
            st->legacy.push_back(ls);
        }
        return st;
    }();
    return *s;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local std::map<int, Stream *> *t_per_thread = nullptr;

struct CallConfig { dim3 grid, block; size_t shmem; cudaStream_t stream; };
thread_local std::vector<CallConfig> *t_configs = nullptr;

void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *fmt, ...) {
    if (!S().trace) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fakecuda[%d]: ", (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fakecuda[%d]: ", (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

cudaError_t ret(cudaError_t e) {
    if (e != cudaSuccess) t_last_error = e;
    return e;
}

#define LOCK std::lock_guard<std::recursive_mutex> lock_(S().mu)

/* --------------------------------------------------------------- pointers */

Alloc *find_alloc(const void *p) {
    auto &m = S().allocs;
    uintptr_t u = (uintptr_t)p;
    auto it = m.upper_bound(u);
    if (it == m.begin()) return nullptr;
    --it;
    Alloc &a = it->second;
    if (u >= a.base && (u < a.base + a.size || (a.size == 0 && u == a.base))) return &a;
    return nullptr;
}

/* Host view of a device range; nullptr when not one live allocation. */
char *dev_view(const void *p, size_t bytes, const Alloc **out = nullptr) {
    Alloc *a = find_alloc(p);
    if (!a) return nullptr;
    uintptr_t off = (uintptr_t)p - a->base;
    if (off + bytes > a->size) return nullptr;
    if (out) *out = a;
    return a->view + off;
}

size_t page_round(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    if (n == 0) n = 1;
    return (n + pg - 1) / pg * pg;
}

/* ---------------------------------------------------------------- streams */

Stream *legacy_of(int dev) { return S().legacy[dev]; }

Stream *resolve_stream(cudaStream_t s, bool *ok) {
    *ok = true;
    State &st = S();
    if (st.ndev == 0) { *ok = false; return nullptr; }
    if (s == nullptr || s == cudaStreamLegacy) return legacy_of(t_device);
    if (s == cudaStreamPerThread) {
        if (!t_per_thread) t_per_thread = new std::map<int, Stream *>;
        Stream *&p = (*t_per_thread)[t_device];
        if (!p) { p = new Stream; p->device = t_device; p->blocking = true; st.streams.insert(p); }
        return p;
    }
    Stream *p = (Stream *)s;
    if (!st.streams.count(p)) { *ok = false; return nullptr; }
    return p;
}

void run_through(Stream *s, uint64_t seq);

/* Implicit legacy-default-stream ordering: work on the legacy stream waits
 * for earlier work on the device's blocking streams and vice versa. */
void run_implicit_deps(Stream *s, uint64_t seq) {
    State &st = S();
    if (s->legacy) {
        for (Stream *o : st.streams)
            if (o->blocking && o->device == s->device) run_through(o, seq - 1);
    } else if (s->blocking) {
        run_through(legacy_of(s->device), seq - 1);
    }
}

void exec_op(const std::shared_ptr<SharedOp> &op, uint64_t seq) {
    if (op->done) return;
    for (Stream *o : op->streams) { run_through(o, seq - 1); run_implicit_deps(o, seq); }
    if (op->done) return;
    op->done = true;
    op->fn();
}

void run_through(Stream *s, uint64_t seq) {
    while (!s->q.empty() && s->q.front().seq <= seq) {
        Item it = s->q.front();
        exec_op(it.op, it.seq);
        /* the item may have been popped by a nested run of this stream */
        if (!s->q.empty() && s->q.front().op == it.op) s->q.pop_front();
    }
}

uint64_t enqueue(const std::vector<Stream *> &ss, std::function<void()> fn) {
    auto op = std::make_shared<SharedOp>();
    op->fn = std::move(fn);
    op->streams = ss;
    uint64_t seq = S().next_seq++;
    for (Stream *s : ss) s->q.push_back(Item{seq, op});
    return seq;
}

uint64_t enqueue1(Stream *s, std::function<void()> fn) { return enqueue({s}, std::move(fn)); }

void sync_stream_all(Stream *s) { run_through(s, UINT64_MAX); }

void sync_device(int dev) {
    State &st = S();
    sync_stream_all(legacy_of(dev));
    for (Stream *o : st.streams)
        if (o->device == dev) sync_stream_all(o);
}

/* ------------------------------------------------------- fatbin / cubin */

void parse_cubin(const unsigned char *elf, size_t len, Module *m) {
    if (len < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG) != 0 || elf[EI_CLASS] != ELFCLASS64) return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
    if (eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len) return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
    if (eh->e_shstrndx >= eh->e_shnum) return;
    const char *names = (const char *)elf + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; i++) {
        const char *nm = names + sh[i].sh_name;
        if (strncmp(nm, ".nv.info.", 9) != 0) continue;
        std::string kname = nm + 9;
        if (m->params.count(kname)) continue;
        if (sh[i].sh_offset + sh[i].sh_size > len) continue;
        const unsigned char *p = elf + sh[i].sh_offset, *end = p + sh[i].sh_size;
        std::map<int, size_t> ord;
        while (p + 4 <= end) {
            unsigned fmt = p[0], attr = p[1];
            size_t vlen = 0;
            const unsigned char *val = p + 2;
            if (fmt == 4) { uint16_t l; memcpy(&l, p + 2, 2); vlen = l; val = p + 4; p += 4 + vlen; }
            else p += 4;
            if (fmt == 4 && attr == 0x17 && vlen >= 12) {      /* EIATTR_KPARAM_INFO */
                uint16_t ordinal; uint32_t w;
                memcpy(&ordinal, val + 4, 2);
                memcpy(&w, val + 8, 4);
                ord[ordinal] = (w >> 18) & 0x3fff;
            }
        }
        std::vector<size_t> sizes;
        for (auto &kv : ord) {
            if ((size_t)kv.first != sizes.size()) { sizes.clear(); break; }
            sizes.push_back(kv.second);
        }
        if (sizes.size() == ord.size()) m->params[kname] = sizes;
    }
}

void parse_fatbin_blob(const unsigned char *fb, Module *m) {
    uint32_t magic; uint16_t hsz; uint64_t fsz;
    memcpy(&magic, fb, 4);
    if (magic != 0xBA55ED50u) return;
    memcpy(&hsz, fb + 6, 2);
    memcpy(&fsz, fb + 8, 8);
    const unsigned char *p = fb + hsz, *end = fb + hsz + fsz;
    while (p + 0x40 <= end) {
        uint16_t kind; uint32_t ehsz; uint64_t psz;
        memcpy(&kind, p, 2);
        memcpy(&ehsz, p + 4, 4);
        memcpy(&psz, p + 8, 8);
        if (ehsz < 0x40 || p + ehsz + psz > end) break;
        if (kind == 2) parse_cubin(p + ehsz, psz, m);  /* a compressed one fails the ELF magic */
        p += ehsz + psz;
    }
}

/* -------------------------------------------------------------- leaks */

void leak_check_at_exit() {
    State &st = S();
    if (!st.check_leaks) return;
    int n = 0;
    for (auto &kv : st.allocs) {
        const Alloc &a = kv.second;
        if (a.registered) continue;
        const char *k = a.kind == MEM_DEVICE ? "device" : a.kind == MEM_HOST ? "pinned host" : "managed";
        diag("LEAK: %s allocation %p of %zu bytes (device %d) still live at exit", k, (void *)a.base, a.size, a.device);
        n++;
    }
    for (auto &kv : st.allocs)
        if (kv.second.registered)
            diag("LEAK: host range %p of %zu bytes still cudaHostRegister'ed at exit", (void *)kv.second.base, kv.second.size), n++;
    if (n) {
        diag("FAKECUDA_CHECK_LEAKS: %d live allocation(s) at exit: exiting with status 66", n);
        fflush(stderr);
        _exit(66);
    }
}

__attribute__((constructor)) void fake_init() {
    (void)S();
    atexit(leak_check_at_exit);
}

/* -------------------------------------------------------------- memory ops */

enum PtrClass { P_HOST, P_PINNED, P_DEVICE, P_MANAGED };

PtrClass classify(const void *p) {
    const Alloc *a = find_alloc(p);
    if (!a) return P_HOST;
    if (a->kind == MEM_DEVICE) return P_DEVICE;
    if (a->kind == MEM_MANAGED) return P_MANAGED;
    return P_PINNED;
}

const char *kind_name(int k) {
    switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
    }
    return "invalid cudaMemcpyKind";
}

const char *class_name(PtrClass c) {
    switch (c) {
    case P_HOST: return "host (unregistered)";
    case P_PINNED: return "pinned host";
    case P_DEVICE: return "device";
    case P_MANAGED: return "managed";
    }
    return "?";
}

/* Resolves the copy: checks kind vs pointers and ranges.  On success sets the
 * source/destination addresses the fake may touch and the resolved kind. */
cudaError_t prepare_copy(const char *fn, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                         char **vdst, const char **vsrc, int *rkind) {
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
        diag("%s: invalid cudaMemcpyKind %d", fn, (int)kind);
        return cudaErrorInvalidMemcpyDirection;
    }
    PtrClass cs = classify(src), cd = classify(dst);
    bool sdev = cs == P_DEVICE, ddev = cd == P_DEVICE;
    bool sdevok = cs == P_DEVICE || cs == P_MANAGED, ddevok = cd == P_DEVICE || cd == P_MANAGED;
    bool bad = false;
    switch (kind) {
    case cudaMemcpyHostToHost: bad = sdev || ddev; break;
    case cudaMemcpyHostToDevice: bad = sdev || !ddevok; break;
    case cudaMemcpyDeviceToHost: bad = !sdevok || ddev; break;
    case cudaMemcpyDeviceToDevice: bad = !sdevok || !ddevok; break;
    default: break;
    }
    if (bad) {
        diag("%s: kind %s does not match the pointers: dst %p is %s memory, src %p is %s memory",
             fn, kind_name(kind), dst, class_name(cd), src, class_name(cs));
        return cudaErrorInvalidValue;
    }
    if (n == 0) { *vdst = (char *)dst; *vsrc = (const char *)src; *rkind = kind; return cudaSuccess; }
    // Memory the fake tracks is reached through its view (and must hold the
    // whole range); plain host memory is used as it is.
    auto view = [&](const void *p, PtrClass c, bool dev, const char *which, char **out) {
        if (!(dev || c == P_MANAGED || c == P_PINNED)) {
            *out = (char *)p;
            return true;
        }
        *out = dev_view(p, n);
        if (*out) return true;
        const Alloc *a = find_alloc(p);
        diag("%s: %s range %p + %zu bytes leaves its %s allocation %p of %zu bytes", fn, which, p, n, class_name(c),
             (void *)a->base, a->size);
        return false;
    };
    char *vs;
    if (!view(src, cs, sdev, "source", &vs) || !view(dst, cd, ddev, "destination", vdst)) return cudaErrorInvalidValue;
    *vsrc = vs;
    if (kind == cudaMemcpyDefault) {
        bool s = cs == P_DEVICE || cs == P_MANAGED, d = cd == P_DEVICE || cd == P_MANAGED;
        *rkind = s ? (d ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                   : (d ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    } else {
        *rkind = kind;
    }
    return cudaSuccess;
}

cudaError_t do_memcpy(const char *fn, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                      cudaStream_t stream, bool async) {
    LOCK;
    State &st = S();
    if (st.ndev == 0) return ret(cudaErrorNoDevice);
    trace("%s(dst=%p, src=%p, %zu bytes, %s, stream=%p)", fn, dst, src, n, kind_name(kind), (void *)stream);
    char *vd; const char *vs; int rk;
    cudaError_t e = prepare_copy(fn, dst, src, n, kind, &vd, &vs, &rk);
    if (e != cudaSuccess) return ret(e);
    bool ok;
    Stream *s = resolve_stream(async ? stream : nullptr, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    if (n == 0) return cudaSuccess;
    PtrClass cs = classify(src), cd = classify(dst);
    std::function<void()> f;
    if (!async && cs == P_HOST && rk == cudaMemcpyHostToDevice) {
        /* Synchronous copy from pageable memory, as the real runtime does
         * it: the legacy stream is synchronized first, the source is staged,
         * and the call returns before the DMA into device memory completes.
         * That DMA is legacy-stream work: blocking streams wait for it,
         * non-blocking streams do not (their readers see stale data). */
        run_through(s, enqueue1(s, [] {}));
        auto staged = std::make_shared<std::vector<char>>(vs, vs + n);
        enqueue1(s, [vd, staged, n, rk] { memcpy(vd, staged->data(), n); S().bytes[rk] += n; });
        st.syncs++;
        return cudaSuccess;
    }
    if (async && cs == P_HOST && (rk == cudaMemcpyHostToDevice)) {
        /* pageable source: the real runtime stages it before returning */
        auto staged = std::make_shared<std::vector<char>>(vs, vs + n);
        f = [vd, staged, n, rk] { memcpy(vd, staged->data(), n); S().bytes[rk] += n; };
    } else {
        f = [vd, vs, n, rk] { memmove(vd, vs, n); S().bytes[rk] += n; };
    }
    uint64_t seq = enqueue1(s, f);
    /* synchronous copies, and async copies to pageable host memory, return
     * only once the copy (and so all it depends on) has completed */
    if (!async || (cd == P_HOST && rk == cudaMemcpyDeviceToHost)) {
        if (!async) st.syncs++;
        run_through(s, seq);
    }
    return cudaSuccess;
}

cudaError_t do_memset(const char *fn, void *p, int value, size_t n, cudaStream_t stream, bool async) {
    LOCK;
    State &st = S();
    if (st.ndev == 0) return ret(cudaErrorNoDevice);
    trace("%s(%p, %d, %zu bytes, stream=%p)", fn, p, value, n, (void *)stream);
    if (n == 0) return cudaSuccess;
    PtrClass c = classify(p);
    if (c != P_DEVICE && c != P_MANAGED) {
        diag("%s: %p is %s memory, not device memory", fn, p, class_name(c));
        return ret(cudaErrorInvalidValue);
    }
    char *v = dev_view(p, n);
    if (!v) {
        const Alloc *a = find_alloc(p);
        diag("%s: range %p + %zu bytes leaves its allocation %p of %zu bytes", fn, p, n, (void *)a->base, a->size);
        return ret(cudaErrorInvalidValue);
    }
    bool ok;
    Stream *s = resolve_stream(async ? stream : nullptr, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    uint64_t seq = enqueue1(s, [v, value, n] { memset(v, value, n); });
    if (!async) { st.syncs++; run_through(s, seq); }
    return cudaSuccess;
}

cudaError_t alloc_device(void **p, size_t size, int dev, MemKind kind) {
    if (!p) return cudaErrorInvalidValue;
    if (size == 0) { *p = nullptr; return cudaSuccess; }
    size_t len = page_round(size);
    Alloc a;
    if (kind == MEM_DEVICE) {
        int fd = memfd_create("fakecuda-device", MFD_CLOEXEC);
        if (fd < 0) return cudaErrorMemoryAllocation;
        if (ftruncate(fd, (off_t)len) != 0) { close(fd); return cudaErrorMemoryAllocation; }
        /* FAKECUDA_HOST_ACCESSIBLE: the pointer handed out is a read/write
         * view too, as host code of a CUDA-aware MPI (or a coherent
         * CPU-GPU machine) can use it; otherwise the host cannot touch it */
        void *dp = mmap(nullptr, len, S().host_accessible ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED, fd, 0);
        void *hv = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (dp == MAP_FAILED || hv == MAP_FAILED) {
            if (dp != MAP_FAILED) munmap(dp, len);
            if (hv != MAP_FAILED) munmap(hv, len);
            return cudaErrorMemoryAllocation;
        }
        a.base = (uintptr_t)dp;
        a.view = (char *)hv;
    } else {
        void *hp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (hp == MAP_FAILED) return cudaErrorMemoryAllocation;
        a.base = (uintptr_t)hp;
        a.view = (char *)hp;
    }
    a.size = size;
    a.mapped = len;
    a.device = dev;
    a.kind = kind;
    S().allocs[a.base] = a;
    *p = (void *)a.base;
    return cudaSuccess;
}

cudaError_t free_kind(void *p, MemKind want, const char *fn) {
    State &st = S();
    auto it = st.allocs.find((uintptr_t)p);
    bool match = it != st.allocs.end() && !it->second.registered &&
                 (want == MEM_HOST ? it->second.kind == MEM_HOST : it->second.kind != MEM_HOST);
    if (!match) {
        diag("%s(%p): not the start of a live %s allocation", fn, p,
             want == MEM_HOST ? "pinned host" : "device or managed");
        return cudaErrorInvalidValue;
    }
    Alloc a = it->second;
    st.allocs.erase(it);
    if (a.kind == MEM_DEVICE) munmap(a.view, a.mapped);
    munmap((void *)a.base, a.mapped);
    return cudaSuccess;
}

/* --------------------------------------------------------------- errors */

struct ErrName { int code; const char *name; };
const ErrName err_names[] = {
#include "cuda_error_names.inc"
};

const char *err_name(cudaError_t e) {
    for (const ErrName &n : err_names)
        if (n.code == (int)e) return n.name;
    return nullptr;
}

/* -------------------------------------------------------------- launches */

cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream) {
    LOCK;
    State &st = S();
    if (st.ndev == 0) return ret(cudaErrorNoDevice);
    auto kit = st.kernels.find(func);
    if (kit == st.kernels.end()) {
        diag("cudaLaunchKernel: %p is not a registered kernel", func);
        return ret(cudaErrorInvalidDeviceFunction);
    }
    KernelInfo &ki = kit->second;
    trace("cudaLaunchKernel(%s, grid=(%u,%u,%u), block=(%u,%u,%u), shmem=%zu, stream=%p)", ki.name.c_str(),
          grid.x, grid.y, grid.z, block.x, block.y, block.z, shmem, (void *)stream);
    auto tw = twin_table().find(ki.name);
    if (tw == twin_table().end() || !tw->second.fn) {
        diag("cudaLaunchKernel: kernel %s has no host twin in the fake runtime (tests/fake_cuda/kernel_twins*.cpp)",
             ki.name.c_str());
        return ret(cudaErrorInvalidDeviceFunction);
    }
    const std::vector<size_t> *sizes = nullptr;
    if (tw->second.sizes_given) {
        if (ki.sizes_known && ki.sizes != tw->second.sizes) {
            diag("cudaLaunchKernel: kernel %s: the parameter sizes registered with its twin (%zu params) "
                 "disagree with the cubin's (%zu params)", ki.name.c_str(), tw->second.sizes.size(), ki.sizes.size());
            return ret(cudaErrorInvalidDeviceFunction);
        }
        sizes = &tw->second.sizes;
    } else if (ki.sizes_known) {
        sizes = &ki.sizes;
    } else {
        diag("cudaLaunchKernel: kernel %s: parameter sizes unknown (no uncompressed cubin in its fat binary); "
             "register its twin with fakecuda_register_kernel_params()", ki.name.c_str());
        return ret(cudaErrorInvalidDeviceFunction);
    }
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
        (unsigned long long)block.x * block.y * block.z > 1024) {
        diag("cudaLaunchKernel: kernel %s: invalid configuration grid=(%u,%u,%u) block=(%u,%u,%u)",
             ki.name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return ret(cudaErrorInvalidConfiguration);
    }
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    if (!sizes->empty() && !args) return ret(cudaErrorInvalidValue);
    /* copy the argument values now, as the real runtime does */
    std::vector<size_t> offs;
    size_t total = 0;
    for (size_t sz : *sizes) { total = (total + 15) / 16 * 16; offs.push_back(total); total += sz; }
    auto buf = std::make_shared<std::vector<char>>(total + 16);
    for (size_t i = 0; i < sizes->size(); i++) memcpy(buf->data() + offs[i], args[i], (*sizes)[i]);
    fakecuda_kernel_fn fn = tw->second.fn;
    std::string name = ki.name;
    unsigned gx = grid.x, bx = block.x;
    enqueue1(s, [buf, offs, fn, gx, bx, name] {
        std::vector<void *> a(offs.size() + 1, nullptr);
        for (size_t i = 0; i < offs.size(); i++) a[i] = buf->data() + offs[i];
        trace("running kernel %s", name.c_str());
        fn(a.data(), gx, bx);
        S().launches++;
    });
    return cudaSuccess;
}

} // namespace

/* ======================================================== exported hooks */

FAKE_EXPORT void fakecuda_register_kernel(const char *device_name, fakecuda_kernel_fn fn) {
    LOCK;
    Twin &t = twin_table()[device_name];
    t.fn = fn;
}

FAKE_EXPORT void fakecuda_register_kernel_params(const char *device_name, fakecuda_kernel_fn fn, int nparams,
                                                 const size_t *param_sizes) {
    LOCK;
    Twin &t = twin_table()[device_name];
    t.fn = fn;
    t.sizes_given = true;
    t.sizes.assign(param_sizes, param_sizes + (nparams > 0 ? nparams : 0));
}

FAKE_EXPORT void *fakecuda_host_view(const void *device_ptr, size_t bytes) {
    LOCK;
    const Alloc *a = nullptr;
    char *v = dev_view(device_ptr, bytes, &a);
    if (!v || (a->kind != MEM_DEVICE && a->kind != MEM_MANAGED)) {
        diag("fakecuda_host_view: [%p, +%zu bytes) is not inside one live device allocation", device_ptr, bytes);
        abort();
    }
    return v;
}

FAKE_EXPORT unsigned long long fakecuda_sync_count(void) { LOCK; return S().syncs; }
FAKE_EXPORT unsigned long long fakecuda_launch_count(void) { LOCK; return S().launches; }
FAKE_EXPORT unsigned long long fakecuda_pointer_queries(void) { LOCK; return S().pointer_queries; }
FAKE_EXPORT unsigned long long fakecuda_bytes_copied(int kind) {
    LOCK;
    return kind >= 0 && kind < 4 ? S().bytes[kind] : 0;
}
FAKE_EXPORT unsigned long fakecuda_live_allocations(int type) {
    LOCK;
    unsigned long n = 0;
    for (auto &kv : S().allocs)
        if ((int)kv.second.kind == type && !kv.second.registered) n++;
    return n;
}
FAKE_EXPORT void fakecuda_reset_counters(void) {
    LOCK;
    State &st = S();
    st.syncs = st.launches = st.pointer_queries = 0;
    for (auto &b : st.bytes) b = 0;
}

FAKE_EXPORT int fakecuda_internal_view(const void *p, size_t bytes, void **view, int *device) {
    LOCK;
    const Alloc *a = find_alloc(p);
    if (!a || (a->kind != MEM_DEVICE && a->kind != MEM_MANAGED)) return -1;
    char *v = dev_view(p, bytes);
    if (!v) return -2;
    *view = v;
    if (device) *device = a->device;
    return 0;
}

FAKE_EXPORT cudaError_t fakecuda_internal_enqueue(int n, const cudaStream_t *streams, void (*fn)(void *), void *arg) {
    LOCK;
    std::vector<Stream *> ss;
    for (int i = 0; i < n; i++) {
        bool ok;
        Stream *s = resolve_stream(streams[i], &ok);
        if (!ok) return cudaErrorInvalidResourceHandle;
        bool dup = false;
        for (Stream *o : ss) dup |= o == s;
        if (!dup) ss.push_back(s);
    }
    if (ss.empty()) return cudaErrorInvalidValue;
    enqueue(ss, [fn, arg] { fn(arg); });
    return cudaSuccess;
}

FAKE_EXPORT int fakecuda_internal_stream_device(cudaStream_t s, int *device) {
    LOCK;
    bool ok;
    Stream *st = resolve_stream(s, &ok);
    if (!ok) return -1;
    *device = st->device;
    return 0;
}

FAKE_EXPORT int fakecuda_internal_current_device(void) { return t_device; }

/* ================================================= nvcc registration ABI */

FAKE_EXPORT void **__cudaRegisterFatBinary(void *fatCubin) {
    LOCK;
    auto *m = new Module;
    m->wrapper = fatCubin;
    auto *w = (const __fatBinC_Wrapper_t *)fatCubin;
    if (w && w->magic == FATBINC_MAGIC && w->data) parse_fatbin_blob((const unsigned char *)w->data, m);
    S().modules.push_back(m);
    trace("__cudaRegisterFatBinary(%p): %zu kernel parameter layouts", fatCubin, m->params.size());
    return (void **)m;
}

FAKE_EXPORT void __cudaRegisterFatBinaryEnd(void **) {}

FAKE_EXPORT void __cudaUnregisterFatBinary(void **handle) {
    (void)handle; /* kernels stay known: twins may be looked up during exit */
}

FAKE_EXPORT void __cudaRegisterFunction(void **handle, const char *hostFun, char *, const char *deviceName, int,
                                        uint3 *, uint3 *, dim3 *, dim3 *, int *) {
    LOCK;
    Module *m = (Module *)handle;
    KernelInfo &ki = S().kernels[(const void *)hostFun];
    ki.name = deviceName;
    auto it = m->params.find(deviceName);
    ki.sizes_known = it != m->params.end();
    if (ki.sizes_known) ki.sizes = it->second;
    trace("__cudaRegisterFunction(%p, %s, %s)", (const void *)hostFun, deviceName,
          ki.sizes_known ? "parameter sizes from cubin" : "no parameter sizes");
}

FAKE_EXPORT void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int, int) {}
FAKE_EXPORT void __cudaRegisterManagedVar(void **, void **, char *, const char *, int, size_t, int, int) {}
FAKE_EXPORT char __cudaInitModule(void **) { return 1; }

FAKE_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream) {
    if (!t_configs) t_configs = new std::vector<CallConfig>;
    t_configs->push_back(CallConfig{grid, block, shmem, stream});
    return 0;
}

FAKE_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream) {
    if (!t_configs || t_configs->empty()) return cudaErrorInvalidConfiguration;
    CallConfig c = t_configs->back();
    t_configs->pop_back();
    *grid = c.grid;
    *block = c.block;
    *shmem = c.shmem;
    *(cudaStream_t *)stream = c.stream;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *hostFun) {
    LOCK;
    if (!S().kernels.count(hostFun)) return cudaErrorInvalidDeviceFunction;
    *k = (cudaKernel_t)hostFun;   /* the handle is the host function */
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t shmem,
                                           cudaStream_t stream) {
    return launch((const void *)k, grid, block, args, shmem, stream);
}

FAKE_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                         cudaStream_t stream) {
    return launch(func, grid, block, args, shmem, stream);
}

/* ================================================================ devices */

#define NEED_DEVICE                                                  \
    do {                                                             \
        if (S().ndev == 0) return ret(cudaErrorNoDevice);            \
    } while (0)

FAKE_EXPORT cudaError_t cudaGetDeviceCount(int *count) {
    LOCK;
    trace("cudaGetDeviceCount() = %d", S().ndev);
    if (!count) return ret(cudaErrorInvalidValue);
    *count = S().ndev;
    return S().ndev ? cudaSuccess : ret(cudaErrorNoDevice);
}

FAKE_EXPORT cudaError_t cudaGetDevice(int *device) {
    NEED_DEVICE;
    if (!device) return ret(cudaErrorInvalidValue);
    *device = t_device;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaSetDevice(int device) {
    trace("cudaSetDevice(%d)", device);
    NEED_DEVICE;
    if (device < 0 || device >= S().ndev) return ret(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaSetDeviceFlags(unsigned) { NEED_DEVICE; return cudaSuccess; }
FAKE_EXPORT cudaError_t cudaInitDevice(int device, unsigned, unsigned) {
    NEED_DEVICE;
    return device >= 0 && device < S().ndev ? cudaSuccess : ret(cudaErrorInvalidDevice);
}

static int attr_value(cudaDeviceAttr a, int dev) {
    switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: return 1024;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: return 1024;
    case cudaDevAttrMaxBlockDimZ: return 64;
    case cudaDevAttrMaxGridDimX: return 2147483647;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: return 65535;
    case cudaDevAttrMaxSharedMemoryPerBlock: return 49152;
    case cudaDevAttrWarpSize: return 32;
    case cudaDevAttrClockRate: return 1980000;
    case cudaDevAttrMultiProcessorCount: return 132;
    case cudaDevAttrComputeCapabilityMajor: return 9;
    case cudaDevAttrComputeCapabilityMinor: return 0;
    case cudaDevAttrPciBusId: return dev + 1;
    case cudaDevAttrPciDeviceId: case cudaDevAttrPciDomainId: return 0;
    case cudaDevAttrUnifiedAddressing: return 1;
    case cudaDevAttrManagedMemory: return 1;
    case cudaDevAttrConcurrentManagedAccess: return 1;
    case cudaDevAttrCanMapHostMemory: return 1;
    case cudaDevAttrMemoryPoolsSupported: return 1;
    case cudaDevAttrGlobalMemoryBusWidth: return 5120;
    case cudaDevAttrAsyncEngineCount: return 2;
    case cudaDevAttrConcurrentKernels: return 1;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return 2048;
    default: return 0;
    }
}

FAKE_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    NEED_DEVICE;
    if (!value) return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= S().ndev) return ret(cudaErrorInvalidDevice);
    *value = attr_value(attr, device);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device) {
    NEED_DEVICE;
    if (!p) return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= S().ndev) return ret(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "fakecuda");
    for (int i = 0; i < 16; i++) p->uuid.bytes[i] = (char)(0xfa + i * 7 + device);
    p->totalGlobalMem = 80ull << 30;
    p->sharedMemPerBlock = 49152;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    p->pciBusID = device + 1;
    p->unifiedAddressing = 1;
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->canMapHostMemory = 1;
    p->asyncEngineCount = 2;
    p->concurrentKernels = 1;
    p->maxThreadsPerMultiProcessor = 2048;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int device) {
    NEED_DEVICE;
    if (device < 0 || device >= S().ndev) return ret(cudaErrorInvalidDevice);
    snprintf(buf, (size_t)len, "00000000:%02X:00.0", device + 1);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDriverGetVersion(int *v) {
    if (!v) return ret(cudaErrorInvalidValue);
    *v = 13000;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaRuntimeGetVersion(int *v) {
    if (!v) return ret(cudaErrorInvalidValue);
    *v = 13000;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDeviceSynchronize(void) {
    LOCK;
    NEED_DEVICE;
    trace("cudaDeviceSynchronize()");
    S().syncs++;
    sync_device(t_device);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDeviceReset(void) {
    LOCK;
    NEED_DEVICE;
    sync_device(t_device);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
    NEED_DEVICE;
    if (dev < 0 || dev >= S().ndev || peer < 0 || peer >= S().ndev) return ret(cudaErrorInvalidDevice);
    *can = dev != peer;
    return cudaSuccess;
}
FAKE_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned) {
    NEED_DEVICE;
    return peer >= 0 && peer < S().ndev ? cudaSuccess : ret(cudaErrorInvalidDevice);
}

FAKE_EXPORT cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
    NEED_DEVICE;
    if (free_b) *free_b = 79ull << 30;
    if (total) *total = 80ull << 30;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetLastError(void) {
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

FAKE_EXPORT cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

FAKE_EXPORT const char *cudaGetErrorName(cudaError_t e) {
    if (e == cudaSuccess) return "cudaSuccess";
    const char *n = err_name(e);
    return n ? n : "cudaErrorUnknown";
}

FAKE_EXPORT const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    default: break;
    }
    return err_name(e) ? err_name(e) : "unrecognized error code";
}

/* ================================================================ memory */

FAKE_EXPORT cudaError_t cudaMalloc(void **p, size_t size) {
    LOCK;
    NEED_DEVICE;
    cudaError_t e = alloc_device(p, size, t_device, MEM_DEVICE);
    trace("cudaMalloc(%zu) = %p", size, p ? *p : nullptr);
    return ret(e);
}

FAKE_EXPORT cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    cudaError_t e = alloc_device(p, size, s->device, MEM_DEVICE);
    trace("cudaMallocAsync(%zu, stream=%p) = %p", size, (void *)stream, p ? *p : nullptr);
    return ret(e);
}

FAKE_EXPORT cudaError_t cudaMallocManaged(void **p, size_t size, unsigned) {
    LOCK;
    NEED_DEVICE;
    cudaError_t e = alloc_device(p, size, t_device, MEM_MANAGED);
    trace("cudaMallocManaged(%zu) = %p", size, p ? *p : nullptr);
    return ret(e);
}

FAKE_EXPORT cudaError_t cudaFree(void *p) {
    LOCK;
    NEED_DEVICE;
    trace("cudaFree(%p)", p);
    if (!p) return cudaSuccess;
    /* the real cudaFree synchronizes the device before it frees */
    sync_device(t_device);
    return ret(free_kind(p, MEM_DEVICE, "cudaFree"));
}

FAKE_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    trace("cudaFreeAsync(%p, stream=%p)", p, (void *)stream);
    if (!p) return cudaSuccess;
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    auto it = S().allocs.find((uintptr_t)p);
    if (it == S().allocs.end() || it->second.kind != MEM_DEVICE) {
        diag("cudaFreeAsync(%p): not the start of a live device allocation", p);
        return ret(cudaErrorInvalidValue);
    }
    /* freed when the stream reaches it; until then earlier work may use it */
    enqueue1(s, [p] { free_kind(p, MEM_DEVICE, "cudaFreeAsync"); });
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaMallocHost(void **p, size_t size) {
    LOCK;
    NEED_DEVICE;
    cudaError_t e = alloc_device(p, size, t_device, MEM_HOST);
    trace("cudaMallocHost(%zu) = %p", size, p ? *p : nullptr);
    return ret(e);
}

FAKE_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned) { return cudaMallocHost(p, size); }

FAKE_EXPORT cudaError_t cudaFreeHost(void *p) {
    LOCK;
    NEED_DEVICE;
    trace("cudaFreeHost(%p)", p);
    if (!p) return cudaSuccess;
    sync_device(t_device);
    return ret(free_kind(p, MEM_HOST, "cudaFreeHost"));
}

FAKE_EXPORT cudaError_t cudaHostRegister(void *p, size_t size, unsigned) {
    LOCK;
    NEED_DEVICE;
    trace("cudaHostRegister(%p, %zu)", p, size);
    if (!p || size == 0) return ret(cudaErrorInvalidValue);
    State &st = S();
    uintptr_t u = (uintptr_t)p;
    auto it = st.allocs.lower_bound(u);
    if (find_alloc(p) || (it != st.allocs.end() && it->first < u + size))
        return ret(cudaErrorHostMemoryAlreadyRegistered);
    Alloc a;
    a.base = u;
    a.size = size;
    a.view = (char *)p;
    a.device = t_device;
    a.kind = MEM_HOST;
    a.registered = true;
    st.allocs[u] = a;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaHostUnregister(void *p) {
    LOCK;
    NEED_DEVICE;
    trace("cudaHostUnregister(%p)", p);
    auto it = S().allocs.find((uintptr_t)p);
    if (it == S().allocs.end() || !it->second.registered) return ret(cudaErrorHostMemoryNotRegistered);
    S().allocs.erase(it);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned) {
    LOCK;
    const Alloc *a = find_alloc(h);
    if (!a || a->kind != MEM_HOST) return ret(cudaErrorInvalidValue);
    *d = h;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attr, const void *p) {
    LOCK;
    NEED_DEVICE;
    if (!attr) return ret(cudaErrorInvalidValue);
    S().pointer_queries++;
    memset(attr, 0, sizeof *attr);
    const Alloc *a = find_alloc(p);
    if (!a) {
        attr->type = cudaMemoryTypeUnregistered;
        attr->device = -2;
        attr->hostPointer = (void *)p;
    } else {
        attr->type = (cudaMemoryType)a->kind;
        attr->device = a->device;
        attr->devicePointer = (void *)p;
        attr->hostPointer = a->kind == MEM_DEVICE ? nullptr : (void *)p;
    }
    trace("cudaPointerGetAttributes(%p) = type %d device %d", p, (int)attr->type, attr->device);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    return do_memcpy("cudaMemcpy", dst, src, n, kind, nullptr, false);
}

FAKE_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                                        cudaStream_t stream) {
    return do_memcpy("cudaMemcpyAsync", dst, src, n, kind, stream, true);
}

FAKE_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int, const void *src, int, size_t n) {
    return do_memcpy("cudaMemcpyPeer", dst, src, n, cudaMemcpyDeviceToDevice, nullptr, false);
}

FAKE_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int, const void *src, int, size_t n, cudaStream_t s) {
    return do_memcpy("cudaMemcpyPeerAsync", dst, src, n, cudaMemcpyDeviceToDevice, s, true);
}

FAKE_EXPORT cudaError_t cudaMemset(void *p, int value, size_t n) {
    return do_memset("cudaMemset", p, value, n, nullptr, false);
}

FAKE_EXPORT cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t stream) {
    return do_memset("cudaMemsetAsync", p, value, n, stream, true);
}

/* ============================================================ streams */

static cudaError_t stream_create(cudaStream_t *ps, unsigned flags, const char *fn) {
    LOCK;
    NEED_DEVICE;
    if (!ps) return ret(cudaErrorInvalidValue);
    auto *s = new Stream;
    s->device = t_device;
    s->blocking = !(flags & cudaStreamNonBlocking);
    S().streams.insert(s);
    *ps = (cudaStream_t)s;
    trace("%s(flags=%u) = %p", fn, flags, (void *)s);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *ps) { return stream_create(ps, 0, "cudaStreamCreate"); }
FAKE_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned flags) {
    return stream_create(ps, flags, "cudaStreamCreateWithFlags");
}
FAKE_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *ps, unsigned flags, int) {
    return stream_create(ps, flags, "cudaStreamCreateWithPriority");
}

FAKE_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    trace("cudaStreamDestroy(%p)", (void *)stream);
    Stream *s = (Stream *)stream;
    if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread || !S().streams.count(s))
        return ret(cudaErrorInvalidResourceHandle);
    /* pending work still completes (the real stream is destroyed once idle) */
    sync_stream_all(s);
    S().streams.erase(s);
    for (Event *e : S().events)
        if (e->stream == s) e->stream = nullptr;
    delete s;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    trace("cudaStreamSynchronize(%p)", (void *)stream);
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    S().syncs++;
    sync_stream_all(s);
    if (s->legacy)
        for (Stream *o : S().streams)
            if (o->blocking && o->device == s->device) sync_stream_all(o);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    bool pending = !s->q.empty();
    if (s->legacy)
        for (Stream *o : S().streams)
            if (o->blocking && o->device == s->device) pending |= !o->q.empty();
    trace("cudaStreamQuery(%p) = %s", (void *)stream, pending ? "not ready (now running its work)" : "ready");
    if (!pending) return cudaSuccess;
    sync_stream_all(s);
    if (s->legacy)
        for (Stream *o : S().streams)
            if (o->blocking && o->device == s->device) sync_stream_all(o);
    return cudaErrorNotReady;   /* like the real one, not a sticky error */
}

FAKE_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned *flags) {
    LOCK;
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    *flags = s->blocking ? cudaStreamDefault : cudaStreamNonBlocking;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *data) {
    LOCK;
    NEED_DEVICE;
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    enqueue1(s, [fn, data] { fn(data); });
    return cudaSuccess;
}

/* ============================================================= events */

static cudaError_t event_create(cudaEvent_t *pe, unsigned flags) {
    LOCK;
    NEED_DEVICE;
    if (!pe) return ret(cudaErrorInvalidValue);
    auto *e = new Event;
    e->device = t_device;
    e->flags = flags;
    S().events.insert(e);
    *pe = (cudaEvent_t)e;
    trace("cudaEventCreate(flags=%u) = %p", flags, (void *)e);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *pe) { return event_create(pe, 0); }
FAKE_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned flags) { return event_create(pe, flags); }

static Event *valid_event(cudaEvent_t ev) {
    Event *e = (Event *)ev;
    return S().events.count(e) ? e : nullptr;
}

FAKE_EXPORT cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t stream) {
    LOCK;
    NEED_DEVICE;
    trace("cudaEventRecord(%p, stream=%p)", (void *)ev, (void *)stream);
    Event *e = valid_event(ev);
    if (!e) return ret(cudaErrorInvalidResourceHandle);
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    e->recorded = true;
    e->stream = s;
    e->gen++;
    e->seq = enqueue1(s, [] {});
    e->rec = s->q.back().op;
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t ev, cudaStream_t stream, unsigned) {
    return cudaEventRecord(ev, stream);
}

FAKE_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
    LOCK;
    NEED_DEVICE;
    trace("cudaEventSynchronize(%p)", (void *)ev);
    Event *e = valid_event(ev);
    if (!e) return ret(cudaErrorInvalidResourceHandle);
    S().syncs++;
    if (e->recorded && e->stream && !e->rec->done) run_through(e->stream, e->seq);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventQuery(cudaEvent_t ev) {
    LOCK;
    NEED_DEVICE;
    Event *e = valid_event(ev);
    if (!e) return ret(cudaErrorInvalidResourceHandle);
    bool pending = e->recorded && e->stream && !e->rec->done;
    trace("cudaEventQuery(%p) = %s", (void *)ev, pending ? "not ready (now running up to it)" : "ready");
    if (!pending) return cudaSuccess;
    run_through(e->stream, e->seq);
    return cudaErrorNotReady;
}

FAKE_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t ev, unsigned) {
    LOCK;
    NEED_DEVICE;
    trace("cudaStreamWaitEvent(stream=%p, %p)", (void *)stream, (void *)ev);
    Event *e = valid_event(ev);
    if (!e) return ret(cudaErrorInvalidResourceHandle);
    bool ok;
    Stream *s = resolve_stream(stream, &ok);
    if (!ok) return ret(cudaErrorInvalidResourceHandle);
    if (!e->recorded || !e->stream || e->rec->done) return cudaSuccess;
    /* waits for the record as of now (a later re-record does not matter) */
    Stream *es = e->stream;
    uint64_t eseq = e->seq;
    std::shared_ptr<SharedOp> rec = e->rec;
    enqueue1(s, [es, eseq, rec] {
        if (rec->done) return;
        State &st = S();
        bool live = false;
        for (Stream *o : st.streams) live |= o == es;
        for (Stream *o : st.legacy) live |= o == es;
        if (live) run_through(es, eseq);
    });
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    LOCK;
    Event *ea = valid_event(a), *eb = valid_event(b);
    if (!ea || !eb || !ms) return ret(cudaErrorInvalidResourceHandle);
    if ((ea->flags & cudaEventDisableTiming) || (eb->flags & cudaEventDisableTiming))
        return ret(cudaErrorInvalidResourceHandle);
    if (!ea->recorded || !eb->recorded || !ea->rec->done || !eb->rec->done) return ret(cudaErrorNotReady);
    *ms = 0.001f * (float)(eb->seq > ea->seq ? eb->seq - ea->seq : 1);
    return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t ev) {
    LOCK;
    trace("cudaEventDestroy(%p)", (void *)ev);
    Event *e = valid_event(ev);
    if (!e) return ret(cudaErrorInvalidResourceHandle);
    S().events.erase(e);
    delete e;
    return cudaSuccess;
}
