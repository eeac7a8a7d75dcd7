// SPDX-License-Identifier: MIT
// The one funnel of compile events (core/reports.hpp CompileEvent): every place that builds or
// loads a program, a library's first call or plan, and a device's setup reports here, through a
// BuildReport. The events go to the application's handler (lt::set_log_handler) and, with
// LAZYTENSOR_DEBUG=1 or more, one line per finished or failed build to stderr.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/reports.hpp"
#include "../ir/kernel.hpp"

namespace lazytensor::detail {

using CompileHandler = std::function<void(const CompileEvent&)>;

/// The installed handler. Held by shared_ptr so that an event being delivered keeps the handler
/// it started with while another thread replaces it.
struct CompileLog {
    std::mutex mutex;
    std::shared_ptr<const CompileHandler> handler;
    std::atomic<bool> has_handler{false};
    std::atomic<bool> warned{false};  // a handler threw: said once
};

inline CompileLog& compile_log() {
    static CompileLog* log = new CompileLog();  // never destroyed: builds may report during exit
    return *log;
}

/// Installs `handler` (empty: none, the default: only LAZYTENSOR_DEBUG prints).
inline void set_compile_handler(CompileHandler handler) {
    CompileLog& log = compile_log();
    std::shared_ptr<const CompileHandler> next;
    if (handler) next = std::make_shared<const CompileHandler>(std::move(handler));
    std::lock_guard<std::mutex> lock(log.mutex);
    log.has_handler.store(next != nullptr);
    log.handler = std::move(next);
}

/// Whether anyone listens (a handler, or LAZYTENSOR_DEBUG): else builds skip describing themselves.
inline bool compile_events_wanted() { return compile_log().has_handler.load() || debug_level() >= 1; }

/// The LAZYTENSOR_DEBUG line of a finished or failed event.
inline std::string describe_event(const CompileEvent& e) {
    std::ostringstream out;
    out << "[lazytensor] build on " << e.device << ": " << e.what;
    if (e.phase == CompileEvent::Phase::Failed) {
        const std::string first = e.error.substr(0, e.error.find('\n'));
        out << " failed after " << e.ms << " ms: " << first;
    } else {
        out << " in " << e.ms << " ms";
        if (e.source == CompileEvent::Source::Disk) out << " (from the disk cache)";
        else if (e.source == CompileEvent::Source::Memory) out << " (its program was in memory)";
        else if (e.source == CompileEvent::Source::Compiler && e.kind == CompileEvent::Kind::Program) out << " (compiled)";
    }
    return out.str();
}

/// Sends `event` to the handler and, for finished and failed ones, to stderr under
/// LAZYTENSOR_DEBUG. A handler that throws does not break the build that reports: its exception
/// is dropped (said once on stderr).
inline void report_compile(const CompileEvent& event) noexcept {
    try {
        if (event.phase != CompileEvent::Phase::Started && debug_level() >= 1) std::cerr << describe_event(event) + "\n";
        CompileLog& log = compile_log();
        if (!log.has_handler.load()) return;
        std::shared_ptr<const CompileHandler> handler;
        {
            std::lock_guard<std::mutex> lock(log.mutex);
            handler = log.handler;
        }
        if (handler) (*handler)(event);
    } catch (const std::exception& e) {
        if (!compile_log().warned.exchange(true))
            std::cerr << "[lazytensor] warning: the log handler (lt::set_log_handler) threw: " << e.what()
                      << "; this and its later exceptions are ignored\n";
    } catch (...) {
        if (!compile_log().warned.exchange(true))
            std::cerr << "[lazytensor] warning: the log handler (lt::set_log_handler) threw; this and its later "
                         "exceptions are ignored\n";
    }
}

/// One build as events: Started when made (if anyone listens), then finished() or failed().
/// Times the build either way (the caller adds the time to its device's CompileStats).
class BuildReport {
public:
    BuildReport(Device device, CompileEvent::Kind kind, std::string what)
        : start_(std::chrono::steady_clock::now()), wanted_(compile_events_wanted()) {
        event_.device = device;
        event_.kind = kind;
        if (!wanted_) return;
        event_.what = std::move(what);
        report_compile(event_);
    }
    /// A report whose description is made only if anyone listens.
    template <class Describe, class = std::enable_if_t<std::is_invocable_r_v<std::string, Describe>>>
    BuildReport(Device device, CompileEvent::Kind kind, Describe describe)
        : BuildReport(device, kind, compile_events_wanted() ? describe() : std::string()) {}

    /// Counts `ms` spent before the report was made as part of the build (work done once,
    /// ahead, on its behalf: listing OpenCL's devices for the first device's setup).
    void started_earlier(double ms) {
        start_ -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double, std::milli>(ms));
    }
    double elapsed_ms() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    }
    /// Reports the build finished, from `source`; returns its milliseconds.
    double finished(CompileEvent::Source source) {
        event_.ms = elapsed_ms();
        if (wanted_) {
            event_.phase = CompileEvent::Phase::Finished;
            event_.source = source;
            report_compile(event_);
        }
        return event_.ms;
    }
    /// Reports the build failed with `error`; returns its milliseconds.
    double failed(const std::string& error) {
        event_.ms = elapsed_ms();
        if (wanted_) {
            event_.phase = CompileEvent::Phase::Failed;
            event_.error = error;
            report_compile(event_);
        }
        return event_.ms;
    }

private:
    CompileEvent event_;
    std::chrono::steady_clock::time_point start_;
    bool wanted_;
};

/// A kernel in user terms: "fused kernel: mul, exp, sum -> float32[4096]" (its operations in
/// order, each once, and its output).
inline std::string kernel_summary(const ir::Kernel& k) {
    std::string ops;
    auto add = [&](const char* name) {
        const std::string n = name;
        if ((", " + ops + ",").find(" " + n + ",") != std::string::npos) return;
        ops += (ops.empty() ? "" : ", ") + n;
    };
    for (const ir::Phase& ph : k.phases) {
        for (const ir::Instr& in : ph.instrs) {
            if (in.op == ir::Op::Unary) add(op_name(in.unary));
            else if (in.op == ir::Op::Binary) add(op_name(in.binary));
            else if (in.op == ir::Op::Where) add("where");
            else if (in.op == ir::Op::Cast) add("cast");
        }
        if (ph.kind == ir::Phase::Kind::Reduce) add(op_name(ph.reduce_op));
    }
    DType out = DType::Float32;
    for (const ir::Param& p : k.params)
        if (p.output) out = p.dtype;
    Shape shape;
    for (std::size_t j = 0; j < k.domain.size(); ++j)
        if (j >= k.reduced.size() || !k.reduced[j]) shape.push_back(k.domain[j]);
    return concat("fused kernel: ", ops.empty() ? std::string("copy") : ops, " -> ", out, shape);
}

}  // namespace lazytensor::detail
