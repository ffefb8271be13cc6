// topoar engine: bandwidth and latency values with units, as written in
// topology and rack files.
//
// Internally bandwidth is bytes per second and latency is seconds (doubles).
// Files use explicit units so nobody has to remember whether "200" meant
// Mbit/s or MB/s:
//
//   bandwidth  bit kbit Mbit Gbit Tbit      (bits per second, "/s" optional)
//              B/s KB/s MB/s GB/s TB/s      (bytes per second, decimal)
//              KiB/s MiB/s GiB/s TiB/s      (bytes per second, binary)
//   latency    ns us ms s
//
// Prefixes are case-insensitive ("mbit" as tc writes it is fine), the base
// unit is not: "B" is a byte, bits are always spelled "bit".  A number
// without a unit is an error.  Numbers are plain decimals ("1.5", "2e3"); the
// value is the decimal number times the unit, rounded once, so "0.3us" is
// exactly the double nearest 0.3e-6.
#pragma once

#include <string>

#include "status.hpp"

namespace topoar {

// "200Mbit" -> 25e6.  Bandwidth must be positive and finite.
Status parse_bandwidth(const std::string& text, double* bytes_per_second);

// "50us" -> 5e-5.  Latency must be non-negative and finite.
Status parse_latency(const std::string& text, double* seconds);

// "0.15" or "15%" -> 0.15.  Must lie in [0, 1) (a margin, a share).
Status parse_fraction(const std::string& text, double* fraction);

// Shortest spelling in the file syntax that parses back to exactly the value
// ("200Mbit", "20GB/s", "50us"); used by Topology::to_text.  Network links
// read best in bits, memory links in bytes: `in_bits` picks the family tried
// first (the other one only if the first has no exact spelling).
std::string format_bandwidth(double bytes_per_second, bool in_bits);
std::string format_latency(double seconds);

// Rounded to 4 digits, for people: "200 Mbit/s", "12.5 GB/s", "1.5 us".
std::string human_bandwidth(double bytes_per_second, bool in_bits);
std::string human_latency(double seconds);

}  // namespace topoar
