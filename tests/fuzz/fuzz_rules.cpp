// libFuzzer harness: rules files (DecisionTable::from_text,
// common/decide/decision.cpp; docs/rules-format.md).
//
// Input: a rules file's text.  Checks: a refused file gets a printable
// one-line message; an accepted table writes (to_text, with and without a
// comment) and reads back to an equal table, every rule's format_rule line
// reads back to that rule, and lookup takes the first matching rule.
#include <cstddef>
#include <cstdint>
#include <string>

#include "decide/decision.hpp"
#include "fuzz_check.hpp"

using namespace topoar;
using topoar_fuzz::require;

namespace {

DecisionTable reread(const std::string& text, const char* what) {
    DecisionTable t;
    Status s = DecisionTable::from_text(text, "written", &t);
    require(s.is_ok(), std::string(what) + " does not read back: " + s.message(), text);
    return t;
}

// Sizes and shapes around every rule's bounds; lookup must agree with a
// plain walk over the rules.
void check_lookup(const DecisionTable& t) {
    const std::size_t sizes[] = {0, 1, 4095, 4096, 65536, std::size_t(1) << 20, SizeRange::kUnbounded - 1};
    const CommShape shapes[] = {make_comm_shape(1, {1}, 0), make_comm_shape(5, {2, 3}, 1),
                                make_comm_shape(8, {4, 4}, 2), make_comm_shape(3, {}, 0)};
    for (const Rule& r : t.rules())
        for (std::size_t bytes : {r.size.lo, r.size.hi == SizeRange::kUnbounded ? r.size.lo : r.size.hi - 1})
            for (const CommShape& shape : shapes)
                for (MemType mem : {MemType::host, MemType::cuda}) {
                    Choice c = t.lookup(bytes, shape, mem);
                    const Rule* first = nullptr;
                    for (const Rule& x : t.rules())
                        if (!first && x.matches(bytes, shape, mem)) first = &x;
                    require(first ? c.matched() && c.origin == first->origin && c.algorithm == first->algorithm
                                  : !c.matched(),
                            "lookup does not take the first matching rule");
                }
    for (std::size_t bytes : sizes) (void)t.lookup(bytes, shapes[1], MemType::host);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    DecisionTable t;
    Status s = DecisionTable::from_text(text, "fuzz.rules", &t);
    if (!s) {
        topoar_fuzz::check_message(s);
        return 0;
    }
    require(reread(t.to_text(), "to_text()") == t, "to_text() reads back to a different table", t.to_text());
    // Any comment, even the input itself, stays a comment.
    require(reread(t.to_text(text), "to_text(comment)") == t, "to_text(comment) reads back to a different table");
    for (const Rule& r : t.rules()) {
        DecisionTable one = reread(format_rule(r), "format_rule()");
        require(one.size() == 1 && one.rules()[0] == r, "format_rule() reads back to a different rule", format_rule(r));
    }
    check_lookup(t);
    return 0;
}
