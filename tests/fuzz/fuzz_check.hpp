// The fuzz harnesses' checks (tests/fuzz/): a broken invariant prints what
// broke and aborts, which libFuzzer reports as a crash and saves the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "status.hpp"

namespace topoar_fuzz {

// Long enough for every message the parsers write about one line; a longer
// one quotes input without excerpt().
constexpr std::size_t kMaxMessage = 1024;

[[noreturn]] inline void fail(const std::string& what, const std::string& detail = "") {
    std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
    if (!detail.empty()) std::fprintf(stderr, "  %s\n", topoar::excerpt(detail, 2000).c_str());
    std::abort();
}

inline void require(bool ok, const std::string& what, const std::string& detail = "") {
    if (!ok) fail(what, detail);
}

// A failed Status from a parser: a message that fits one printable log line.
inline void check_message(const topoar::Status& s) {
    const std::string& m = s.message();
    require(!s.is_ok(), "check_message on a success");
    require(!m.empty(), "a failed Status without a message");
    for (char c : m) {
        const unsigned char u = static_cast<unsigned char>(c);
        require(u >= 0x20 && u < 0x7f, "a byte outside printable ASCII in an error message", m);
    }
    require(m.size() <= kMaxMessage, "an error message of " + std::to_string(m.size()) + " bytes", m);
}

}  // namespace topoar_fuzz
