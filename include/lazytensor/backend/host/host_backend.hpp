// The host backend: buffers in host memory (64-byte aligned), kernels run by the interpreter on
// a thread pool of LAZYTENSOR_THREADS threads (default: all cores).
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <xsimd/xsimd.hpp>

#include "../backend.hpp"
#include "interpreter.hpp"

namespace lazytensor::detail::host {

class HostBackend final : public Backend {
public:
    explicit HostBackend(int threads) : pool_(threads) {}

    Device device() const override { return Device::host(); }
    std::string name() const override {
        return concat("host (", pool_.size(), " thread", pool_.size() == 1 ? "" : "s", ", ",
                      xsimd::default_arch::name(), ")");
    }
    int threads() const { return pool_.size(); }

    BufferPtr allocate(DType dtype, std::int64_t numel) override {
        const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(dtype);
        void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64));
        if (!p)
            fail<BackendError>("host: out of memory allocating ", numel, " elements of ", dtype, " (", bytes,
                               " bytes)");
        return std::make_shared<Buffer>(device(), dtype, numel, p, this);
    }
    void release(void* handle, std::size_t) noexcept override { std::free(handle); }

    void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) override {
        if (bytes) std::memcpy(static_cast<char*>(dst.handle()) + at, src, bytes);
    }
    void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) override {
        if (bytes) std::memcpy(dst, static_cast<const char*>(src.handle()) + at, bytes);
    }

    void launch(CompiledKernel& kernel, const std::vector<Buffer*>& params) override {
        static_cast<HostKernel&>(kernel).run(params, pool_);
    }
    void synchronize() override {}

protected:
    std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel) override {
        return std::make_shared<HostKernel>(kernel, pool_.size());
    }

private:
    ThreadPool pool_;
};

}  // namespace lazytensor::detail::host
