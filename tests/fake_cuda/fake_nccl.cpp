/*
 * topoar's fake NCCL: a libnccl.so.2 for tests on machines without a GPU.
 * Built against the REAL nccl.h; linked against the fake libcudart.so.13,
 * whose private device views and stream queues it uses
 * (fakecuda_internal.h).  See README.md here for what is faithful.
 *
 * Every operation is checked at the call (device buffers, ranges, peers),
 * then queued on its stream as one item (a group: one item for all its
 * operations, spanning all their streams) and runs when the stream is
 * synchronized.  Data moves over TCP between every pair of ranks of a
 * communicator (also between ranks in one process); collectives are
 * all-to-all exchanges reduced locally in rank order, so every rank gets
 * bitwise the same result.  Every message carries its operation's
 * description, and the receiver checks it against its own: a mismatched
 * send/recv pair or collective aborts with a message naming both sides.
 */
#include <nccl.h>

#include "fakecuda_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

/* ------------------------------------------------------------ utilities */

bool tracing() {
    static int t = getenv("FAKENCCL_TRACE") ? atoi(getenv("FAKENCCL_TRACE")) : 0;
    return t > 0;
}

void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *fmt, ...) {
    if (!tracing()) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fakenccl[%d]: ", (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

std::mutex g_err_mu;
std::string g_last_error;

ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fakenccl[%d]: %s\n", (int)getpid(), buf);
    std::lock_guard<std::mutex> g(g_err_mu);
    g_last_error = buf;
    return r;
}

[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fakenccl[%d]: FATAL: %s\n", (int)getpid(), buf);
    fflush(stderr);
    abort();
}

size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

const char *type_name(int t) {
    static const char *n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                              "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
    return t >= 0 && t < 12 ? n[t] : "invalid-type";
}

const char *op_name(int op) {
    static const char *n[] = {"sum", "prod", "max", "min", "avg"};
    return op >= 0 && op < 5 ? n[op] : "premulsum";
}

/* ----------------------------------------------------------- sockets */

void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool write_all(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {fd, POLLOUT, 0};
            poll(&pf, 1, -1);
            continue;
        }
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

bool read_all(int fd, void *p, size_t n) {
    char *c = (char *)p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {fd, POLLIN, 0};
            poll(&pf, 1, -1);
            continue;
        }
        if (r <= 0) return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

/* The address this process listens on: FAKENCCL_SOCKET_IFNAME (a prefix of
 * an interface name), else the first non-loopback IPv4 address, else
 * 127.0.0.1.  Network byte order. */
uint32_t local_ip() {
    const char *want = getenv("FAKENCCL_SOCKET_IFNAME");
    struct ifaddrs *ifs = nullptr;
    uint32_t found = 0;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
            uint32_t a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
            if (want && *want) {
                if (strncmp(i->ifa_name, want, strlen(want)) == 0) found = a;
            } else if (!(i->ifa_flags & IFF_LOOPBACK)) {
                found = a;
            }
        }
        freeifaddrs(ifs);
    }
    if (!found && want && *want)
        fprintf(stderr, "fakenccl[%d]: FAKENCCL_SOCKET_IFNAME=%s matches no IPv4 interface; using 127.0.0.1\n",
                (int)getpid(), want);
    return found ? found : htonl(INADDR_LOOPBACK);
}

int listen_on(uint32_t ip, uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = ip;
    sa.sin_port = 0;
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

int connect_to(uint32_t ip, uint16_t port) {
    for (int attempt = 0; attempt < 600; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = ip;
        sa.sin_port = htons(port);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            set_nodelay(fd);
            return fd;
        }
        close(fd);
        usleep(50000);
    }
    return -1;
}

std::string ip_str(uint32_t ip) {
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &ip, b, sizeof b);
    return b;
}

uint64_t host_hash() {
    const char *env = getenv("FAKENCCL_HOSTID");
    std::string s;
    if (env) {
        s = env;
    } else {
        char h[256] = {0};
        gethostname(h, sizeof h - 1);
        s = h;
        struct stat st;
        if (stat("/proc/self/ns/net", &st) == 0) s += ":" + std::to_string((unsigned long long)st.st_ino);
    }
    uint64_t x = 1469598103934665603ull;
    for (unsigned char c : s) x = (x ^ c) * 1099511628211ull;
    return x;
}

std::string host_name() {
    char h[256] = {0};
    gethostname(h, sizeof h - 1);
    return h;
}

/* --------------------------------------------------------- unique id */

const uint32_t ID_MAGIC = 0x464b4e43; /* "FKNC" */

struct IdBlob {
    uint32_t magic;
    uint32_t ip;
    uint16_t port;
    uint16_t pad;
    uint64_t tag;
};
static_assert(sizeof(IdBlob) <= NCCL_UNIQUE_ID_BYTES, "id");

struct Hello {      /* rank -> bootstrap root */
    uint64_t tag;
    int32_t rank, nranks, device, pid;
    uint32_t ip;
    uint16_t port, pad;
    uint64_t hosthash;
    char host[64];
};

struct Addr { uint32_t ip; uint16_t port, pad; };

struct Reply {      /* root -> rank, followed by nranks Addr */
    int32_t status; /* ncclResult_t */
    char msg[256];
};

/* The bootstrap root: a thread of the process that called ncclGetUniqueId.
 * Collects every rank's hello, checks them, answers each with the table of
 * listening addresses, and ends. */
void root_thread(int lfd, uint64_t tag) {
    std::vector<int> fds;
    std::vector<Hello> hellos;
    int nranks = -1;
    while (nranks < 0 || (int)fds.size() < nranks) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR) continue;
            break;
        }
        Hello h;
        if (!read_all(fd, &h, sizeof h) || h.tag != tag) { close(fd); continue; }
        if (nranks < 0) nranks = h.nranks;
        fds.push_back(fd);
        hellos.push_back(h);
    }
    close(lfd);
    Reply rep;
    memset(&rep, 0, sizeof rep);
    rep.status = ncclSuccess;
    std::vector<Addr> table(nranks > 0 ? nranks : 0);
    std::vector<int> seen(table.size(), -1);
    for (size_t i = 0; i < hellos.size() && rep.status == ncclSuccess; i++) {
        const Hello &h = hellos[i];
        if (h.nranks != nranks) {
            rep.status = ncclInvalidArgument;
            snprintf(rep.msg, sizeof rep.msg, "ranks disagree on nranks: %d vs %d", h.nranks, nranks);
        } else if (h.rank < 0 || h.rank >= nranks || seen[h.rank] >= 0) {
            rep.status = ncclInvalidArgument;
            snprintf(rep.msg, sizeof rep.msg, "rank %d given twice or out of range (nranks %d)", h.rank, nranks);
        } else {
            seen[h.rank] = (int)i;
            table[h.rank] = Addr{h.ip, h.port, 0};
        }
    }
    for (size_t i = 0; i < hellos.size() && rep.status == ncclSuccess; i++)
        for (size_t j = 0; j < i && rep.status == ncclSuccess; j++)
            if (hellos[i].hosthash == hellos[j].hosthash && hellos[i].device == hellos[j].device) {
                rep.status = ncclInvalidUsage;
                snprintf(rep.msg, sizeof rep.msg,
                         "Duplicate GPU detected : rank %d and rank %d both on CUDA device %d of host %s",
                         hellos[i].rank, hellos[j].rank, hellos[i].device, hellos[i].host);
            }
    for (int fd : fds) {
        write_all(fd, &rep, sizeof rep);
        if (rep.status == ncclSuccess) write_all(fd, table.data(), table.size() * sizeof(Addr));
        close(fd);
    }
}

/* --------------------------------------------------------- messages */

enum Chan { CH_P2P = 0, CH_COLL = 1, CH_CTRL = 2, NCHAN = 3 };
enum Kind { K_SEND = 1, K_ALLREDUCE, K_REDUCESCATTER, K_ALLGATHER, K_BROADCAST, K_REDUCE, K_SPLIT, K_SPLIT_ID };

const char *kind_name(int k) {
    switch (k) {
    case K_SEND: return "ncclSend";
    case K_ALLREDUCE: return "ncclAllReduce";
    case K_REDUCESCATTER: return "ncclReduceScatter";
    case K_ALLGATHER: return "ncclAllGather";
    case K_BROADCAST: return "ncclBroadcast";
    case K_REDUCE: return "ncclReduce";
    case K_SPLIT: return "ncclCommSplit";
    case K_SPLIT_ID: return "ncclCommSplit(id)";
    }
    return "?";
}

struct Hdr {
    uint32_t magic;
    int32_t chan;
    uint64_t tag;      /* communicator */
    uint64_t seq;      /* p2p: n-th send to this peer; coll: n-th collective */
    uint64_t count;
    int32_t kind, dt, redop, root;
    int32_t src;       /* sender's rank */
    int32_t pad;
    uint64_t scalar;   /* premulsum: the sender's scalar, in dt */
    uint64_t payload;  /* bytes following */
};
const uint32_t MSG_MAGIC = 0x4d534721;

struct Unexpected { Hdr h; std::vector<char> data; };

struct Comm;

struct Peer {
    int fd = -1;
    int rank = -1;
    Comm *comm = nullptr;
    /* read state */
    Hdr rh;
    size_t rh_got = 0;
    char *rdst = nullptr;
    size_t rleft = 0;
    struct RecvReq *rreq = nullptr;
    Unexpected *runexp = nullptr;
    std::deque<std::unique_ptr<Unexpected>> unexpected[NCHAN];
    uint64_t send_seq = 0, recv_seq = 0;
};

struct PreMul { int dt; int residence; uint64_t bits; const void *dptr; };

struct Comm {
    uint64_t tag = 0;
    int rank = 0, nranks = 0, device = 0;
    std::vector<Peer> peers;  /* index: rank; peers[rank] unused */
    uint64_t coll_seq = 0;
    std::atomic<int> pending{0};
    std::set<cudaStream_t> streams;
    std::map<int, PreMul> premul;
    int next_op = ncclNumOps;
    std::set<void *> regs;
    bool finalized = false;
};

std::mutex g_comms_mu;
std::set<Comm *> g_comms;

bool valid_comm(Comm *c) {
    std::lock_guard<std::mutex> g(g_comms_mu);
    return c && g_comms.count(c);
}

struct Check {      /* what the receiver posted, for the pairing check */
    int kind;
    uint64_t count;
    int dt, redop, root;
    uint64_t seq;
};

struct RecvReq {
    Peer *peer;
    int chan;
    Check exp;
    char *dst;
    size_t cap;
    bool done = false;
    Hdr got;
};

struct SendReq {
    Peer *peer;
    Hdr h;
    const char *data;
    size_t off = 0;   /* over header + payload */
};

void describe(char *b, size_t n, const Hdr &h) {
    if (h.kind == K_SEND)
        snprintf(b, n, "ncclSend(count=%llu, %s) to rank %%d (its send #%llu to that peer)",
                 (unsigned long long)h.count, type_name(h.dt), (unsigned long long)h.seq);
    else
        snprintf(b, n, "%s(count=%llu, %s, op=%s, root=%d) as its collective #%llu", kind_name(h.kind),
                 (unsigned long long)h.count, type_name(h.dt), op_name(h.redop), h.root,
                 (unsigned long long)h.seq);
}

/* the pairing check: aborts with both sides' view */
void check_match(const RecvReq &r, const Hdr &h) {
    Comm *c = r.peer->comm;
    if (h.magic != MSG_MAGIC || h.tag != c->tag)
        fatal("rank %d of comm %016llx: corrupt message from rank %d", c->rank, (unsigned long long)c->tag,
              r.peer->rank);
    const Check &e = r.exp;
    if (r.chan == CH_P2P) {
        if (h.count != e.count || h.dt != e.dt)
            fatal("send/recv mismatch on comm %016llx (%d ranks): rank %d called ncclSend(count=%llu, %s) to rank %d "
                  "(its send #%llu to that peer), but the matching ncclRecv of rank %d is ncclRecv(count=%llu, %s) "
                  "from rank %d (its recv #%llu from that peer); real NCCL would hang or corrupt data",
                  (unsigned long long)c->tag, c->nranks, h.src, (unsigned long long)h.count, type_name(h.dt), c->rank,
                  (unsigned long long)h.seq, c->rank, (unsigned long long)e.count, type_name(e.dt), r.peer->rank,
                  (unsigned long long)e.seq);
        return;
    }
    if (r.chan == CH_COLL) {
        bool reduces = e.kind == K_ALLREDUCE || e.kind == K_REDUCESCATTER || e.kind == K_REDUCE;
        bool rooted = e.kind == K_BROADCAST || e.kind == K_REDUCE;
        if (h.kind != e.kind || h.count != e.count || h.dt != e.dt || (reduces && h.redop != e.redop) ||
            (rooted && h.root != e.root) || h.seq != e.seq)
            fatal("collective mismatch on comm %016llx (%d ranks): rank %d called %s(count=%llu, %s, op=%s, root=%d) "
                  "as its collective #%llu, but rank %d called %s(count=%llu, %s, op=%s, root=%d) as its collective "
                  "#%llu; collectives must be called in the same order with the same arguments on all ranks",
                  (unsigned long long)c->tag, c->nranks, h.src, kind_name(h.kind), (unsigned long long)h.count,
                  type_name(h.dt), op_name(h.redop), h.root, (unsigned long long)h.seq, c->rank, kind_name(e.kind),
                  (unsigned long long)e.count, type_name(e.dt), op_name(e.redop), e.root, (unsigned long long)e.seq);
        return;
    }
    if (h.kind != e.kind)
        fatal("comm %016llx: rank %d got %s from rank %d while in %s", (unsigned long long)c->tag, c->rank,
              kind_name(h.kind), h.src, kind_name(e.kind));
}

void deliver(RecvReq *r, const Hdr &h, const char *data) {
    check_match(*r, h);
    if (h.payload > r->cap)
        fatal("rank %d: message of %llu bytes from rank %d exceeds the %zu bytes expected", r->peer->comm->rank,
              (unsigned long long)h.payload, h.src, r->cap);
    if (data && h.payload) memcpy(r->dst, data, h.payload);
    r->got = h;
    r->done = true;
}

/* Moves every send and receive forward together until all are done: no
 * pairing of sends and receives in any order can deadlock. */
void progress(std::deque<SendReq> &sends, std::deque<RecvReq> &recvs) {
    std::map<Peer *, std::deque<SendReq *>> sq;
    std::map<Peer *, std::deque<RecvReq *>[NCHAN]> rq;
    for (auto &s : sends) sq[s.peer].push_back(&s);
    for (auto &r : recvs) {
        auto &q = r.peer->unexpected[r.chan];
        auto &posted = rq[r.peer][r.chan];
        if (posted.empty() && !q.empty()) {
            deliver(&r, q.front()->h, q.front()->data.data());
            q.pop_front();
        } else {
            posted.push_back(&r);
        }
    }
    size_t left_s = sends.size(), left_r = 0;
    for (auto &r : recvs) left_r += !r.done;
    std::vector<struct pollfd> pfs;
    std::vector<Peer *> pp;
    int idle_s = 0;
    while (left_s || left_r) {
        pfs.clear();
        pp.clear();
        std::set<Peer *> all;
        for (auto &kv : sq) if (!kv.second.empty()) all.insert(kv.first);
        for (auto &kv : rq) {
            bool any = kv.first->rreq || kv.first->runexp || kv.first->rh_got;
            for (int c = 0; c < NCHAN; c++) any |= !kv.second[c].empty();
            if (any) all.insert(kv.first);
        }
        for (Peer *p : all) {
            short ev = 0;
            auto si = sq.find(p);
            if (si != sq.end() && !si->second.empty()) ev |= POLLOUT;
            auto ri = rq.find(p);
            if (ri != rq.end()) {
                bool any = p->rreq || p->runexp || p->rh_got;
                for (int c = 0; c < NCHAN; c++) any |= !ri->second[c].empty();
                if (any) ev |= POLLIN;
            }
            pfs.push_back({p->fd, ev, 0});
            pp.push_back(p);
        }
        int n = poll(pfs.data(), pfs.size(), 10000);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            idle_s += 10;
            if (idle_s % 60 == 0)
                fprintf(stderr, "fakenccl[%d]: still waiting after %d s: %zu send(s), %zu receive(s) pending "
                        "(a peer that never posts the matching operation hangs real NCCL too)\n",
                        (int)getpid(), idle_s, left_s, left_r);
            continue;
        }
        for (size_t i = 0; i < pfs.size(); i++) {
            Peer *p = pp[i];
            Comm *c = p->comm;
            if (pfs[i].revents & (POLLERR | POLLNVAL))
                fatal("rank %d of comm %016llx: connection to rank %d failed", c->rank, (unsigned long long)c->tag,
                      p->rank);
            if (pfs[i].revents & POLLOUT) {
                auto &q = sq[p];
                while (!q.empty()) {
                    SendReq *s = q.front();
                    size_t total = sizeof(Hdr) + s->h.payload;
                    const char *src = s->off < sizeof(Hdr) ? (const char *)&s->h + s->off
                                                           : s->data + (s->off - sizeof(Hdr));
                    size_t len = s->off < sizeof(Hdr) ? sizeof(Hdr) - s->off : total - s->off;
                    ssize_t w = send(p->fd, src, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
                    if (w <= 0)
                        fatal("rank %d of comm %016llx: sending to rank %d failed: %s (did it abort?)", c->rank,
                              (unsigned long long)c->tag, p->rank, strerror(errno));
                    s->off += (size_t)w;
                    if (s->off == total) { q.pop_front(); left_s--; }
                }
            }
            if (pfs[i].revents & (POLLIN | POLLHUP)) {
                auto &posted = rq[p];
                for (;;) {
                    if (!p->rreq && !p->runexp) {
                        ssize_t r = recv(p->fd, (char *)&p->rh + p->rh_got, sizeof(Hdr) - p->rh_got, MSG_DONTWAIT);
                        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
                        if (r <= 0)
                            fatal("rank %d of comm %016llx: connection to rank %d closed while receiving (did it "
                                  "abort?)", c->rank, (unsigned long long)c->tag, p->rank);
                        p->rh_got += (size_t)r;
                        if (p->rh_got < sizeof(Hdr)) continue;
                        p->rh_got = 0;
                        int ch = p->rh.chan;
                        if (ch < 0 || ch >= NCHAN || p->rh.magic != MSG_MAGIC)
                            fatal("rank %d: corrupt message header from rank %d", c->rank, p->rank);
                        if (!posted[ch].empty()) {
                            RecvReq *rr = posted[ch].front();
                            check_match(*rr, p->rh);
                            if (p->rh.payload > rr->cap)
                                fatal("rank %d: message of %llu bytes from rank %d exceeds the %zu bytes expected",
                                      c->rank, (unsigned long long)p->rh.payload, p->rank, rr->cap);
                            p->rreq = rr;
                            p->rdst = rr->dst;
                        } else {
                            p->runexp = new Unexpected{p->rh, std::vector<char>(p->rh.payload)};
                            p->rdst = p->runexp->data.data();
                        }
                        p->rleft = p->rh.payload;
                    }
                    if (p->rleft) {
                        ssize_t r = recv(p->fd, p->rdst, p->rleft, MSG_DONTWAIT);
                        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
                        if (r <= 0)
                            fatal("rank %d of comm %016llx: connection to rank %d closed while receiving (did it "
                                  "abort?)", c->rank, (unsigned long long)c->tag, p->rank);
                        p->rdst += r;
                        p->rleft -= (size_t)r;
                        if (p->rleft) continue;
                    }
                    if (p->rreq) {
                        RecvReq *rr = p->rreq;
                        rr->got = p->rh;
                        rr->done = true;
                        posted[rr->chan].pop_front();
                        left_r--;
                        p->rreq = nullptr;
                    } else {
                        p->unexpected[p->runexp->h.chan].emplace_back(p->runexp);
                        p->runexp = nullptr;
                    }
                    bool more = false;
                    for (int ch = 0; ch < NCHAN; ch++) more |= !posted[ch].empty();
                    if (!more) break;
                }
            }
        }
    }
}

/* --------------------------------------------------------- reductions */

float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, f;
    if (e == 0) {
        if (m == 0) f = s;
        else {
            e = 127 - 15 + 1;
            while (!(m & 0x400)) { m <<= 1; e--; }
            f = s | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31) f = s | 0x7f800000 | (m << 13);
    else f = s | ((e + 127 - 15) << 23) | (m << 13);
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t float_to_half(float x) {
    uint32_t f;
    memcpy(&f, &x, 4);
    uint16_t s = (f >> 16) & 0x8000;
    int e = (int)((f >> 23) & 0xff) - 127 + 15;
    uint32_t m = f & 0x7fffff;
    if (((f >> 23) & 0xff) == 0xff) return s | 0x7c00 | (m ? 0x200 : 0);
    if (e >= 31) return s | 0x7c00;
    if (e <= 0) {
        if (e < -10) return s;
        m |= 0x800000;
        int shift = 14 - e;
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return s | (uint16_t)hm;
    }
    uint32_t hm = m >> 13, rem = m & 0x1fff;
    uint16_t r = s | (uint16_t)(e << 10) | (uint16_t)hm;
    if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) r++;
    return r;
}

float bf16_to_float(uint16_t b) {
    uint32_t f = (uint32_t)b << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t float_to_bf16(float x) {
    uint32_t f;
    memcpy(&f, &x, 4);
    if ((f & 0x7fffffff) > 0x7f800000) return (uint16_t)((f >> 16) | 0x40);
    f += 0x7fff + ((f >> 16) & 1);
    return (uint16_t)(f >> 16);
}

template <class T, class C> struct Native {
    static C load(const void *p, size_t i) { return (C)((const T *)p)[i]; }
    static void store(void *p, size_t i, C v) { ((T *)p)[i] = (T)v; }
    static C scalar(uint64_t bits) { T t; memcpy(&t, &bits, sizeof t); return (C)t; }
};
struct Half {
    static float load(const void *p, size_t i) { return half_to_float(((const uint16_t *)p)[i]); }
    static void store(void *p, size_t i, float v) { ((uint16_t *)p)[i] = float_to_half(v); }
    static float scalar(uint64_t bits) { return half_to_float((uint16_t)bits); }
};
struct Bf16 {
    static float load(const void *p, size_t i) { return bf16_to_float(((const uint16_t *)p)[i]); }
    static void store(void *p, size_t i, float v) { ((uint16_t *)p)[i] = float_to_bf16(v); }
    static float scalar(uint64_t bits) { return bf16_to_float((uint16_t)bits); }
};

struct Contribution { const void *data; bool premul; uint64_t scalar; };

/* out = op over contributions in rank order (premulsum: each times its own
 * scalar, then summed; avg: sum divided by the number of ranks) */
template <class L, class C>
void reduce_t(void *out, const std::vector<Contribution> &in, size_t n, int op) {
    size_t N = in.size();
    for (size_t i = 0; i < n; i++) {
        C acc = C();
        for (size_t r = 0; r < N; r++) {
            C v = L::load(in[r].data, i);
            if (in[r].premul) v = (C)(v * L::scalar(in[r].scalar));
            if (r == 0) { acc = v; continue; }
            switch (op) {
            case ncclProd: acc = (C)(acc * v); break;
            case ncclMax: acc = v > acc ? v : acc; break;
            case ncclMin: acc = v < acc ? v : acc; break;
            default: acc = (C)(acc + v); break;
            }
        }
        if (op == ncclAvg) acc = (C)(acc / (C)N);
        L::store(out, i, acc);
    }
}

void reduce(void *out, const std::vector<Contribution> &in, size_t n, int dt, int op) {
    switch (dt) {
    case ncclInt8: reduce_t<Native<int8_t, int8_t>, int8_t>(out, in, n, op); break;
    case ncclUint8: reduce_t<Native<uint8_t, uint8_t>, uint8_t>(out, in, n, op); break;
    case ncclInt32: reduce_t<Native<int32_t, int32_t>, int32_t>(out, in, n, op); break;
    case ncclUint32: reduce_t<Native<uint32_t, uint32_t>, uint32_t>(out, in, n, op); break;
    case ncclInt64: reduce_t<Native<int64_t, int64_t>, int64_t>(out, in, n, op); break;
    case ncclUint64: reduce_t<Native<uint64_t, uint64_t>, uint64_t>(out, in, n, op); break;
    case ncclFloat16: reduce_t<Half, float>(out, in, n, op); break;
    case ncclFloat32: reduce_t<Native<float, float>, float>(out, in, n, op); break;
    case ncclFloat64: reduce_t<Native<double, double>, double>(out, in, n, op); break;
    case ncclBfloat16: reduce_t<Bf16, float>(out, in, n, op); break;
    }
}

/* ------------------------------------------------------------ operations */

struct Op {
    int kind;          /* K_SEND with recv=true for ncclRecv */
    bool recv = false;
    Comm *comm;
    const void *sbuf;
    void *rbuf;
    size_t count;
    int dt;
    int redop;         /* base op (sum for premulsum) */
    bool premul = false;
    PreMul pm{};
    int peer_root;
    uint64_t seq;
    cudaStream_t stream;
};

char *view(const void *p, size_t bytes) {
    void *v = nullptr;
    if (bytes == 0) return (char *)p;
    if (fakecuda_internal_view(p, bytes, &v, nullptr) != 0)
        fatal("buffer [%p, +%zu bytes) is no longer inside a live device allocation when its operation runs", p,
              bytes);
    return (char *)v;
}

uint64_t scalar_bits(const Op &o) {
    if (!o.premul) return 0;
    if (o.pm.residence == ncclScalarHostImmediate) return o.pm.bits;
    uint64_t b = 0;
    memcpy(&b, view(o.pm.dptr, type_size((ncclDataType_t)o.pm.dt)), type_size((ncclDataType_t)o.pm.dt));
    return b;
}

const char *opkind_name(const Op &o) { return o.recv ? "ncclRecv" : kind_name(o.kind); }

void execute(std::vector<Op> &ops) {
    std::deque<SendReq> sends;
    std::deque<RecvReq> recvs;
    struct CollState { Op *op; std::vector<std::vector<char>> tmp; std::vector<RecvReq *> rr; uint64_t my_scalar; };
    std::vector<CollState> colls;
    std::vector<Op *> self_sends, self_recvs;

    auto hdr = [](const Op &o, int chan, int kind, uint64_t payload, uint64_t scalar) {
        Hdr h;
        memset(&h, 0, sizeof h);
        h.magic = MSG_MAGIC;
        h.chan = chan;
        h.tag = o.comm->tag;
        h.seq = o.seq;
        h.count = o.count;
        h.kind = kind;
        h.dt = o.dt;
        h.redop = o.premul ? ncclNumOps : o.redop;
        h.root = o.peer_root;
        h.src = o.comm->rank;
        h.scalar = scalar;
        h.payload = payload;
        return h;
    };

    for (Op &o : ops) {
        Comm *c = o.comm;
        size_t ts = type_size((ncclDataType_t)o.dt), bytes = o.count * ts;
        trace("rank %d comm %016llx: running %s(count=%zu, %s, peer/root=%d)", c->rank, (unsigned long long)c->tag,
              opkind_name(o), o.count, type_name(o.dt), o.peer_root);
        if (o.kind == K_SEND) {
            if (o.peer_root == c->rank) { (o.recv ? self_recvs : self_sends).push_back(&o); continue; }
            Peer *p = &c->peers[o.peer_root];
            if (!o.recv) {
                sends.push_back(SendReq{p, hdr(o, CH_P2P, K_SEND, bytes, 0), view(o.sbuf, bytes)});
            } else {
                RecvReq r;
                r.peer = p;
                r.chan = CH_P2P;
                r.exp = Check{K_SEND, o.count, o.dt, 0, 0, o.seq};
                r.dst = view(o.rbuf, bytes);
                r.cap = bytes;
                recvs.push_back(r);
            }
            continue;
        }
        CollState cs;
        cs.op = &o;
        cs.my_scalar = scalar_bits(o);
        int N = c->nranks, me = c->rank;
        cs.tmp.resize(N);
        cs.rr.assign(N, nullptr);
        for (int j = 0; j < N; j++) {
            if (j == me) continue;
            Peer *p = &c->peers[j];
            /* what I send to j, and what I receive from j */
            const char *sdata = nullptr;
            size_t slen = 0, rlen = 0;
            char *rdst = nullptr;
            switch (o.kind) {
            case K_ALLREDUCE:
                sdata = view(o.sbuf, bytes); slen = bytes; rlen = bytes;
                break;
            case K_REDUCESCATTER:
                sdata = view(o.sbuf, bytes * N) + (size_t)j * bytes; slen = bytes; rlen = bytes;
                break;
            case K_ALLGATHER:
                sdata = view(o.sbuf, bytes); slen = bytes; rlen = bytes;
                rdst = view(o.rbuf, bytes * N) + (size_t)j * bytes;
                break;
            case K_BROADCAST:
                if (me == o.peer_root) { sdata = view(o.sbuf, bytes); slen = bytes; }
                if (j == o.peer_root) { rlen = bytes; rdst = view(o.rbuf, bytes); }
                break;
            case K_REDUCE:
                if (j == o.peer_root) { sdata = view(o.sbuf, bytes); slen = bytes; }
                if (me == o.peer_root) rlen = bytes;
                break;
            }
            sends.push_back(SendReq{p, hdr(o, CH_COLL, o.kind, slen, cs.my_scalar), sdata});
            if (rlen && !rdst) { cs.tmp[j].resize(rlen); rdst = cs.tmp[j].data(); }
            RecvReq r;
            r.peer = p;
            r.chan = CH_COLL;
            r.exp = Check{o.kind, o.count, o.dt, o.premul ? (int)ncclNumOps : o.redop, o.peer_root, o.seq};
            r.dst = rdst;
            r.cap = rlen;
            recvs.push_back(r);
            cs.rr[j] = &recvs.back();
        }
        colls.push_back(std::move(cs));
    }

    /* sends to self meet receives from self in order */
    if (self_sends.size() != self_recvs.size())
        fatal("rank %d of comm %016llx: %zu ncclSend(s) to itself but %zu ncclRecv(s) from itself in one group",
              ops[0].comm->rank, (unsigned long long)ops[0].comm->tag, self_sends.size(), self_recvs.size());
    for (size_t i = 0; i < self_sends.size(); i++) {
        Op *s = self_sends[i], *r = self_recvs[i];
        if (s->count != r->count || s->dt != r->dt || s->comm != r->comm)
            fatal("send/recv mismatch: rank %d ncclSend(count=%zu, %s) to itself meets ncclRecv(count=%zu, %s) "
                  "from itself", s->comm->rank, s->count, type_name(s->dt), r->count, type_name(r->dt));
        size_t b = s->count * type_size((ncclDataType_t)s->dt);
        memmove(view(r->rbuf, b), view(s->sbuf, b), b);
    }

    progress(sends, recvs);

    for (CollState &cs : colls) {
        Op &o = *cs.op;
        Comm *c = o.comm;
        int N = c->nranks, me = c->rank;
        size_t bytes = o.count * type_size((ncclDataType_t)o.dt);
        std::vector<Contribution> in(N);
        auto contrib = [&](int j, const void *mine) {
            if (j == me) return Contribution{mine, o.premul, cs.my_scalar};
            return Contribution{cs.tmp[j].data(), o.premul, cs.rr[j]->got.scalar};
        };
        switch (o.kind) {
        case K_ALLREDUCE: {
            const char *mine = view(o.sbuf, bytes);
            for (int j = 0; j < N; j++) in[j] = contrib(j, mine);
            std::vector<char> out(bytes);
            reduce(out.data(), in, o.count, o.dt, o.redop);
            memcpy(view(o.rbuf, bytes), out.data(), bytes);
            break;
        }
        case K_REDUCESCATTER: {
            const char *mine = view(o.sbuf, bytes * N) + (size_t)me * bytes;
            for (int j = 0; j < N; j++) in[j] = contrib(j, mine);
            std::vector<char> out(bytes);
            reduce(out.data(), in, o.count, o.dt, o.redop);
            memcpy(view(o.rbuf, bytes), out.data(), bytes);
            break;
        }
        case K_ALLGATHER:
            memmove(view(o.rbuf, bytes * N) + (size_t)me * bytes, view(o.sbuf, bytes), bytes);
            break;
        case K_BROADCAST:
            if (me == o.peer_root && o.sbuf != o.rbuf) memmove(view(o.rbuf, bytes), view(o.sbuf, bytes), bytes);
            break;
        case K_REDUCE:
            if (me == o.peer_root) {
                const char *mine = view(o.sbuf, bytes);
                for (int j = 0; j < N; j++) in[j] = contrib(j, mine);
                std::vector<char> out(bytes);
                reduce(out.data(), in, o.count, o.dt, o.redop);
                memcpy(view(o.rbuf, bytes), out.data(), bytes);
            }
            break;
        }
    }
    for (Op &o : ops) o.comm->pending--;
}

void run_item(void *arg) {
    std::unique_ptr<std::vector<Op>> ops((std::vector<Op> *)arg);
    execute(*ops);
}

/* ---------------------------------------------------------------- groups */

struct GroupState {
    int depth = 0;
    std::vector<Op> ops;
    std::vector<std::function<ncclResult_t()>> deferred;  /* blocking host calls: init, split */
    ncclResult_t err = ncclSuccess;
};
thread_local GroupState t_group;

ncclResult_t submit(std::vector<Op> ops) {
    if (ops.empty()) return ncclSuccess;
    std::vector<cudaStream_t> streams;
    for (Op &o : ops) {
        if (std::find(streams.begin(), streams.end(), o.stream) == streams.end()) streams.push_back(o.stream);
        o.comm->pending++;
        o.comm->streams.insert(o.stream);
    }
    auto *heap = new std::vector<Op>(std::move(ops));
    cudaError_t e = fakecuda_internal_enqueue((int)streams.size(), streams.data(), run_item, heap);
    if (e != cudaSuccess) {
        for (Op &o : *heap) o.comm->pending--;
        delete heap;
        return fail(ncclUnhandledCudaError, "enqueueing on the stream failed: %s", cudaGetErrorString(e));
    }
    return ncclSuccess;
}

ncclResult_t add_op(Op o) {
    if (o.count == 0) return ncclSuccess;  /* nothing moves; like NCCL, no matching either */
    if (t_group.depth > 0) {
        t_group.ops.push_back(o);
        return ncclSuccess;
    }
    return submit({o});
}

ncclResult_t check_buf(const char *fn, Comm *c, const char *what, const void *p, size_t bytes) {
    if (bytes == 0) return ncclSuccess;
    void *v;
    int dev = -1;
    int r = fakecuda_internal_view(p, bytes, &v, &dev);
    if (r == -1)
        return fail(ncclInvalidArgument, "%s: rank %d: %s %p is not device memory (a host pointer?): NCCL buffers "
                    "must come from cudaMalloc", fn, c->rank, what, p);
    if (r == -2)
        return fail(ncclInvalidArgument, "%s: rank %d: %s [%p, +%zu bytes) leaves its device allocation", fn,
                    c->rank, what, p, bytes);
    if (dev != c->device)
        return fail(ncclInvalidArgument, "%s: rank %d: %s %p is on device %d, the communicator on device %d", fn,
                    c->rank, what, p, dev, c->device);
    return ncclSuccess;
}

ncclResult_t prepare(const char *fn, Op &o, ncclComm_t comm, ncclDataType_t dt, int redop, cudaStream_t stream) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c)) return fail(ncclInvalidArgument, "%s: invalid communicator %p", fn, (void *)comm);
    if (type_size(dt) == 0) return fail(ncclInvalidArgument, "%s: unsupported datatype %d", fn, (int)dt);
    int dev;
    if (fakecuda_internal_stream_device(stream, &dev) != 0)
        return fail(ncclInvalidArgument, "%s: rank %d: invalid stream %p", fn, c->rank, (void *)stream);
    o.comm = c;
    o.dt = dt;
    o.stream = stream;
    o.redop = redop;
    if (redop >= ncclNumOps) {
        auto it = c->premul.find(redop);
        if (it == c->premul.end()) return fail(ncclInvalidArgument, "%s: rank %d: invalid reduction op %d", fn, c->rank, redop);
        if (it->second.dt != (int)dt)
            return fail(ncclInvalidArgument, "%s: rank %d: premulsum op created for %s used with %s", fn, c->rank,
                        type_name(it->second.dt), type_name(dt));
        o.premul = true;
        o.pm = it->second;
        o.redop = ncclSum;
    } else if (redop < 0) {
        return fail(ncclInvalidArgument, "%s: invalid reduction op %d", fn, redop);
    }
    return ncclSuccess;
}

ncclResult_t coll(const char *fn, int kind, const void *sbuf, void *rbuf, size_t count, ncclDataType_t dt, int redop,
                  int root, ncclComm_t comm, cudaStream_t stream, size_t sbytes_mul, size_t rbytes_mul) {
    Op o{};
    ncclResult_t r = prepare(fn, o, comm, dt, redop, stream);
    if (r != ncclSuccess) return r;
    Comm *c = o.comm;
    trace("rank %d comm %016llx: %s(count=%zu, %s, op=%s, root=%d, stream=%p)", c->rank, (unsigned long long)c->tag,
          fn, count, type_name(dt), op_name(redop), root, (void *)stream);
    if ((kind == K_BROADCAST || kind == K_REDUCE) && (root < 0 || root >= c->nranks))
        return fail(ncclInvalidArgument, "%s: rank %d: root %d out of range (%d ranks)", fn, c->rank, root, c->nranks);
    size_t b = count * type_size(dt);
    bool need_send = !(kind == K_BROADCAST && c->rank != root);
    bool need_recv = !(kind == K_REDUCE && c->rank != root);
    if (need_send && (r = check_buf(fn, c, "sendbuff", sbuf, b * sbytes_mul)) != ncclSuccess) return r;
    if (need_recv && (r = check_buf(fn, c, "recvbuff", rbuf, b * rbytes_mul)) != ncclSuccess) return r;
    /* Overlapping buffers are in place only at NCCL's one position:
     * recvbuff == sendbuff + rank * count (reduce-scatter), sendbuff ==
     * recvbuff + rank * count (all-gather), the same pointer otherwise;
     * any other overlap is undefined in NCCL, refused here. */
    if (need_send && need_recv && b > 0) {
        uintptr_t s0 = (uintptr_t)sbuf, s1 = s0 + b * sbytes_mul, r0 = (uintptr_t)rbuf, r1 = r0 + b * rbytes_mul;
        uintptr_t at = kind == K_REDUCESCATTER ? s0 + (uintptr_t)c->rank * b
                       : kind == K_ALLGATHER   ? r0 + (uintptr_t)c->rank * b : s0;
        bool in_place = kind == K_REDUCESCATTER ? r0 == at : kind == K_ALLGATHER ? s0 == at : r0 == s0;
        if (s0 < r1 && r0 < s1 && !in_place)
            return fail(ncclInvalidArgument, "%s: rank %d: sendbuff [%p, +%zu) and recvbuff [%p, +%zu) overlap but "
                        "not in place (%s)", fn, c->rank, sbuf, b * sbytes_mul, rbuf, b * rbytes_mul,
                        kind == K_REDUCESCATTER ? "recvbuff must be sendbuff + rank * recvcount"
                        : kind == K_ALLGATHER   ? "sendbuff must be recvbuff + rank * sendcount"
                                                : "the same pointer");
    }
    o.kind = kind;
    o.sbuf = sbuf;
    o.rbuf = rbuf;
    o.count = count;
    o.peer_root = root;
    if (count == 0) return ncclSuccess;
    o.seq = ++c->coll_seq;
    return add_op(o);
}

/* ------------------------------------------------------------ comm init */

ncclResult_t init_rank(Comm **out, int nranks, const ncclUniqueId &id, int rank, int device) {
    IdBlob blob;
    memcpy(&blob, id.internal, sizeof blob);
    if (blob.magic != ID_MAGIC) return fail(ncclInvalidArgument, "ncclCommInitRank: not a unique id from ncclGetUniqueId");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d / nranks %d invalid", rank, nranks);
    uint32_t myip = local_ip();
    uint16_t myport = 0;
    int lfd = listen_on(myip, &myport);
    if (lfd < 0) return fail(ncclSystemError, "ncclCommInitRank: cannot listen on %s: %s", ip_str(myip).c_str(), strerror(errno));
    int rfd = connect_to(blob.ip, blob.port);
    if (rfd < 0) {
        close(lfd);
        return fail(ncclSystemError, "ncclCommInitRank: rank %d cannot reach the bootstrap root at %s:%u", rank,
                    ip_str(blob.ip).c_str(), blob.port);
    }
    Hello h;
    memset(&h, 0, sizeof h);
    h.tag = blob.tag;
    h.rank = rank;
    h.nranks = nranks;
    h.device = device;
    h.pid = getpid();
    h.ip = myip;
    h.port = myport;
    h.hosthash = host_hash();
    snprintf(h.host, sizeof h.host, "%s", host_name().c_str());
    Reply rep;
    std::vector<Addr> table(nranks);
    bool ok = write_all(rfd, &h, sizeof h) && read_all(rfd, &rep, sizeof rep);
    if (ok && rep.status == ncclSuccess) ok = read_all(rfd, table.data(), table.size() * sizeof(Addr));
    close(rfd);
    if (!ok) {
        close(lfd);
        return fail(ncclSystemError, "ncclCommInitRank: rank %d: bootstrap with the root failed", rank);
    }
    if (rep.status != ncclSuccess) {
        close(lfd);
        return fail((ncclResult_t)rep.status, "ncclCommInitRank: rank %d: %s", rank, rep.msg);
    }
    auto *c = new Comm;
    c->tag = blob.tag;
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->peers = std::vector<Peer>(nranks);
    for (int j = 0; j < nranks; j++) { c->peers[j].rank = j; c->peers[j].comm = c; }
    struct Hi { uint64_t tag; int32_t rank, pad; } hi{blob.tag, rank, 0};
    for (int j = 0; j < rank; j++) {
        int fd = connect_to(table[j].ip, table[j].port);
        if (fd < 0 || !write_all(fd, &hi, sizeof hi)) {
            close(lfd);
            return fail(ncclSystemError, "ncclCommInitRank: rank %d cannot connect to rank %d at %s:%u", rank, j,
                        ip_str(table[j].ip).c_str(), table[j].port);
        }
        c->peers[j].fd = fd;
    }
    for (int k = rank + 1; k < nranks; k++) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        Hi got;
        if (fd < 0 || !read_all(fd, &got, sizeof got) || got.tag != blob.tag || got.rank <= rank || got.rank >= nranks ||
            c->peers[got.rank].fd >= 0) {
            close(lfd);
            return fail(ncclSystemError, "ncclCommInitRank: rank %d: bad connection from a peer", rank);
        }
        set_nodelay(fd);
        c->peers[got.rank].fd = fd;
    }
    close(lfd);
    for (auto &p : c->peers)
        if (p.fd >= 0) fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK);
    {
        std::lock_guard<std::mutex> g(g_comms_mu);
        g_comms.insert(c);
    }
    trace("ncclCommInitRank: rank %d of %d on device %d, comm %016llx, listening %s:%u", rank, nranks, device,
          (unsigned long long)c->tag, ip_str(myip).c_str(), myport);
    *out = c;
    return ncclSuccess;
}

ncclResult_t make_unique_id(ncclUniqueId *id) {
    uint32_t ip = local_ip();
    uint16_t port = 0;
    int lfd = listen_on(ip, &port);
    if (lfd < 0) return fail(ncclSystemError, "ncclGetUniqueId: cannot listen on %s: %s", ip_str(ip).c_str(), strerror(errno));
    IdBlob b;
    memset(&b, 0, sizeof b);
    b.magic = ID_MAGIC;
    b.ip = ip;
    b.port = port;
    int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (ufd < 0 || read(ufd, &b.tag, sizeof b.tag) != (ssize_t)sizeof b.tag) b.tag = ((uint64_t)getpid() << 32) ^ (uint64_t)time(nullptr);
    if (ufd >= 0) close(ufd);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &b, sizeof b);
    std::thread(root_thread, lfd, b.tag).detach();
    trace("ncclGetUniqueId: root at %s:%u, comm %016llx", ip_str(ip).c_str(), port, (unsigned long long)b.tag);
    return ncclSuccess;
}

/* blocking exchange on the control channel of `c`: sends msgs[j] (payload
 * pl[j]) to every j in `to`, receives one from every j in `from` */
void ctrl_exchange(Comm *c, int kind, const std::vector<int> &to, const std::vector<Hdr> &hs,
                   const std::vector<std::vector<char>> &pl, const std::vector<int> &from,
                   std::vector<Hdr> &got_h, std::vector<std::vector<char>> &got_pl, size_t cap) {
    std::deque<SendReq> sends;
    std::deque<RecvReq> recvs;
    for (size_t i = 0; i < to.size(); i++)
        sends.push_back(SendReq{&c->peers[to[i]], hs[i], pl[i].data()});
    got_pl.assign(from.size(), std::vector<char>(cap));
    for (size_t i = 0; i < from.size(); i++) {
        RecvReq r;
        r.peer = &c->peers[from[i]];
        r.chan = CH_CTRL;
        r.exp = Check{kind, 0, 0, 0, 0, 0};
        r.dst = got_pl[i].data();
        r.cap = cap;
        recvs.push_back(r);
    }
    progress(sends, recvs);
    got_h.clear();
    for (auto &r : recvs) got_h.push_back(r.got);
}

ncclResult_t do_split(Comm *c, int color, int key, Comm **out) {
    int N = c->nranks, me = c->rank;
    /* round 1: everyone's (color, key) */
    std::vector<int> others;
    for (int j = 0; j < N; j++) if (j != me) others.push_back(j);
    Hdr h;
    memset(&h, 0, sizeof h);
    h.magic = MSG_MAGIC;
    h.chan = CH_CTRL;
    h.tag = c->tag;
    h.kind = K_SPLIT;
    h.src = me;
    h.count = (uint64_t)(int64_t)color;
    h.root = key;
    std::vector<Hdr> hs(others.size(), h), got;
    std::vector<std::vector<char>> pl(others.size()), gotpl;
    ctrl_exchange(c, K_SPLIT, others, hs, pl, others, got, gotpl, 0);
    std::vector<int> colors(N), keys(N);
    colors[me] = color;
    keys[me] = key;
    for (auto &g : got) { colors[g.src] = (int)(int64_t)g.count; keys[g.src] = g.root; }
    if (color == NCCL_SPLIT_NOCOLOR) { *out = nullptr; return ncclSuccess; }
    std::vector<int> members;
    for (int j = 0; j < N; j++) if (colors[j] == color) members.push_back(j);
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return keys[a] < keys[b]; });
    int newrank = (int)(std::find(members.begin(), members.end(), me) - members.begin());
    int leader = members[0];
    /* round 2: the new rank 0 makes the id and sends it to the members */
    ncclUniqueId id;
    if (me == leader) {
        ncclResult_t r = make_unique_id(&id);
        if (r != ncclSuccess) return r;
        std::vector<int> to(members.begin() + 1, members.end());
        Hdr hi = h;
        hi.kind = K_SPLIT_ID;
        hi.payload = sizeof id;
        std::vector<Hdr> his(to.size(), hi);
        std::vector<std::vector<char>> ids(to.size(), std::vector<char>(id.internal, id.internal + sizeof id));
        ctrl_exchange(c, K_SPLIT_ID, to, his, ids, {}, got, gotpl, 0);
    } else {
        ctrl_exchange(c, K_SPLIT_ID, {}, {}, {}, {leader}, got, gotpl, sizeof id);
        memcpy(id.internal, gotpl[0].data(), sizeof id);
    }
    trace("ncclCommSplit: parent rank %d color %d key %d -> rank %d of %zu", me, color, key, newrank, members.size());
    return init_rank(out, (int)members.size(), id, newrank, c->device);
}

void destroy_comm(Comm *c, bool abort_now) {
    if (!abort_now && c->pending > 0)
        for (cudaStream_t s : c->streams) cudaStreamSynchronize(s);  /* finalize: flush issued operations */
    {
        std::lock_guard<std::mutex> g(g_comms_mu);
        g_comms.erase(c);
    }
    for (auto &p : c->peers) {
        if (p.fd < 0) continue;
        for (int ch = 0; ch < NCHAN; ch++)
            if (!p.unexpected[ch].empty() && !abort_now) {
                char d[256];
                describe(d, sizeof d, p.unexpected[ch].front()->h);
                fprintf(stderr, "fakenccl[%d]: rank %d of comm %016llx destroyed with an unmatched message: rank %d "
                        "called ", (int)getpid(), c->rank, (unsigned long long)c->tag, p.rank);
                fprintf(stderr, d, c->rank);
                fprintf(stderr, " and this rank never posted the matching operation\n");
            }
        shutdown(p.fd, SHUT_WR);
        close(p.fd);
    }
    delete c;
}

} // namespace

/* ===================================================================== API */

FAKE_EXPORT ncclResult_t ncclGetVersion(int *version) {
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: NULL id");
    return make_unique_id(id);
}

FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                                ncclConfig_t *config) {
    (void)config; /* accepted; every init is blocking */
    if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: NULL comm");
    int dev = fakecuda_internal_current_device();
    trace("ncclCommInitRank(nranks=%d, rank=%d) on device %d%s", nranks, rank, dev,
          t_group.depth ? " (deferred to ncclGroupEnd)" : "");
    if (t_group.depth > 0) {
        *comm = nullptr;
        t_group.deferred.push_back([=]() {
            cudaSetDevice(dev);
            return init_rank((Comm **)comm, nranks, id, rank, dev);
        });
        return ncclSuccess;
    }
    return init_rank((Comm **)comm, nranks, id, rank, dev);
}

FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

FAKE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
    if (!comms || ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: invalid arguments");
    ncclUniqueId id;
    ncclResult_t r = make_unique_id(&id);
    if (r != ncclSuccess) return r;
    std::vector<ncclResult_t> res(ndev, ncclSuccess);
    std::vector<std::thread> th;
    for (int i = 0; i < ndev; i++) {
        int dev = devlist ? devlist[i] : i;
        th.emplace_back([&, i, dev] {
            if (cudaSetDevice(dev) != cudaSuccess) {
                res[i] = fail(ncclInvalidArgument, "ncclCommInitAll: invalid device %d", dev);
                return;
            }
            res[i] = init_rank((Comm **)&comms[i], ndev, id, i, dev);
        });
    }
    for (auto &t : th) t.join();
    for (int i = 0; i < ndev; i++) if (res[i] != ncclSuccess) return res[i];
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
    (void)config;
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: invalid arguments");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return fail(ncclInvalidArgument, "ncclCommSplit: rank %d: invalid color %d", c->rank, color);
    trace("ncclCommSplit(rank %d, color %d, key %d)", c->rank, color, key);
    if (t_group.depth > 0) {
        *newcomm = nullptr;
        t_group.deferred.push_back([=]() { return do_split(c, color, key, (Comm **)newcomm); });
        return ncclSuccess;
    }
    return do_split(c, color, key, (Comm **)newcomm);
}

FAKE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c)) return fail(ncclInvalidArgument, "ncclCommFinalize: invalid communicator");
    if (c->pending > 0)
        for (cudaStream_t s : c->streams) cudaStreamSynchronize(s);
    c->finalized = true;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    Comm *c = (Comm *)comm;
    if (!c) return ncclSuccess;
    if (!valid_comm(c)) return fail(ncclInvalidArgument, "ncclCommDestroy: invalid communicator %p", (void *)comm);
    trace("ncclCommDestroy(rank %d, comm %016llx)", c->rank, (unsigned long long)c->tag);
    destroy_comm(c, false);
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
    Comm *c = (Comm *)comm;
    if (!c) return ncclSuccess;
    if (!valid_comm(c)) return fail(ncclInvalidArgument, "ncclCommAbort: invalid communicator");
    destroy_comm(c, true);
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !count) return ncclInvalidArgument;
    *count = c->nranks;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !rank) return ncclInvalidArgument;
    *rank = c->rank;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !device) return ncclInvalidArgument;
    *device = c->device;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err) {
    if (!valid_comm((Comm *)comm) || !err) return ncclInvalidArgument;
    *err = ncclSuccess;
    return ncclSuccess;
}

FAKE_EXPORT const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

FAKE_EXPORT const char *ncclGetLastError(ncclComm_t) {
    static thread_local std::string copy;
    std::lock_guard<std::mutex> g(g_err_mu);
    copy = g_last_error;
    return copy.c_str();
}

FAKE_EXPORT ncclResult_t ncclGroupStart() {
    t_group.depth++;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclGroupEnd() {
    if (t_group.depth <= 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--t_group.depth > 0) return ncclSuccess;
    std::vector<std::function<ncclResult_t()>> deferred;
    deferred.swap(t_group.deferred);
    std::vector<Op> ops;
    ops.swap(t_group.ops);
    ncclResult_t res = ncclSuccess;
    if (!deferred.empty()) {
        std::vector<ncclResult_t> rs(deferred.size(), ncclSuccess);
        std::vector<std::thread> th;
        for (size_t i = 0; i < deferred.size(); i++) th.emplace_back([&, i] { rs[i] = deferred[i](); });
        for (auto &t : th) t.join();
        for (ncclResult_t r : rs) if (r != ncclSuccess) res = r;
    }
    ncclResult_t r = submit(std::move(ops));
    return res != ncclSuccess ? res : r;
}

static ncclResult_t p2p(const char *fn, bool recv, const void *sbuf, void *rbuf, size_t count, ncclDataType_t dt,
                        int peer, ncclComm_t comm, cudaStream_t stream) {
    Op o{};
    ncclResult_t r = prepare(fn, o, comm, dt, ncclSum, stream);
    if (r != ncclSuccess) return r;
    Comm *c = o.comm;
    trace("rank %d comm %016llx: %s(count=%zu, %s, peer=%d, stream=%p)", c->rank, (unsigned long long)c->tag, fn,
          count, type_name(dt), peer, (void *)stream);
    if (peer < 0 || peer >= c->nranks)
        return fail(ncclInvalidArgument, "%s: rank %d: peer %d out of range (%d ranks)", fn, c->rank, peer, c->nranks);
    size_t b = count * type_size(dt);
    if ((r = check_buf(fn, c, recv ? "recvbuff" : "sendbuff", recv ? rbuf : sbuf, b)) != ncclSuccess) return r;
    o.kind = K_SEND;
    o.recv = recv;
    o.sbuf = sbuf;
    o.rbuf = rbuf;
    o.count = count;
    o.peer_root = peer;
    if (count == 0) return ncclSuccess;
    if (peer != c->rank) o.seq = recv ? ++c->peers[peer].recv_seq : ++c->peers[peer].send_seq;
    return add_op(o);
}

FAKE_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
    return p2p("ncclSend", false, sendbuff, nullptr, count, datatype, peer, comm, stream);
}

FAKE_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
    return p2p("ncclRecv", true, nullptr, recvbuff, count, datatype, peer, comm, stream);
}

FAKE_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    return coll("ncclAllReduce", K_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream, 1, 1);
}

FAKE_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
    Comm *c = (Comm *)comm;
    size_t n = valid_comm(c) ? (size_t)c->nranks : 1;
    return coll("ncclReduceScatter", K_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream, n, 1);
}

FAKE_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
    Comm *c = (Comm *)comm;
    size_t n = valid_comm(c) ? (size_t)c->nranks : 1;
    return coll("ncclAllGather", K_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream, 1, n);
}

FAKE_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
    return coll("ncclBroadcast", K_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, 1, 1);
}

FAKE_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

FAKE_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    return coll("ncclReduce", K_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream, 1, 1);
}

FAKE_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                  ncclScalarResidence_t residence, ncclComm_t comm) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !op || !scalar || type_size(datatype) == 0)
        return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid arguments");
    PreMul pm{};
    pm.dt = datatype;
    pm.residence = residence;
    if (residence == ncclScalarHostImmediate) {
        memcpy(&pm.bits, scalar, type_size(datatype));
    } else {
        void *v;
        if (fakecuda_internal_view(scalar, type_size(datatype), &v, nullptr) != 0)
            return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: ncclScalarDevice but %p is not device memory",
                        scalar);
        pm.dptr = scalar;
    }
    int id = c->next_op++;
    c->premul[id] = pm;
    *op = (ncclRedOp_t)id;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !c->premul.erase((int)op))
        return fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on this communicator", (int)op);
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
    cudaError_t e = cudaMalloc(ptr, size);
    return e == cudaSuccess ? ncclSuccess : fail(ncclUnhandledCudaError, "ncclMemAlloc: %s", cudaGetErrorString(e));
}

FAKE_EXPORT ncclResult_t ncclMemFree(void *ptr) {
    cudaError_t e = cudaFree(ptr);
    return e == cudaSuccess ? ncclSuccess : fail(ncclUnhandledCudaError, "ncclMemFree: %s", cudaGetErrorString(e));
}

FAKE_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !handle) return fail(ncclInvalidArgument, "ncclCommRegister: invalid arguments");
    ncclResult_t r = check_buf("ncclCommRegister", c, "buff", buff, size);
    if (r != ncclSuccess) return r;
    void *h = new char[1];
    c->regs.insert(h);
    *handle = h;
    return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
    Comm *c = (Comm *)comm;
    if (!valid_comm(c) || !c->regs.erase(handle))
        return fail(ncclInvalidArgument, "ncclCommDeregister: %p is not a registration of this communicator", handle);
    delete[] (char *)handle;
    return ncclSuccess;
}
