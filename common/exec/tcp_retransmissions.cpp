#include "exec/tcp_retransmissions.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

namespace topoar {

namespace {

std::atomic<bool> g_seen{false};
std::mutex g_mutex;  // the reader and the file
std::function<std::int64_t()> g_reader;
int g_fd = -2;  // -2: not opened yet, -1: cannot be
std::int64_t g_base = -1;  // the watch's last read (-1: none)
std::chrono::steady_clock::time_point g_base_at;

std::int64_t read_locked() {
    if (g_reader) return g_reader();
    if (g_fd == -2) g_fd = ::open("/proc/net/snmp", O_RDONLY | O_CLOEXEC);
    if (g_fd < 0) return -1;
    // The kernel writes the whole file at each read from offset 0 (about
    // 1.3 KB).
    char buf[8192];
    const ssize_t got = ::pread(g_fd, buf, sizeof buf - 1, 0);
    if (got <= 0) return -1;
    return parse_tcp_retransmissions(std::string(buf, static_cast<std::size_t>(got)));
}

std::vector<std::string> words(const std::string& line) {
    std::vector<std::string> w;
    std::istringstream is(line);
    for (std::string s; is >> s;) w.push_back(s);
    return w;
}

}  // namespace

std::int64_t parse_tcp_retransmissions(const std::string& snmp) {
    // "Tcp: RtoAlgorithm ... RetransSegs ..." then "Tcp: 1 200 ...".
    std::istringstream is(snmp);
    std::string line, header;
    while (std::getline(is, line)) {
        if (line.compare(0, 4, "Tcp:") != 0) continue;
        if (header.empty()) {
            header = line;
            continue;
        }
        const std::vector<std::string> names = words(header), values = words(line);
        for (std::size_t i = 1; i < names.size() && i < values.size(); ++i) {
            if (names[i] != "RetransSegs") continue;
            char* end = nullptr;
            const long long v = std::strtoll(values[i].c_str(), &end, 10);
            if (end == values[i].c_str() || *end != '\0' || v < 0) return -1;
            return static_cast<std::int64_t>(v);
        }
        return -1;
    }
    return -1;
}

std::int64_t tcp_retransmissions() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return read_locked();
}

void watch_start() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_base >= 0) return;
    g_base = read_locked();
    g_base_at = std::chrono::steady_clock::now();
}

std::int64_t watch_end() {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto now = std::chrono::steady_clock::now();
    if (g_base < 0 || std::chrono::duration<double>(now - g_base_at).count() < kWatchInterval) return -1;
    const std::int64_t v = read_locked();
    if (v < 0) return -1;
    const std::int64_t d = v - g_base;
    g_base = v;
    g_base_at = now;
    return d;
}

bool credit_retransmitted() { return g_seen.load(std::memory_order_relaxed); }
void note_credit_retransmitted() { g_seen.store(true, std::memory_order_relaxed); }

void set_retransmission_reader(std::function<std::int64_t()> reader) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_reader = std::move(reader);
}
void reset_credit_retransmitted() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_seen.store(false, std::memory_order_relaxed);
    g_base = -1;
}

}  // namespace topoar
