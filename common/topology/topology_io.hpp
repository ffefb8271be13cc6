// topoar engine: the pieces of the topology text format's reader that
// discovery reuses (topology_io.cpp defines them, discovery.cpp reads
// topology files and rack files with them).  Internal to topology/: the
// public interface is Topology::from_text/from_file/to_text.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {
namespace topology_text {

// "ORIGIN:LINE: ", the prefix of every error about a line of a file.
std::string at(const std::string& origin, int line);

// The whole file; Code::io when it cannot be read.
Status read_file(const std::string& path, std::string* text);

// One non-blank line with its comment removed.
struct Line {
    int number;
    int indent;
    std::vector<std::string> words;
};

// Splits text into lines, drops comments and blank lines, measures the
// indentation (tabs in indentation are an error).
Status split_lines(const std::string& text, const std::string& origin, std::vector<Line>* out);

// key=value attributes after the positional words of a line.
struct Attrs {
    bool has_bw = false, has_lat = false, has_count = false;
    double bw = 0, lat = 0;
    long count = 0;
};

// Parses words[first..] as key=value attributes, keys from `allowed`
// ("bw", "lat", "count"); errors start with `where`.
Status parse_attrs(const std::vector<std::string>& words, std::size_t first, const std::set<std::string>& allowed,
                   const std::string& where, Attrs* a);

// base with the attributes' bw= and lat= applied.
Link apply(Link base, const Attrs& a);

// The file as written, before ranks are numbered and levels collapsed.
struct PVertex {
    Level level;
    std::string name;
    Link up;
    int line;
    int parent;  // -1 for the implicit root (index 0)
    std::vector<int> children;
    int rank = -1;   // leaves
    long count = 0;  // node/socket with count=
};

struct ParsedFile {
    std::vector<PVertex> v;    // [0] is the implicit root
    int first_list_line = 0;   // first explicit `ranks` line
    int first_count_line = 0;  // first count=
    LinkDefaults defaults;     // with the file's `defaults` lines applied
    bool has_ranks() const { return first_list_line || first_count_line; }
};

// A topology file's text as written (vertices, links, `defaults` lines
// applied to `defaults`), errors with "origin:line".
Status parse_topology(const std::string& text, const std::string& origin, LinkDefaults defaults, ParsedFile* pf);

// Numbers counted ranks, checks that ranks are exactly 0..P-1 and that every
// vertex has ranks, with the line of each problem.
Status assign_ranks(const std::string& origin, ParsedFile* pf);

// The Topology of a parsed file whose ranks are assigned.
Status build_parsed(const ParsedFile& pf, const std::string& origin, Topology* out);

}  // namespace topology_text
}  // namespace topoar
