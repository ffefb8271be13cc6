// topoar engine: status codes that carry their context.
//
// The engine never throws across its C boundary; functions that can fail
// return a Status.  A failed Status says what went wrong and where (for input
// files: "file:line: problem"), so the glue can print one clear message and
// fall back to the previous module.
#pragma once

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

private:
    Code code_ = Code::ok;
    std::string message_;
};

// Propagate a failed Status to the caller.
#define TOPOAR_TRY(expr)                           \
    do {                                           \
        ::topoar::Status topoar_try_s_ = (expr);   \
        if (!topoar_try_s_.is_ok()) return topoar_try_s_; \
    } while (0)

}  // namespace topoar
