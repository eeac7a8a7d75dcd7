// SPDX-License-Identifier: MIT
// Buffers whose memory is known outside lazytensor: wrapped user memory (lt::from_blob, DLPack)
// and buffers whose address was handed out (data(), to_dlpack). Another buffer may wrap the same
// memory, so an assign into one first computes the lazy readers of every buffer sharing it
// (runtime/engine.hpp's assign_into), as it does for the readers of its own buffer.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "../core/device.hpp"

namespace lazytensor::detail {

class ExposedBuffers {
public:
    /// Marks `buffer` exposed (if it is not yet) and records it.
    void add(const BufferPtr& buffer) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (buffer->exposed()) return;  // recorded when it was first exposed
        buffer->mark_exposed();
        if (buffers_.size() >= 2 * pruned_size_ + 16) {  // drop the dead ones now and then: amortized O(1)
            prune();
        }
        buffers_.push_back(buffer);
    }

    /// The live recorded buffers other than `buffer` that share memory with it.
    std::vector<BufferPtr> sharing(const Buffer& buffer) {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<BufferPtr> out;
        for (const auto& w : buffers_)
            if (BufferPtr b = w.lock(); b && b.get() != &buffer && shares_memory(*b, buffer)) out.push_back(std::move(b));
        prune();
        return out;
    }

private:
    void prune() {
        buffers_.erase(std::remove_if(buffers_.begin(), buffers_.end(), [](const auto& w) { return w.expired(); }),
                       buffers_.end());
        pruned_size_ = buffers_.size();
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<Buffer>> buffers_;
    std::size_t pruned_size_ = 0;
};

/// The process's record of exposed buffers (never destroyed: buffers of static tensors may be
/// released after any destruction order).
inline ExposedBuffers& exposed_buffers() {
    static ExposedBuffers* buffers = new ExposedBuffers();
    return *buffers;
}

}  // namespace lazytensor::detail
