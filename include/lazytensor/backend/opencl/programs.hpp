// SPDX-License-Identifier: MIT
// Built programs of one device, and the caches above and below them. A program is looked up
// by its source in memory, then by source, options, device and driver on disk
// (program_cache.hpp), and only then compiled. Above the programs, the kinds of work whose
// source is generated per call keep what they made, keyed by what the source is made of, so
// that a hit generates no source: the own GEMM and attention kernels (KernelsByKey), and the
// code of kernels fused into products and scans (FusedCodeCache).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../../core/lru_cache.hpp"
#include "../../core/reports.hpp"
#include "../../ir/gemm.hpp"
#include "../../ir/kernel.hpp"
#include "../../ir/scan.hpp"
#include "../backend.hpp"
#include "../compile_log.hpp"
#include "cl_api.hpp"
#include "device.hpp"
#include "fused_code.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_kernel.hpp"
#include "program_cache.hpp"
#include "renderer.hpp"

namespace lazytensor::detail::opencl {

/// Where ProgramCache::build found a program.
enum class ProgramSource { Memory, Disk, Compiler };

/// The source with line numbers, as build errors show it.
inline std::string numbered(const std::string& source) {
    std::ostringstream out;
    std::istringstream in(source);
    int n = 1;
    for (std::string line; std::getline(in, line); ++n) out << (n < 10 ? "   " : n < 100 ? "  " : n < 1000 ? " " : "") << n << "  " << line << "\n";
    return out.str();
}

class ProgramCache {
public:
    /// `count_build` hears of every program not found in memory: loaded from disk (true) or
    /// compiled (false), and the milliseconds it took where the cache reported it (else 0).
    ProgramCache(const OpenCLDevice& device, std::function<void(bool from_disk, double ms)> count_build)
        : device_(device), options_(device.build_options()), disk_(default_cache_dir()), count_build_(std::move(count_build)) {}

    /// A built program for `source` on this device: from memory, from the disk cache, or
    /// compiled now (with its kernel capped at `max_registers` where that can be asked: NVIDIA).
    /// A failed build throws BackendError with the build log and the source. A program not in
    /// memory is reported as a compile event (backend/compile_log.hpp) described as `what` (empty:
    /// by its first kernel's name), unless `caller_reports` (the kernels of a realize: the backend
    /// reports their batch, and times it).
    std::shared_ptr<ProgramOwner> build(const std::string& source, ProgramSource* from = nullptr, int max_registers = 0,
                                        const std::string& what = {}, bool caller_reports = false) {
        if (from) *from = ProgramSource::Memory;
        if (auto hit = programs_.find(source)) return hit;
        std::optional<BuildReport> report;
        if (!caller_reports)
            report.emplace(device_.device(), CompileEvent::Kind::Program, [&] { return what.empty() ? described(source) : what; });
        const std::string key = concat("lazytensor program cache 1\noptions: ", options_, "\ndevice: ", device_.name(),
                                       "\ndriver: ", device_.driver(), "\nsource:\n", source);
        std::shared_ptr<ProgramOwner> program;
        bool from_disk = false;
        try {
            if (auto binary = disk_.load(key)) program = from_binary(*binary, disk_.path_for(key));
            from_disk = program != nullptr;
            if (!from_disk) {
                program = from_source(source);
                if (max_registers) program = with_register_cap(std::move(program), max_registers);
                // Only when storing: asking PoCL for a binary makes it compile every kernel once more.
                if (disk_.enabled()) disk_.store(key, binary_of(program->program));
            }
        } catch (const std::exception& e) {
            if (report) count_build_time_(report->failed(e.what()));
            throw;
        }
        count_build_(from_disk, report ? report->finished(from_disk ? CompileEvent::Source::Disk : CompileEvent::Source::Compiler) : 0);
        if (from) *from = from_disk ? ProgramSource::Disk : ProgramSource::Compiler;
        return programs_.insert(source, std::move(program)).first;
    }

    /// Where the time of failed builds goes (they count no program).
    void on_failed_build(std::function<void(double ms)> count) { count_build_time_ = std::move(count); }

    /// The program built for `source`, if it is held in memory.
    std::shared_ptr<ProgramOwner> find(const std::string& source) { return programs_.find(source); }

    /// A kernel of a built program.
    KernelOwner make_kernel(const ProgramOwner& program, const char* name) const {
        cl_int err = CL_SUCCESS;
        KernelOwner owner(clCreateKernel(program.program, name, &err));
        check(err, "clCreateKernel", concat("for ", name, " on ", device_.describe()));
        return owner;
    }

    /// Built programs held in memory (bounded like the kernel cache).
    std::size_t size() const { return programs_.size(); }
    void set_capacity(std::size_t programs) { programs_.set_capacity(programs); }
    /// Forgets the programs held in memory (the disk cache stays).
    void clear() { programs_.clear(); }

    ProgramDiskCache& disk() { return disk_; }
    const std::string& options() const { return options_; }
    /// Tests only: see OpenCLBackend::exchange_build_options.
    std::string exchange_options(std::string options) { return std::exchange(options_, std::move(options)); }

private:
    std::string build_log(cl_program program) const {
        std::size_t n = 0;
        if (clGetProgramBuildInfo(program, device_.id(), CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS) return "";
        std::string log(n, '\0');
        clGetProgramBuildInfo(program, device_.id(), CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
        return log;
    }

    /// "program of lt_scan_f32 (OpenCL C)": a program described by its first kernel's name.
    static std::string described(const std::string& source) {
        const std::string marker = "__kernel void ";
        const std::size_t at = source.find(marker);
        if (at == std::string::npos) return "OpenCL program";
        const std::size_t begin = at + marker.size();
        const std::size_t end = source.find_first_of("( \n", begin);
        return concat("OpenCL program of ", source.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    }

    std::shared_ptr<ProgramOwner> from_source(const std::string& source) {
        const char* text = source.c_str();
        const std::size_t len = source.size();
        cl_int err = CL_SUCCESS;
        auto program = std::make_shared<ProgramOwner>(clCreateProgramWithSource(device_.context(), 1, &text, &len, &err));
        check(err, "clCreateProgramWithSource", concat("on ", device_.describe()));
        const cl_device_id id = device_.id();
        err = clBuildProgram(program->program, 1, &id, options_.c_str(), nullptr, nullptr);
        if (err != CL_SUCCESS)
            fail<BackendError>("OpenCL: building a lazytensor kernel for ", device_.describe(), " failed: ", status_name(err),
                               " (", err, ")\n--- build log ---\n", build_log(program->program), "\n--- generated source (",
                               "options: ", options_, ") ---\n", numbered(source));
        if (debug_level() >= 2) {  // beside the generated source: what the device's compiler said of it, if anything
            const std::string log = build_log(program->program);
            if (log.find_first_not_of(" \t\r\n") != std::string::npos)
                std::cerr << "[lazytensor] the OpenCL C compiler of " << device_.describe() << " on a kernel it built:\n"
                          << log << "\n";
        }
        return program;
    }

    /// `program` rebuilt from its PTX with its kernel capped at `registers` (NVIDIA's OpenCL C
    /// compiler takes no such option); elsewhere, or where the driver refuses the PTX, `program`.
    std::shared_ptr<ProgramOwner> with_register_cap(std::shared_ptr<ProgramOwner> program, int registers) {
        if (!device_.nvidia()) return program;  // (binaries of others aren't PTX)
        const std::vector<unsigned char> binary = binary_of(program->program);
        const std::optional<std::string> ptx = ptx_with_register_cap(std::string(binary.begin(), binary.end()), registers);
        if (!ptx) return program;
        cl_int why = CL_SUCCESS;
        if (auto capped = built_from_binary(reinterpret_cast<const unsigned char*>(ptx->data()), ptx->size(), why)) return capped;
        std::cerr << "[lazytensor] warning: " << device_.describe() << " refused a GEMM kernel's PTX with a cap of "
                  << registers << " registers (" << status_name(why) << "); it runs uncapped, slower\n";
        return program;
    }

    std::shared_ptr<ProgramOwner> from_binary(const std::vector<unsigned char>& binary, const std::string& path) {
        cl_int why = CL_SUCCESS;
        if (auto program = built_from_binary(binary.data(), binary.size(), why)) return program;
        std::cerr << "[lazytensor] warning: OpenCL program cache: " << path << " was rejected by the driver ("
                  << status_name(why) << "); rebuilding it from source\n";
        return nullptr;
    }

    /// A program built from a device binary, or null with the driver's status in `why`.
    std::shared_ptr<ProgramOwner> built_from_binary(const unsigned char* data, std::size_t len, cl_int& why) {
        cl_int status = CL_SUCCESS, err = CL_SUCCESS;
        const cl_device_id id = device_.id();
        auto program = std::make_shared<ProgramOwner>(clCreateProgramWithBinary(device_.context(), 1, &id, &len, &data, &status, &err));
        if (err == CL_SUCCESS && status == CL_SUCCESS)
            err = clBuildProgram(program->program, 1, &id, options_.c_str(), nullptr, nullptr);
        why = err != CL_SUCCESS ? err : status;
        return why == CL_SUCCESS ? program : nullptr;
    }

    /// This device's binary of `program` (a program of a shared context has one slot per device
    /// of the context, filled for those it was built for). PoCL 3.1 files the binary of a program
    /// built for its context's second device in the first slot; a program built for one device
    /// has one binary, so a lone filled slot is that device's.
    std::vector<unsigned char> binary_of(cl_program program) const {
        cl_uint count = 0;
        if (clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof count, &count, nullptr) != CL_SUCCESS || count == 0)
            return {};
        std::vector<cl_device_id> devices(count);
        std::vector<std::size_t> sizes(count);
        if (clGetProgramInfo(program, CL_PROGRAM_DEVICES, count * sizeof(cl_device_id), devices.data(), nullptr) != CL_SUCCESS ||
            clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(std::size_t), sizes.data(), nullptr) != CL_SUCCESS)
            return {};
        std::size_t slot = static_cast<std::size_t>(std::find(devices.begin(), devices.end(), device_.id()) - devices.begin());
        if (slot == count) return {};
        if (sizes[slot] == 0) {
            if (std::count_if(sizes.begin(), sizes.end(), [](std::size_t s) { return s != 0; }) != 1) return {};
            slot = static_cast<std::size_t>(std::find_if(sizes.begin(), sizes.end(), [](std::size_t s) { return s != 0; }) - sizes.begin());
        }
        // Every filled slot gets room (PoCL writes each one it has, whatever we asked for).
        std::vector<std::vector<unsigned char>> binaries(count);
        std::vector<unsigned char*> slots(count, nullptr);  // (a null slot is skipped)
        for (std::size_t i = 0; i < count; ++i)
            if (sizes[i] != 0) slots[i] = (binaries[i] = std::vector<unsigned char>(sizes[i])).data();
        if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, count * sizeof(unsigned char*), slots.data(), nullptr) != CL_SUCCESS)
            return {};
        return std::move(binaries[slot]);
    }

    const OpenCLDevice& device_;
    std::string options_;
    LruCache<ProgramOwner> programs_{kernel_cache_capacity_from_env()};
    ProgramDiskCache disk_;
    std::function<void(bool, double)> count_build_;
    std::function<void(double)> count_build_time_ = [](double) {};
};

/// Kernels of one kind of work, each the one kernel of a program of its own, keyed by what its
/// source is made of. A kind that makes a kernel per shape class and fused code keeps at most
/// as many as the kernel cache (emptied when full).
class KernelsByKey {
public:
    /// The kernel `name` of the program of `make_source()`, built (ProgramCache::build, with
    /// `max_registers`) the first time `key` is asked for.
    template <class MakeSource>
    cl_kernel get(const std::string& key, MakeSource make_source, const char* name, ProgramCache& programs,
                  std::size_t capacity, int max_registers = 0, const std::string& what = {}) {
        auto it = kernels_.find(key);
        if (it == kernels_.end()) {
            if (kernels_.size() >= capacity) kernels_.clear();
            std::shared_ptr<ProgramOwner> program = programs.build(make_source(), nullptr, max_registers, what);
            KernelOwner kernel = programs.make_kernel(*program, name);
            it = kernels_.emplace(key, Built{std::move(program), std::move(kernel)}).first;
        }
        return it->second.kernel.kernel;
    }
    void clear() { kernels_.clear(); }

private:
    struct Built {
        std::shared_ptr<ProgramOwner> program;
        KernelOwner kernel;
    };
    std::map<std::string, Built> kernels_;
};

/// The code of the kernels fused into a scan or a product; absent ones are empty.
struct FusedCode {
    const FusedPrologue* prologue[2];
    const FusedEpilogue* epilogue;
};

/// The code of fused kernels (gemm_epilogue.hpp), made once per kernel (and, for an epilogue,
/// per shape) and kept, bounded like the kernel cache.
class FusedCodeCache {
public:
    FusedCode for_scan(const ir::Scan& s, const FusedKernels& fusion, const DeviceTraits& traits, std::size_t capacity) {
        return of(&s, nullptr, fusion, traits, capacity);
    }
    FusedCode for_gemm(const ir::Gemm& g, const FusedKernels& fusion, const DeviceTraits& traits, std::size_t capacity) {
        return of(nullptr, &g, fusion, traits, capacity);
    }
    void clear() {
        epilogues_.clear();
        prologues_.clear();
    }

private:
    FusedCode of(const ir::Scan* s, const ir::Gemm* g, const FusedKernels& fusion, const DeviceTraits& traits,
                 std::size_t capacity) {
        static const FusedPrologue no_prologue;
        static const FusedEpilogue no_epilogue;
        FusedCode code{{&no_prologue, &no_prologue}, &no_epilogue};
        // Emptied before any pointer below is taken (two prologues and an epilogue may be added).
        if (prologues_.size() + 2 > capacity) prologues_.clear();
        if (epilogues_.size() + 1 > capacity) epilogues_.clear();
        for (int o = 0; o < (s ? 1 : 2); ++o)
            if (const ir::Kernel* k = fusion.prologue[o])
                code.prologue[o] = s ? &get(concat("scan|", ir::key(*k)), [&] { return prologue_code(*k, "s", traits); })
                                     : &get(concat(o, '|', ir::key(*k)), [&] { return gemm_prologue_code(*k, o, traits); });
        if (const ir::Kernel* k = fusion.epilogue) {
            const int pp = fusion.product_param;
            code.epilogue = s ? &get(concat("scan|", ir::key(*k), '|', pp, '|', s->outer, ',', s->length, ',', s->inner),
                                     [&] { return scan_epilogue_code(*s, *k, pp, traits); })
                              : &get(concat(ir::key(*k), '|', pp, '|', g->batch_count(), ',', g->m, ',', g->n),
                                     [&] { return gemm_epilogue_code(*g, *k, pp, traits); });
        }
        return code;
    }

    /// The code under `key`, made by `make` the first time.
    template <class Make, class Code = std::decay_t<std::invoke_result_t<Make>>>
    const Code& get(const std::string& key, Make make) {
        std::unordered_map<std::string, Code>& cache = cache_of<Code>();
        auto it = cache.find(key);
        if (it == cache.end()) it = cache.emplace(key, make()).first;
        return it->second;
    }

    template <class Code>
    std::unordered_map<std::string, Code>& cache_of() {
        if constexpr (std::is_same_v<Code, FusedEpilogue>) return epilogues_;
        else return prologues_;
    }

    std::unordered_map<std::string, FusedEpilogue> epilogues_;  // by kernel and shape
    std::unordered_map<std::string, FusedPrologue> prologues_;  // by kernel and operand
};

}  // namespace lazytensor::detail::opencl
