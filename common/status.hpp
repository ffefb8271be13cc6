// topoar engine: status codes that carry their context.
//
// The engine never throws across its C boundary; functions that can fail
// return a Status.  A failed Status says what went wrong and where (for input
// files: "file:line: problem"), so the glue can print one clear message and
// fall back to the previous module.
#pragma once

#include <cstring>
#include <string>
#include <utility>

namespace topoar {

enum class Code {
    ok = 0,
    invalid_argument,  // a parameter value or input file is malformed
    unsupported,       // a valid request this engine does not handle
    io_error,          // a file could not be read
    transport_error,   // a send/recv/wait callback failed
    internal_error,    // a broken invariant (a bug)
};

class Status {
public:
    Status() = default;
    Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok() { return Status(); }
    static Status invalid(std::string m) { return {Code::invalid_argument, std::move(m)}; }
    static Status unsupported(std::string m) { return {Code::unsupported, std::move(m)}; }
    static Status io(std::string m) { return {Code::io_error, std::move(m)}; }
    static Status internal(std::string m) { return {Code::internal_error, std::move(m)}; }

    bool is_ok() const { return code_ == Code::ok; }
    explicit operator bool() const { return is_ok(); }
    Code code() const { return code_; }
    const std::string& message() const { return message_; }
    // Where the failure went through TOPOAR_TRY, innermost first:
    // "executor.cpp:150 (run) <- engine.cpp:220 (allreduce)"; "" if nowhere.
    const std::string& where() const { return where_; }
    // The message with its trail, for logs: "message [at where]".
    std::string describe() const { return where_.empty() ? message_ : message_ + " [at " + where_ + "]"; }

    // Adds a propagation point to the trail (TOPOAR_TRY does this).
    Status&& at(const char* file, int line, const char* function) && {
        const char* base = std::strrchr(file, '/');
        if (!where_.empty()) where_ += " <- ";
        where_ += std::string(base ? base + 1 : file) + ":" + std::to_string(line) + " (" + function + ")";
        return std::move(*this);
    }

private:
    Code code_ = Code::ok;
    std::string message_;
    std::string where_;
};

// Input text as a Status message quotes it ("bad size '" + excerpt(w) + "'").
// Every parser quotes what it read through this, so a binary file cannot put
// control characters, NULs or broken UTF-8 into a log line: bytes outside
// printable ASCII are written \xNN (and a backslash \\, so the escape is
// unambiguous), and text longer than `max` bytes is cut there with "...".
inline std::string excerpt(const std::string& text, std::size_t max = 80) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    const std::size_t n = text.size() > max ? max : text.size();
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\\') {
            out += "\\\\";
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (text.size() > max) out += "...";
    return out;
}

// Propagate a failed Status to the caller, noting file, line and function
// in its trail (Status::where(); the message itself is unchanged).
#define TOPOAR_TRY(expr)                                                               \
    do {                                                                               \
        ::topoar::Status topoar_try_s_ = (expr);                                       \
        if (!topoar_try_s_.is_ok()) return std::move(topoar_try_s_).at(__FILE__, __LINE__, __func__); \
    } while (0)

}  // namespace topoar
