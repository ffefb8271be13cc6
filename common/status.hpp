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

// Propagate a failed Status to the caller, noting file, line and function
// in its trail (Status::where(); the message itself is unchanged).
#define TOPOAR_TRY(expr)                                                               \
    do {                                                                               \
        ::topoar::Status topoar_try_s_ = (expr);                                       \
        if (!topoar_try_s_.is_ok()) return std::move(topoar_try_s_).at(__FILE__, __LINE__, __func__); \
    } while (0)

}  // namespace topoar
