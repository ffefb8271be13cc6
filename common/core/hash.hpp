// topoar engine: the one 64-bit FNV-1a hash every digest and key of the
// engine uses (settings fingerprints, measured networks, contest keys).
// Not for security: equal inputs give equal values on every rank and
// build, which is all that is asked of it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace topoar {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;

// Hashes n bytes at data, continuing from h (kFnvOffset to start).
inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnvOffset) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

}  // namespace topoar
