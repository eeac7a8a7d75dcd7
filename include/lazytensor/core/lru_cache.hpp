// SPDX-License-Identifier: MIT
// A thread-safe map from string keys to shared values that keeps the most recently used
// entries: the kernel caches of the backends and the plan cache share it.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace lazytensor::detail {

template <class V>
class LruCache {
public:
    explicit LruCache(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

    /// The value for `key`, marked as most recently used; null when absent.
    std::shared_ptr<V> find(const std::string& key) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it == map_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second.age);
        return it->second.value;
    }

    /// Inserts `value` unless `key` is present; returns the value that ends up in the cache
    /// and whether it is `value`. Evicts the least recently used entries beyond capacity.
    std::pair<std::shared_ptr<V>, bool> insert(std::string key, std::shared_ptr<V> value) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto [it, inserted] = map_.emplace(std::move(key), Entry{std::move(value), {}});
        if (!inserted) return {it->second.value, false};
        order_.push_front(&it->first);
        it->second.age = order_.begin();
        std::shared_ptr<V> result = it->second.value;
        trim();
        return {std::move(result), true};
    }

    std::size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return map_.size();
    }
    std::size_t capacity() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return capacity_;
    }
    void clear() {
        std::lock_guard<std::mutex> lock(mutex_);
        map_.clear();
        order_.clear();
    }
    void set_capacity(std::size_t capacity) {
        std::lock_guard<std::mutex> lock(mutex_);
        capacity_ = capacity < 1 ? 1 : capacity;
        trim();
    }

private:
    struct Entry {
        std::shared_ptr<V> value;
        typename std::list<const std::string*>::iterator age;
    };

    void trim() {
        while (map_.size() > capacity_) {
            map_.erase(*order_.back());
            order_.pop_back();
        }
    }

    mutable std::mutex mutex_;
    std::unordered_map<std::string, Entry> map_;
    std::list<const std::string*> order_;  // keys, most recently used first
    std::size_t capacity_;
};

}  // namespace lazytensor::detail
