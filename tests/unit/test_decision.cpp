// Unit tests of the decision table: sizes with units, the rules file parser
// (valid files, every error with its line number), lookup order and
// boundaries, the text round trip, and communicator shapes.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
}

#include "decide/decision.hpp"
#include "decide/trials.hpp"

using namespace topoar;

namespace {

void expect_ok(const Status& s) {
    if (!s) print_error("unexpected error: %s\n", s.message().c_str());
    assert_true(s.is_ok());
}

DecisionTable parse(const std::string& text) {
    DecisionTable t;
    expect_ok(DecisionTable::from_text(text, "t.rules", &t));
    return t;
}

// The message must start with "t.rules:LINE: " and mention `what`.
void expect_parse_error(const std::string& text, int line, const char* what) {
    DecisionTable t;
    Status s = DecisionTable::from_text(text, "t.rules", &t);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::invalid_argument));
    std::string prefix = "t.rules:" + std::to_string(line) + ": ";
    bool good = s.message().compare(0, prefix.size(), prefix) == 0 && s.message().find(what) != std::string::npos;
    if (!good)
        print_error("for input:\n%s\nexpected '%s...%s', got '%s'\n", text.c_str(), prefix.c_str(), what,
                    s.message().c_str());
    assert_true(good);
}

std::size_t size_of(const char* text) {
    std::size_t v = 0;
    expect_ok(parse_size(text, &v));
    return v;
}

void expect_bad_size(const char* text, const char* what) {
    std::size_t v = 12345;
    Status s = parse_size(text, &v);
    if (s.is_ok() || s.message().find(what) == std::string::npos)
        print_error("parse_size('%s'): expected error with '%s', got '%s'\n", text, what, s.message().c_str());
    assert_false(s.is_ok());
    assert_true(s.message().find(what) != std::string::npos);
    assert_int_equal(v, 12345);  // untouched on error
}

CommShape shape(int ranks, int nodes, int ppn, int racks = 0, bool uniform = true) {
    CommShape s;
    s.ranks = ranks;
    s.nodes = nodes;
    s.ppn = ppn;
    s.racks = racks;
    s.uniform = uniform;
    return s;
}

const char kExample[] =
    "# topoar rules v1\n"
    "allreduce  size=0-4K      ranks=any nodes=2-  mem=host  alg=recursive_doubling\n"
    "\n"
    "   # an indented comment\n"
    "allreduce  size=4K-1M     alg=flexreduce segment=256K   # trailing comment\n"
    "allreduce  size=1M-       alg=hring\n";

// ---------------------------------------------------------------- sizes

void test_parse_size(void** state) {
    (void)state;
    assert_int_equal(size_of("0"), 0);
    assert_int_equal(size_of("4096"), 4096);
    assert_int_equal(size_of("12B"), 12);
    assert_int_equal(size_of("4K"), 4096);
    assert_int_equal(size_of("4k"), 4096);
    assert_int_equal(size_of("4KiB"), 4096);
    assert_int_equal(size_of("1M"), 1 << 20);
    assert_int_equal(size_of("3MiB"), 3 << 20);
    assert_int_equal(size_of("2G"), 2ULL << 30);
    assert_int_equal(size_of("1GiB"), 1ULL << 30);
    assert_int_equal(size_of("5T"), 5ULL << 40);
    assert_int_equal(size_of("007K"), 7 << 10);

    expect_bad_size("", "whole number");
    expect_bad_size("K", "whole number");
    expect_bad_size("-1", "whole number");
    expect_bad_size("4KB", "ambiguous");
    expect_bad_size("1MB", "ambiguous");
    expect_bad_size("1.5K", "whole numbers");
    expect_bad_size("4X", "unknown unit 'X'");
    expect_bad_size("4m", "unknown unit 'm'");
    expect_bad_size("4 K", "unknown unit");
    expect_bad_size("99999999999999999999999", "out of range");
    expect_bad_size("20000000T", "out of range");
}

void test_format_size(void** state) {
    (void)state;
    assert_string_equal(format_size(0).c_str(), "0");
    assert_string_equal(format_size(1).c_str(), "1");
    assert_string_equal(format_size(1536).c_str(), "1536");
    assert_string_equal(format_size(4096).c_str(), "4K");
    assert_string_equal(format_size(1536 * 1024).c_str(), "1536K");
    assert_string_equal(format_size(1 << 20).c_str(), "1M");
    assert_string_equal(format_size(3ULL << 30).c_str(), "3G");
    assert_string_equal(format_size(2ULL << 40).c_str(), "2T");
    // Every value reads back exactly.
    std::vector<std::size_t> values = {0, 1, 7, 1000, 1023, 1024, 1025, 5793, 65536, 262144, 1000000, 3 << 20,
                                       (1ULL << 40) + 1, SIZE_MAX - 1};
    for (std::size_t v : values) {
        std::size_t back = 0;
        expect_ok(parse_size(format_size(v), &back));
        assert_int_equal(back, v);
    }
}

// ---------------------------------------------------------------- parsing

void test_parse_example(void** state) {
    (void)state;
    DecisionTable t = parse(kExample);
    assert_int_equal(t.size(), 3);
    const Rule& a = t.rules()[0];
    assert_int_equal(a.size.lo, 0);
    assert_int_equal(a.size.hi, 4096);
    assert_true(a.ranks.is_any());
    assert_int_equal(a.nodes.lo, 2);
    assert_int_equal(a.nodes.hi, CountRange::kUnbounded);
    assert_true(a.ppn.is_any());
    assert_true(a.mem == MemType::host);
    assert_true(a.algorithm == Algorithm::leader);
    assert_false(a.has_segment);
    assert_string_equal(a.origin.c_str(), "t.rules:2");

    const Rule& b = t.rules()[1];
    assert_int_equal(b.size.lo, 4096);
    assert_int_equal(b.size.hi, 1 << 20);
    assert_true(b.mem == MemType::any);
    assert_true(b.algorithm == Algorithm::flexreduce);
    assert_true(b.has_segment);
    assert_int_equal(b.segment_bytes, 256 * 1024);
    assert_string_equal(b.origin.c_str(), "t.rules:5");

    const Rule& c = t.rules()[2];
    assert_int_equal(c.size.lo, 1 << 20);
    assert_int_equal(c.size.hi, SizeRange::kUnbounded);
    assert_true(c.algorithm == Algorithm::hring);
    assert_string_equal(c.origin.c_str(), "t.rules:6");
}

void test_parse_every_key(void** state) {
    (void)state;
    DecisionTable t = parse(
        "allreduce size=-64K ranks=4 nodes=1-8 ppn=-16 racks=0 uniform=no mem=cuda alg=tree segment=0\r\n"
        "allreduce uniform=yes alg=ring\n"
        "allreduce size=any ranks=any nodes=any ppn=any racks=any uniform=any mem=any alg=flexreduce segment=1536");
    assert_int_equal(t.size(), 3);
    const Rule& a = t.rules()[0];
    assert_int_equal(a.size.lo, 0);
    assert_int_equal(a.size.hi, 64 * 1024);
    assert_int_equal(a.ranks.lo, 4);
    assert_int_equal(a.ranks.hi, 4);
    assert_int_equal(a.nodes.lo, 1);
    assert_int_equal(a.nodes.hi, 8);
    assert_int_equal(a.ppn.lo, 0);
    assert_int_equal(a.ppn.hi, 16);
    assert_int_equal(a.racks.lo, 0);
    assert_int_equal(a.racks.hi, 0);
    assert_true(a.uniform == Uniform::no);
    assert_true(a.mem == MemType::cuda);
    assert_true(a.algorithm == Algorithm::tree);
    assert_true(a.has_segment);
    assert_int_equal(a.segment_bytes, 0);
    assert_true(t.rules()[1].uniform == Uniform::yes);
    assert_true(t.rules()[1].size.is_any());
    const Rule& c = t.rules()[2];  // "any" everywhere = no condition; last line without newline
    assert_true(c.size.is_any() && c.ranks.is_any() && c.nodes.is_any() && c.ppn.is_any() && c.racks.is_any());
    assert_true(c.uniform == Uniform::any && c.mem == MemType::any);
    assert_int_equal(c.segment_bytes, 1536);
    assert_string_equal(c.origin.c_str(), "t.rules:3");
}

void test_parse_empty_and_comments(void** state) {
    (void)state;
    assert_true(parse("").empty());
    assert_true(parse("\n\n   \n").empty());
    assert_true(parse("# topoar rules v1\n# nothing else\n").empty());
    // The version header is only recognised as the first non-blank line.
    assert_true(parse("\n  # topoar rules v1\n").empty());
    assert_true(parse("# hello\n# topoar rules v7 (not a header here)\n").empty());
}

void test_parse_errors(void** state) {
    (void)state;
    const std::string ok = "allreduce size=0-4K alg=ring\n";
    // Line numbers count blank and comment lines.
    expect_parse_error(ok + "\n# c\nallreduce size=4K- alg=ring colour=red\n", 4, "unknown key 'colour='");
    expect_parse_error("allreduce size=4X- alg=ring\n", 1, "unknown unit 'X'");
    expect_parse_error(ok + "allreduce size=1.5K-1M alg=ring\n", 2, "whole numbers");
    expect_parse_error(ok + "allreduce size=4KB-1M alg=ring\n", 2, "ambiguous");
    expect_parse_error(ok + "allreduce size=4K alg=ring\n", 2, "bad size range '4K'");
    expect_parse_error(ok + "allreduce size=- alg=ring\n", 2, "bad size range '-'");
    expect_parse_error(ok + "allreduce size=1-2-3 alg=ring\n", 2, "bad size range");
    expect_parse_error(ok + "allreduce size=1M-4K alg=ring\n", 2, "empty size range '1M-4K'");
    expect_parse_error(ok + "allreduce size=4K-4K alg=ring\n", 2, "empty size range");
    expect_parse_error(ok + "allreduce size=4K- alg=bogus\n", 2, "unknown algorithm 'bogus'");
    expect_parse_error(ok + "allreduce size=4K- alg=Ring\n", 2, "unknown algorithm 'Ring'");
    expect_parse_error(ok + "allreduce size=4K- alg=1\n", 2, "unknown algorithm '1'");
    expect_parse_error(ok + "allreduce size=4K- alg=auto\n", 2, "alg=auto is not allowed");
    expect_parse_error(ok + "allreduce size=4K-\n", 2, "rule without alg=");
    expect_parse_error(ok + "allreduce size=4K- alg=ring alg=tree\n", 2, "'alg=' given twice");
    expect_parse_error(ok + "allreduce size=4K- size=8K- alg=ring\n", 2, "'size=' given twice");
    expect_parse_error(ok + "allreduce size= alg=ring\n", 2, "empty value for 'size='");
    expect_parse_error(ok + "bcast size=4K- alg=ring\n", 2, "unknown collective 'bcast'");
    expect_parse_error("size=0-4K alg=ring\n", 1, "a rule starts with the collective");
    expect_parse_error(ok + "allreduce size=4K- ring\n", 2, "expected KEY=VALUE, got 'ring'");
    expect_parse_error(ok + "allreduce size=4K- mem=gpu alg=ring\n", 2, "unknown memory type 'gpu'");
    expect_parse_error(ok + "allreduce size=4K- uniform=maybe alg=ring\n", 2, "bad uniform 'maybe'");
    expect_parse_error(ok + "allreduce size=4K- nodes=two alg=ring\n", 2, "bad nodes range 'two'");
    expect_parse_error(ok + "allreduce size=4K- ranks=-3- alg=ring\n", 2, "bad ranks range");
    expect_parse_error(ok + "allreduce size=4K- ppn=1K alg=ring\n", 2, "bad ppn range '1K'");
    expect_parse_error(ok + "allreduce size=4K- racks=99999999999 alg=ring\n", 2, "bad racks range");
    expect_parse_error(ok + "allreduce size=4K- nodes=8-2 alg=ring\n", 2, "empty nodes range '8-2'");
    expect_parse_error(ok + "allreduce size=4K- segment=big alg=ring\n", 2, "bad size 'big'");
    expect_parse_error("# topoar rules v2\n" + ok, 1, "unsupported rules format version '2'");
    expect_parse_error("\n  # topoar rules vX\n" + ok, 2, "unsupported rules format version 'X'");
    // A rule an earlier one hides completely is an error naming both.
    expect_parse_error(ok + "allreduce size=1K-2K alg=tree\n", 2, "rule never matches: t.rules:1 comes first");
    expect_parse_error("allreduce alg=ring\n\nallreduce size=1M- nodes=2 mem=cuda alg=hring\n", 3,
                       "rule never matches: t.rules:1");
    expect_parse_error("allreduce mem=host alg=ring\nallreduce mem=host nodes=2 alg=tree\n", 2, "never matches");
    expect_parse_error("allreduce nodes=2- alg=ring\nallreduce nodes=3-5 uniform=no alg=tree\n", 2, "never matches");
    // Overlapping but not hidden: fine (first match wins).
    assert_int_equal(parse("allreduce size=0-4K nodes=1 alg=ring\nallreduce size=0-1M alg=tree\n").size(), 2);
    assert_int_equal(parse("allreduce mem=host alg=ring\nallreduce alg=tree\n").size(), 2);
    assert_int_equal(parse("allreduce uniform=yes alg=ring\nallreduce uniform=no alg=tree\n").size(), 2);
}

// A binary file (an executable given by mistake, a corrupt copy): the
// message quotes its bytes escaped and cut short, so it stays one printable
// log line (tests/fuzz/fuzz_rules.cpp checks this for any input).
void test_parse_error_binary(void** state) {
    (void)state;
    // The start of an executable: NULs, control characters, bytes >= 0x80.
    const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\x1b[2J\xff\xfe\r\n";
    expect_parse_error(std::string(elf, sizeof elf - 1), 1,
                       "unknown collective '\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x1b[2J\\xff\\xfe'");
    expect_parse_error("allreduce alg=r\xc3\xa9ng\n", 1, "unknown algorithm 'r\\xc3\\xa9ng'");
    expect_parse_error("allreduce size=1\x01K- alg=ring\n", 1, "bad size '1\\x01K': unknown unit '\\x01K'");
    expect_parse_error("allreduce alg=back\\slash\n", 1, "unknown algorithm 'back\\\\slash'");
    // A long word: its first 80 bytes, escaped, then "...".
    std::string cut;
    for (int i = 0; i < 80; ++i) cut += "\\x01";
    const std::string long_word = "allreduce alg=" + std::string(1000, '\x01') + "\n";
    expect_parse_error(long_word, 1, ("unknown algorithm '" + cut + "...' (one of").c_str());

    for (const std::string& text : {std::string(elf, sizeof elf - 1), long_word}) {
        DecisionTable t;
        Status s = DecisionTable::from_text(text, "t.rules", &t);
        assert_false(s.is_ok());
        for (char c : s.message()) assert_true(c >= 0x20 && c < 0x7f);
    }
}

void test_parse_error_stops_at_first(void** state) {
    (void)state;
    DecisionTable t = parse("allreduce alg=ring\n");
    Status s = DecisionTable::from_text("allreduce size=0-1K alg=tree\nallreduce foo=1 alg=ring\n", "t.rules", &t);
    assert_false(s.is_ok());
    // On error the output is left as it was.
    assert_int_equal(t.size(), 1);
    assert_true(t.rules()[0].algorithm == Algorithm::ring);
}

void test_from_file(void** state) {
    (void)state;
    DecisionTable t;
    Status s = DecisionTable::from_file("/nonexistent/dir/x.rules", &t);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::io_error));
    assert_true(s.message().find("/nonexistent/dir/x.rules: cannot open rules file") == 0);

    s = DecisionTable::from_file("/", &t);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::io_error));
    assert_true(s.message().find("/: cannot read rules file") == 0);

    char path[] = "/tmp/test_decision_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    std::string text = std::string(kExample) + "allreduce size=2M- alg=tree bad\n";
    assert_int_equal(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    s = DecisionTable::from_file(path, &t);
    assert_false(s.is_ok());
    std::string want = std::string(path) + ":7: expected KEY=VALUE";
    assert_true(s.message().compare(0, want.size(), want) == 0);

    FILE* f = std::fopen(path, "w");
    std::fputs(kExample, f);
    std::fclose(f);
    expect_ok(DecisionTable::from_file(path, &t));
    assert_int_equal(t.size(), 3);
    assert_string_equal(t.rules()[2].origin.c_str(), (std::string(path) + ":6").c_str());

    // An empty file is an empty table.
    f = std::fopen(path, "w");
    std::fclose(f);
    expect_ok(DecisionTable::from_file(path, &t));
    assert_true(t.empty());
    unlink(path);
}

// ---------------------------------------------------------------- lookup

void test_lookup_example(void** state) {
    (void)state;
    DecisionTable t = parse(kExample);
    Choice c = t.lookup(100, shape(8, 2, 4), MemType::host);
    assert_true(c.matched());
    assert_true(c.algorithm == Algorithm::leader);
    assert_false(c.has_segment);
    assert_string_equal(c.origin, "t.rules:2");

    // One node: rule 1 does not apply and nothing else covers 100 bytes.
    c = t.lookup(100, shape(4, 1, 4), MemType::host);
    assert_false(c.matched());
    assert_true(c.algorithm == Algorithm::automatic);
    assert_string_equal(c.origin, "default");
    // Device memory: same.
    c = t.lookup(100, shape(8, 2, 4), MemType::cuda);
    assert_false(c.matched());

    c = t.lookup(64 * 1024, shape(4, 1, 4), MemType::cuda);
    assert_true(c.algorithm == Algorithm::flexreduce);
    assert_true(c.has_segment);
    assert_int_equal(c.segment_bytes, 256 * 1024);
    assert_string_equal(c.origin, "t.rules:5");

    c = t.lookup(SIZE_MAX - 1, shape(2, 2, 1), MemType::host);
    assert_true(c.algorithm == Algorithm::hring);
    assert_string_equal(c.origin, "t.rules:6");
}

// The example of docs/rules-format.md, with the outcomes the page states.
void test_lookup_doc_example(void** state) {
    (void)state;
    DecisionTable t = parse(
        "# topoar rules v1\n"
        "# one node: the butterfly up to 64K, then the ring\n"
        "allreduce  size=0-64K   nodes=1              alg=recursive_doubling\n"
        "allreduce  size=0-4K    nodes=2-   mem=host  alg=recursive_doubling\n"
        "allreduce  size=4K-1M   uniform=no           alg=flexreduce  segment=256K\n"
        "allreduce  size=4K-1M                        alg=hring\n"
        "allreduce  size=1M-                          alg=hring       segment=1M\n");
    assert_string_equal(t.lookup(100, make_comm_shape(4, {4}, 0), MemType::host).origin, "t.rules:3");
    assert_string_equal(t.lookup(100, make_comm_shape(16, {4, 4, 4, 4}, 0), MemType::host).origin, "t.rules:4");
    assert_string_equal(t.lookup(64 << 10, make_comm_shape(5, {2, 3}, 0), MemType::host).origin, "t.rules:5");
    assert_string_equal(t.lookup(64 << 10, make_comm_shape(4, {2, 2}, 0), MemType::host).origin, "t.rules:6");
    Choice c = t.lookup(1 << 20, make_comm_shape(4, {4}, 0), MemType::cuda);
    assert_string_equal(c.origin, "t.rules:7");
    assert_int_equal(c.segment_bytes, 1 << 20);
    assert_false(t.lookup(100, make_comm_shape(16, {4, 4, 4, 4}, 0), MemType::cuda).matched());
}

void test_lookup_first_match_wins(void** state) {
    (void)state;
    DecisionTable t = parse(
        "allreduce size=0-1M nodes=1       alg=recursive_doubling\n"  // specific first
        "allreduce size=0-1M uniform=no    alg=flexreduce\n"
        "allreduce size=0-1M racks=2-      alg=tree\n"
        "allreduce size=0-1M ppn=8-        alg=hring\n"
        "allreduce size=0-2M ranks=64-     alg=tree segment=64K\n"
        "allreduce                         alg=ring\n");                // catch-all last
    assert_true(t.lookup(10, shape(4, 1, 4), MemType::host).algorithm == Algorithm::leader);
    // Non-uniform and one node: rule 1 comes first.
    assert_true(t.lookup(10, shape(4, 1, 4, 0, false), MemType::host).algorithm == Algorithm::leader);
    assert_true(t.lookup(10, shape(5, 2, 3, 0, false), MemType::host).algorithm == Algorithm::flexreduce);
    assert_true(t.lookup(10, shape(8, 4, 2, 2), MemType::cuda).algorithm == Algorithm::tree);
    assert_true(t.lookup(10, shape(16, 2, 8), MemType::host).algorithm == Algorithm::hring);
    Choice c = t.lookup(10, shape(64, 32, 2), MemType::host);
    assert_true(c.algorithm == Algorithm::tree);
    assert_int_equal(c.segment_bytes, 64 * 1024);
    assert_string_equal(c.origin, "t.rules:5");
    assert_true(t.lookup(10, shape(4, 2, 2), MemType::host).algorithm == Algorithm::ring);
    assert_string_equal(t.lookup(10, shape(4, 2, 2), MemType::host).origin, "t.rules:6");
    // Past every size-limited rule the catch-all decides.
    c = t.lookup(1 << 21, shape(64, 32, 2), MemType::host);
    assert_true(c.algorithm == Algorithm::ring);
    assert_false(c.has_segment);

    // The same input always gives the same answer.
    for (int i = 0; i < 3; ++i)
        assert_string_equal(t.lookup(1 << 20, shape(64, 32, 2), MemType::host).origin, "t.rules:5");
}

void test_lookup_boundaries(void** state) {
    (void)state;
    DecisionTable t = parse(
        "allreduce size=0-4K     alg=recursive_doubling\n"
        "allreduce size=4K-1M    alg=flexreduce\n"
        "allreduce size=2M-      alg=hring\n"     // gap [1M, 2M)
        "allreduce size=1M-2M nodes=2-3 alg=tree\n");
    CommShape s = shape(4, 2, 2);
    auto alg = [&](std::size_t b, const CommShape& sh) { return t.lookup(b, sh, MemType::host).algorithm; };
    assert_true(alg(0, s) == Algorithm::leader);
    assert_true(alg(4095, s) == Algorithm::leader);
    assert_true(alg(4096, s) == Algorithm::flexreduce);   // half-open: 4K belongs to the next range
    assert_true(alg((1 << 20) - 1, s) == Algorithm::flexreduce);
    assert_true(alg(1 << 20, s) == Algorithm::tree);      // the gap, for 2..3 nodes
    assert_true(alg((2 << 20) - 1, s) == Algorithm::tree);
    assert_true(alg(2 << 20, s) == Algorithm::hring);
    assert_true(alg(SIZE_MAX, s) == Algorithm::hring);     // open end includes everything
    // Counts are inclusive at both ends.
    assert_true(alg(1 << 20, shape(6, 3, 2)) == Algorithm::tree);
    assert_true(alg(1 << 20, shape(8, 4, 2)) == Algorithm::automatic);
    assert_true(alg(1 << 20, shape(2, 1, 2)) == Algorithm::automatic);

    // A table with no rules decides nothing.
    DecisionTable empty;
    Choice c = empty.lookup(1000, s, MemType::host);
    assert_false(c.matched());
    assert_string_equal(c.origin, "default");
}

// ---------------------------------------------------------------- add()

void test_add(void** state) {
    (void)state;
    DecisionTable t;
    Rule r;
    r.size.hi = 4096;
    r.algorithm = Algorithm::leader;
    expect_ok(t.add(r));
    assert_string_equal(t.rules()[0].origin.c_str(), "rule 1");

    Rule bad = r;
    bad.algorithm = Algorithm::automatic;
    Status s = t.add(bad);
    assert_false(s.is_ok());
    assert_true(s.message().find("rule 2: a rule must name a concrete algorithm") == 0);
    bad.algorithm = static_cast<Algorithm>(42);
    assert_false(t.add(bad).is_ok());

    bad = r;
    bad.size.lo = 4096;  // [4K, 4K)
    s = t.add(bad);
    assert_true(s.message().find("empty size range") != std::string::npos);

    bad = r;
    bad.origin = "tuner";
    bad.size.lo = 4096;
    bad.size.hi = SizeRange::kUnbounded;
    bad.nodes.lo = 3;
    bad.nodes.hi = 2;
    s = t.add(bad);
    assert_true(s.message().find("tuner: empty count range") == 0);

    // Hidden by rule 1.
    Rule hidden = r;
    hidden.size.lo = 100;
    hidden.size.hi = 200;
    hidden.mem = MemType::cuda;
    s = t.add(hidden);
    assert_true(s.message().find("rule 2: rule never matches: rule 1") == 0);
    assert_int_equal(t.size(), 1);

    Rule next;
    next.size.lo = 4096;
    next.algorithm = Algorithm::ring;
    next.has_segment = true;
    next.segment_bytes = 1 << 18;
    expect_ok(t.add(next));
    assert_int_equal(t.size(), 2);
    assert_string_equal(format_rule(t.rules()[1]).c_str(), "allreduce size=4K- alg=ring segment=256K");
}

// ---------------------------------------------------------------- text

void test_to_text_format(void** state) {
    (void)state;
    DecisionTable t = parse(kExample);
    const char* expected =
        "# topoar rules v1\n"
        "# measured on 4 ranks\n"
        "#\n"
        "# second paragraph\n"
        "allreduce  size=0-4K   nodes=2-  mem=host  alg=leader\n"
        "allreduce  size=4K-1M                      alg=flexreduce  segment=256K\n"
        "allreduce  size=1M-                        alg=hring\n";
    // kExample spells the latency algorithm by its deprecated name
    // (recursive_doubling, still read); the writer uses the table's name.
    std::string text = t.to_text("measured on 4 ranks\n\nsecond paragraph");
    if (text != expected) print_error("got:\n%s", text.c_str());
    assert_string_equal(text.c_str(), expected);
    assert_string_equal(DecisionTable().to_text().c_str(), "# topoar rules v1\n");
    assert_string_equal(format_rule(t.rules()[0]).c_str(),
                        "allreduce size=0-4K nodes=2- mem=host alg=leader");
    assert_true(parse("allreduce alg=recursive_doubling\n") == parse("allreduce alg=leader\n"));
}

void expect_round_trip(const DecisionTable& t) {
    std::string text = t.to_text("a comment");
    DecisionTable back;
    Status s = DecisionTable::from_text(text, "rt", &back);
    if (!s) print_error("%s\nin:\n%s", s.message().c_str(), text.c_str());
    expect_ok(s);
    assert_true(back == t);
    assert_string_equal(back.to_text("a comment").c_str(), text.c_str());
}

void test_round_trip(void** state) {
    (void)state;
    expect_round_trip(parse(kExample));
    expect_round_trip(DecisionTable());
    expect_round_trip(parse(
        "allreduce size=-64K ranks=4 nodes=1-8 ppn=-16 racks=0 uniform=no mem=cuda alg=tree segment=0\n"
        "allreduce size=1535-1537 uniform=yes alg=ring segment=1\n"
        "allreduce size=18446744073709551614- ranks=2147483646 alg=hring\n"
        "allreduce alg=flexreduce\n"));
    // Equality is about the rules, not where they came from.
    DecisionTable a = parse(kExample);
    DecisionTable b;
    expect_ok(DecisionTable::from_text(std::string("\n\n") + kExample, "other.rules", &b));
    assert_true(a == b);
    b = parse("allreduce size=0-4K nodes=2- mem=host alg=recursive_doubling\n");
    assert_true(a != b);
    // segment=0 (no segmentation) differs from no segment= (the default).
    assert_true(parse("allreduce alg=ring segment=0\n") != parse("allreduce alg=ring\n"));

    // Pseudo-random tables (fixed seed): whatever add() accepts round-trips.
    unsigned seed = 12345;
    auto rnd = [&](unsigned n) {
        seed = seed * 1103515245u + 12345u;
        return (seed >> 8) % n;
    };
    const std::size_t sizes[] = {0, 1, 100, 1024, 4096, 5793, 65536, 1 << 20, 3u << 20, SizeRange::kUnbounded};
    int accepted = 0;
    for (int table = 0; table < 200; ++table) {
        DecisionTable t;
        for (int i = 0; i < 6; ++i) {
            Rule r;
            std::size_t lo = sizes[rnd(9)], hi = sizes[rnd(10)];
            if (rnd(4) != 0) {
                r.size.lo = lo;
                r.size.hi = hi;
            }
            CountRange* counts[] = {&r.ranks, &r.nodes, &r.ppn, &r.racks};
            for (CountRange* c : counts) {
                if (rnd(3) != 0) continue;
                c->lo = static_cast<int>(rnd(5));
                c->hi = rnd(3) == 0 ? CountRange::kUnbounded : c->lo + static_cast<int>(rnd(4));
            }
            r.uniform = static_cast<Uniform>(rnd(3));
            r.mem = static_cast<MemType>(rnd(3));
            r.algorithm = static_cast<Algorithm>(1 + rnd(kNumAlgorithms - 1));
            if (rnd(2)) {
                r.has_segment = true;
                r.segment_bytes = sizes[rnd(9)];
            }
            if (t.add(r)) ++accepted;
        }
        expect_round_trip(t);
    }
    assert_true(accepted > 300);  // the generator is not degenerate
}

// ---------------------------------------------------------------- shapes

void test_comm_shape(void** state) {
    (void)state;
    CommShape s = make_comm_shape(5, {2, 3}, 0);
    assert_int_equal(s.ranks, 5);
    assert_int_equal(s.nodes, 2);
    assert_int_equal(s.ppn, 3);
    assert_int_equal(s.racks, 0);
    assert_false(s.uniform);
    s = make_comm_shape(8, {2, 2, 2, 2}, 2);
    assert_int_equal(s.nodes, 4);
    assert_int_equal(s.ppn, 2);
    assert_int_equal(s.racks, 2);
    assert_true(s.uniform);
    s = make_comm_shape(4, {}, 0);  // flat: no hosts known
    assert_int_equal(s.nodes, 0);
    assert_int_equal(s.ppn, 0);
    assert_true(s.uniform);

    assert_string_equal(memtype_name(MemType::cuda), "cuda");
    MemType m = MemType::any;
    assert_true(memtype_from_name("host", &m));
    assert_true(m == MemType::host);
    assert_false(memtype_from_name("HOST", &m));
}

// ---- the small-message contest (decide/trials.hpp) ----

void test_trial_classes(void**) {
    assert_int_equal(SizeTrials::size_class(0), 0);
    assert_int_equal(SizeTrials::size_class(1), 0);
    assert_int_equal(SizeTrials::size_class(8), 3);
    assert_int_equal(SizeTrials::size_class(15), 3);
    assert_int_equal(SizeTrials::size_class(16), 4);
    assert_int_equal(SizeTrials::size_class(std::size_t(1) << 40), 40);
    SizeTrials t;
    assert_false(t.covers(8));  // not configured: off
    t.configure(6, 1024);
    assert_true(t.covers(1) && t.covers(1024));
    assert_false(t.covers(0));
    assert_false(t.covers(1025));
    t.configure(0, 1024);
    assert_false(t.covers(8));
}

// Turns come in blocks of kBlock per contender, round after round; the
// first call of a block is not timed; the last call of the contest says so;
// then the winner runs every call.
void test_trial_turns(void**) {
    SizeTrials t;
    t.configure(6, 1 << 16);  // 3 timed per block: 2 rounds
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    const int b = SizeTrials::kBlock;
    const int total = 2 * 3 * b;
    for (int call = 0; call < total; ++call) {
        // Later lists are ignored: the class keeps its first one.
        SizeTrials::Turn turn = t.next(100, call == 0 ? who : std::vector<Contender>{});
        assert_int_equal(turn.cls, 6);
        assert_int_equal(turn.index, (call / b) % 3);
        assert_true(turn.who == who[static_cast<std::size_t>(turn.index)]);
        assert_int_equal(turn.timed, call % b != 0);
        assert_int_equal(turn.last, call == total - 1);
        assert_false(turn.decided);
        // Contender 1 (the previous module) is 2x faster on this rank; the
        // untimed calls are 100x slower and must not count.
        double sec = turn.index == 1 ? 1.0 : 2.0;
        if (!turn.timed) sec *= 100;
        t.record(turn, sec + (call % b) * 0.001);
    }
    std::vector<double> m = t.means(6);
    assert_int_equal(m.size(), 3);
    assert_true(m[0] > 1.99 && m[0] < 2.01 && m[1] > 0.99 && m[1] < 1.01);
    assert_int_equal(t.winner(6), -1);
    assert_int_equal(t.settle(6, m), 1);
    for (int k = 0; k < 5; ++k) {
        SizeTrials::Turn turn = t.next(127, who);
        assert_true(turn.decided);
        assert_false(turn.timed);
        assert_int_equal(turn.index, 1);
        assert_true(turn.who.hand_down);
    }
    // Another class has its own contest; reset forgets every class.
    SizeTrials::Turn other = t.next(128, who);
    assert_false(other.decided);
    assert_int_equal(other.cls, 7);
    t.reset();
    assert_false(t.next(100, who).decided);
}

// The pooled numbers decide; the first contender (the table's choice) wins
// ties within kKeep; a single contender needs no contest.
void test_trial_settle(void**) {
    const std::vector<Contender> who{{false, Algorithm::leader}, {true, Algorithm::automatic}};
    SizeTrials t;
    t.configure(3, 1 << 16);
    t.next(8, who);
    assert_int_equal(t.settle(3, {100.0, 100.0 / (1 + SizeTrials::kKeep) + 0.01}), 0);
    t.reset();
    t.next(8, who);
    assert_int_equal(t.settle(3, {100.0, 90.0}), 1);
    t.reset();
    SizeTrials::Turn one = t.next(8, {who[0]});
    assert_true(one.decided);
    assert_int_equal(one.index, 0);
    // More samples than asked for are not kept; means of what was kept.
    t.reset();
    SizeTrials::Turn x;
    for (int call = 0; call < SizeTrials::kBlock; ++call) {
        x = t.next(8, who);
        t.record(x, 1.0 + call);
        t.record(x, 50.0);  // a second report of the same call: beyond 3 samples it is dropped
    }
    std::vector<double> m = t.means(3);
    // Calls 1, 2, 3 timed, each reported twice: kept 2, 50, 3 (the cap is 3).
    assert_true(m[0] > 18.3 && m[0] < 18.4);
}

// After a round that is not the last, the ranks' pooled medians drop the
// contenders more than drop_margin(round) above the best; the turns then
// skip them; one left wins at once.  A stalled call among three does not
// move a median.
void test_trial_prune(void**) {
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    const int b = SizeTrials::kBlock;
    SizeTrials t;
    t.configure(9, 1 << 16);  // 3 rounds
    std::vector<int> order;
    int agreed = 0;
    for (int call = 0; call < 3 * b; ++call) {
        SizeTrials::Turn turn = t.next(100, who);
        order.push_back(turn.index);
        // tree 10, previous module 20 (dropped: 2x), leader 11 with one
        // stalled call (its median stays 11).
        double sec = turn.index == 0 ? 10 : turn.index == 1 ? 20 : (call % b == 1 ? 1000 : 11);
        t.record(turn, sec);
        assert_int_equal(turn.agree, call == 3 * b - 1);
        assert_false(turn.last);
        if (turn.agree) {
            ++agreed;
            std::vector<double> med = t.medians(turn.cls);
            assert_true(med[2] > 10.9 && med[2] < 11.1);
            assert_int_equal(t.prune(turn.cls, med), -1);  // tree and leader left
        }
    }
    assert_int_equal(agreed, 1);
    assert_true(t.active(6, 0) && !t.active(6, 1) && t.active(6, 2));
    // Round 2: tree and leader only, a block each.
    for (int call = 0; call < 2 * b; ++call) {
        SizeTrials::Turn turn = t.next(100, who);
        assert_int_equal(turn.index, call < b ? 0 : 2);
        t.record(turn, turn.index == 0 ? 10 : 11);
        assert_int_equal(turn.agree, call == 2 * b - 1);
        if (turn.agree) assert_int_equal(t.prune(turn.cls, t.medians(turn.cls)), -1);
    }
    // Round 3, the last: settled on means among those still in (the
    // previous module's 20 is out, even had it been the lowest now).
    SizeTrials::Turn turn;
    for (int call = 0; call < 2 * b; ++call) {
        turn = t.next(100, who);
        t.record(turn, turn.index == 0 ? 10 : 11);
    }
    assert_true(turn.agree && turn.last);
    assert_int_equal(t.settle(turn.cls, {10.0, 1.0, 12.0}), 0);
    assert_true(t.next(100, who).decided);

    // A clear winner after the first round: decided at once.
    t.reset();
    for (int call = 0; call < 3 * b; ++call) {
        turn = t.next(8, who);
        t.record(turn, turn.index == 2 ? 1.0 : 5.0);
    }
    assert_true(turn.agree);
    assert_int_equal(t.prune(turn.cls, t.medians(turn.cls)), 2);
    turn = t.next(8, who);
    assert_true(turn.decided);
    assert_int_equal(turn.index, 2);
    // A contender that never ran a timed call is +inf: dropped.
    t.reset();
    for (int call = 0; call < 3 * b; ++call) {
        turn = t.next(8, who);
        if (turn.index != 1) t.record(turn, turn.index == 0 ? 1.0 : 1.2);
    }
    std::vector<double> med = t.medians(turn.cls);
    assert_false(std::isfinite(med[1]));
    assert_int_equal(t.prune(turn.cls, med), -1);
    assert_true(t.active(3, 0) && !t.active(3, 1) && t.active(3, 2));
}


// The margins shrink with the rounds (the sequential test): 30 %, 20 %,
// then 10 %.  A contender 25 % slower survives the first round and is
// dropped after the second; a field within kClose after kCloseRounds
// rounds settles then, not before; so no contest runs past round 3.
void test_trial_sequential(void**) {
    assert_true(SizeTrials::drop_margin(1) > 0.29 && SizeTrials::drop_margin(1) < 0.31);
    assert_true(SizeTrials::drop_margin(2) > 0.19 && SizeTrials::drop_margin(2) < 0.21);
    assert_true(SizeTrials::drop_margin(3) > 0.09 && SizeTrials::drop_margin(9) < 0.11);
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    const int b = SizeTrials::kBlock;
    SizeTrials t;
    t.configure(24, 1 << 16);  // 8 rounds at most
    // tree 10, previous module 12.5 (25 %), leader 10.2 (2 %).
    auto round = [&](int calls) {
        SizeTrials::Turn turn;
        for (int call = 0; call < calls; ++call) {
            turn = t.next(8, who);
            t.record(turn, turn.index == 0 ? 10 : turn.index == 1 ? 12.5 : 10.2);
        }
        return turn;
    };
    SizeTrials::Turn turn = round(3 * b);
    assert_true(turn.agree && !turn.last);
    assert_int_equal(t.prune(3, t.medians(3)), -1);
    assert_true(t.active(3, 1));  // 25 % < 30 %: still in
    assert_false(t.close_enough(3, t.medians(3)));
    turn = round(3 * b);
    assert_true(turn.agree);
    assert_int_equal(t.prune(3, t.medians(3)), -1);
    assert_false(t.active(3, 1));  // 25 % > 20 %: dropped
    assert_false(t.close_enough(3, t.medians(3)));  // within 5 %, but only 2 rounds
    turn = round(2 * b);
    assert_true(turn.agree && !turn.last);
    assert_int_equal(t.rounds(3), 3);
    assert_int_equal(t.prune(3, t.medians(3)), -1);
    assert_true(t.close_enough(3, t.medians(3)));
    // Settled on means; tree, the table's choice, keeps it within kKeep.
    assert_int_equal(t.settle(3, t.means(3)), 0);
    assert_true(t.next(8, who).decided);

    // 10, 10.8 (8 %), 11.5 (15 %): all in after rounds 1 and 2; the third
    // drops 11.5 and the rest is within 10 %: done after three rounds.
    t.reset();
    for (int r = 1; r <= 3; ++r) {
        for (int call = 0; call < 3 * b; ++call) {
            turn = t.next(8, who);
            t.record(turn, turn.index == 0 ? 10.8 : turn.index == 1 ? 11.5 : 10);
        }
        assert_true(turn.agree);
        assert_int_equal(t.prune(3, t.medians(3)), -1);
        assert_int_equal(t.active(3, 1), r < 3);
        assert_int_equal(t.close_enough(3, t.medians(3)), r == 3);
    }
    assert_int_equal(t.settle(3, t.means(3)), 0);  // 10.8 is within kKeep of 10: the table's choice keeps it
}

// Runs one watched window of class 12 (4 KiB): kWatchSkip untimed calls,
// then kWatch timed ones of `seconds` each (the skipped ones 100x slower:
// they must not count); the window's last call agrees.  Returns the index
// that ran it.
static int watch_window(SizeTrials& t, const std::vector<Contender>& who, double seconds) {
    int index = -1;
    for (int call = 0; call < SizeTrials::kWatchSkip + SizeTrials::kWatch; ++call) {
        SizeTrials::Turn turn = t.next(4096, who);
        assert_int_equal(turn.cls, 12);
        assert_true(turn.decided);
        assert_true(turn.watched);
        assert_int_equal(turn.timed, call >= SizeTrials::kWatchSkip);
        assert_int_equal(turn.agree, call == SizeTrials::kWatchSkip + SizeTrials::kWatch - 1);
        if (index < 0) index = turn.index;
        assert_int_equal(turn.index, index);  // one contender per window
        t.record(turn, turn.timed ? seconds : 100 * seconds);
    }
    const double m = t.window_mean(12);
    assert_true(m > seconds * 0.999 && m < seconds * 1.001);
    return index;
}

// A contest decided by settle(): the winner watched (begin_watch), then
// kept where it runs as in its contest; where it ran more than kDrift
// slower, the contenders whose contest mean beats that by more than kKeep
// get a window each, and the fastest window runs the class (the contest's
// winner kept unless beaten by more than kKeep).  Not watched when
// configured off or when the class started decided.
void test_trial_watch(void**) {
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    // Contest means (pooled): tree 150, previous module 236, leader 110.
    const std::vector<double> contest{150.0, 236.0, 110.0};
    auto decided = [&](SizeTrials& t, bool watch) {
        t.configure(3, 1 << 16, watch);
        t.next(4096, who);
        assert_int_equal(t.settle(12, contest), 2);
        t.begin_watch(12, contest);
    };
    {  // held: leader's window within kDrift of its contest mean
        SizeTrials t;
        decided(t, true);
        assert_true(t.watching(12));
        assert_int_equal(watch_window(t, who, 110.0 * (1 + SizeTrials::kDrift) - 1), 2);
        assert_int_equal(t.end_window(12, 110.0 * (1 + SizeTrials::kDrift) - 1), 2);
        assert_false(t.watching(12));
        SizeTrials::Turn after = t.next(4096, who);
        assert_true(after.decided && !after.watched && !after.timed);
        assert_int_equal(after.index, 2);
    }
    {  // drift: leader 230 alone; tree (150 x 1.1 < 230) gets a window and
       // runs 155: it takes the class; the previous module (236) never runs
        SizeTrials t;
        decided(t, true);
        assert_int_equal(watch_window(t, who, 230.0), 2);
        assert_int_equal(t.end_window(12, 230.0), 0);
        assert_true(t.watching(12));
        assert_int_equal(watch_window(t, who, 155.0), 0);
        assert_int_equal(t.end_window(12, 155.0), 0);
        assert_false(t.watching(12));
        assert_int_equal(t.winner(12), 0);
        assert_int_equal(t.contest_winner(12), 2);
        assert_true(t.watched_mean(12, 2) == 230.0 && t.watched_mean(12, 0) == 155.0);
        assert_false(std::isfinite(t.watched_mean(12, 1)));
        assert_true(t.contest_mean(12, 1) == 236.0);
        SizeTrials::Turn after = t.next(4096, who);
        assert_true(after.decided && !after.watched);
        assert_int_equal(after.index, 0);
    }
    {  // drift, but tree alone is no faster by more than kKeep: leader kept
        SizeTrials t;
        decided(t, true);
        watch_window(t, who, 230.0);
        assert_int_equal(t.end_window(12, 230.0), 0);
        watch_window(t, who, 215.0);
        assert_int_equal(t.end_window(12, 215.0), 2);
        assert_false(t.watching(12));
    }
    {  // drift, tree drifts too and the previous module's contest mean
       // now beats the fastest window (280 > 236 x 1.1): it gets one too
        SizeTrials t;
        decided(t, true);
        watch_window(t, who, 300.0);
        assert_int_equal(t.end_window(12, 300.0), 0);
        watch_window(t, who, 280.0);
        assert_int_equal(t.end_window(12, 280.0), 1);
        assert_true(t.watching(12));
        SizeTrials::Turn turn = t.next(4096, who);
        assert_true(turn.who.hand_down && turn.watched);
        // A call the previous module could not run went to the table's
        // choice (Selection::contest_turn): not the window's.
        turn.index = 0;
        turn.timed = true;
        t.record(turn, 1.0);
        assert_false(std::isfinite(t.window_mean(12)));
        for (int call = 1; call < SizeTrials::kWatchSkip + SizeTrials::kWatch; ++call) {
            SizeTrials::Turn x = t.next(4096, who);
            t.record(x, 240.0);
        }
        assert_int_equal(t.end_window(12, 240.0), 1);  // 240 beats 300 and 280 by more than kKeep
        assert_false(t.watching(12));
    }
    {  // a window no rank timed (+inf pooled): the watch ends, winner kept
        SizeTrials t;
        decided(t, true);
        watch_window(t, who, 230.0);
        assert_int_equal(t.end_window(12, std::numeric_limits<double>::infinity()), 2);
        assert_false(t.watching(12));
    }
    {  // configured off: decided, not watched
        SizeTrials t;
        decided(t, false);
        assert_false(t.watching(12));
        SizeTrials::Turn after = t.next(4096, who);
        assert_true(after.decided && !after.watched && !after.timed);
    }
    {  // decided from a kept outcome: not watched
        SizeTrials t;
        t.configure(3, 1 << 16, true);
        t.decide_class(12, who, 0);
        assert_false(t.watching(12));
        SizeTrials::Turn after = t.next(4096, who);
        assert_true(after.decided && !after.watched);
    }
}

// A class decided from an agreed outcome: every call its winner, no turns;
// a class already started, or a winner out of range, is left alone.
void test_trial_decide_class(void**) {
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic}};
    SizeTrials t;
    t.configure(24, 1 << 16);
    t.decide_class(3, who, 1);
    for (int k = 0; k < 3; ++k) {
        SizeTrials::Turn turn = t.next(8, {{false, Algorithm::leader}});  // ignored: the class is decided
        assert_true(turn.decided);
        assert_int_equal(turn.index, 1);
        assert_true(turn.who.hand_down);
    }
    assert_false(t.next(64, who).decided);
    t.decide_class(6, who, 1);  // started: left alone
    assert_false(t.next(64, who).decided);
    t.decide_class(4, who, 2);  // no such contender
    assert_false(t.next(16, who).decided);
}


}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_format_size),
        cmocka_unit_test(test_parse_example),
        cmocka_unit_test(test_parse_every_key),
        cmocka_unit_test(test_parse_empty_and_comments),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_error_binary),
        cmocka_unit_test(test_parse_error_stops_at_first),
        cmocka_unit_test(test_from_file),
        cmocka_unit_test(test_lookup_example),
        cmocka_unit_test(test_lookup_doc_example),
        cmocka_unit_test(test_lookup_first_match_wins),
        cmocka_unit_test(test_lookup_boundaries),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_to_text_format),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_comm_shape),
        cmocka_unit_test(test_trial_classes),
        cmocka_unit_test(test_trial_turns),
        cmocka_unit_test(test_trial_settle),
        cmocka_unit_test(test_trial_prune),
        cmocka_unit_test(test_trial_sequential),
        cmocka_unit_test(test_trial_decide_class),
        cmocka_unit_test(test_trial_watch),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
