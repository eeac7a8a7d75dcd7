// SPDX-License-Identifier: MIT
// A vector of trivially copyable values with inline storage: shapes, strides and axis lists
// are short, and building them must not touch the heap on the hot path of realize().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace lazytensor::detail {

template <class T, std::size_t N>
class SmallVector {
    static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values only");

public:
    using value_type = T;
    using iterator = T*;
    using const_iterator = const T*;

    SmallVector() noexcept = default;
    SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.size()); }
    explicit SmallVector(std::size_t count, T value = T{}) {
        reserve(count);
        std::fill_n(data_, count, value);
        size_ = count;
    }
    template <class It, class = decltype(*std::declval<It>())>
    SmallVector(It first, It last) {
        reserve(static_cast<std::size_t>(std::distance(first, last)));
        for (; first != last; ++first) data_[size_++] = static_cast<T>(*first);
    }
    SmallVector(const SmallVector& other) { assign(other.data_, other.size_); }
    SmallVector(SmallVector&& other) noexcept { steal(other); }
    SmallVector& operator=(const SmallVector& other) {
        if (this != &other) {
            size_ = 0;
            assign(other.data_, other.size_);
        }
        return *this;
    }
    SmallVector& operator=(SmallVector&& other) noexcept {
        if (this != &other) {
            release();
            steal(other);
        }
        return *this;
    }
    ~SmallVector() { release(); }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    T& operator[](std::size_t i) noexcept { return data_[i]; }
    const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    T& back() noexcept { return data_[size_ - 1]; }
    const T& back() const noexcept { return data_[size_ - 1]; }
    iterator begin() noexcept { return data_; }
    iterator end() noexcept { return data_ + size_; }
    const_iterator begin() const noexcept { return data_; }
    const_iterator end() const noexcept { return data_ + size_; }

    void push_back(T value) {
        if (size_ == capacity_) reserve(capacity_ * 2);
        data_[size_++] = value;
    }
    void pop_back() noexcept { --size_; }
    void clear() noexcept { size_ = 0; }
    void resize(std::size_t count, T value = T{}) {
        reserve(count);
        if (count > size_) std::fill(data_ + size_, data_ + count, value);
        size_ = count;
    }
    void insert(std::size_t pos, T value) {
        push_back(value);
        std::rotate(data_ + pos, data_ + size_ - 1, data_ + size_);
    }
    void erase(std::size_t pos) noexcept {
        std::copy(data_ + pos + 1, data_ + size_, data_ + pos);
        --size_;
    }
    void reserve(std::size_t count) {
        if (count <= capacity_) return;
        T* fresh = static_cast<T*>(std::malloc(count * sizeof(T)));
        if (!fresh) throw std::bad_alloc();
        if (size_) std::memcpy(fresh, data_, size_ * sizeof(T));
        release_heap();
        data_ = fresh;
        capacity_ = count;
    }

    friend bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
        return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
    }
    friend bool operator!=(const SmallVector& a, const SmallVector& b) noexcept { return !(a == b); }

private:
    void assign(const T* values, std::size_t count) {
        reserve(count);
        if (count) std::memcpy(data_, values, count * sizeof(T));
        size_ = count;
    }
    void steal(SmallVector& other) noexcept {
        if (other.data_ == other.inline_) {
            data_ = inline_;
            capacity_ = N;
            if (other.size_) std::memcpy(inline_, other.inline_, other.size_ * sizeof(T));
        } else {
            data_ = other.data_;
            capacity_ = other.capacity_;
            other.data_ = other.inline_;
            other.capacity_ = N;
        }
        size_ = other.size_;
        other.size_ = 0;
    }
    void release_heap() noexcept {
        if (data_ != inline_) std::free(data_);
    }
    void release() noexcept {
        release_heap();
        data_ = inline_;
        capacity_ = N;
        size_ = 0;
    }

    T inline_[N];
    T* data_ = inline_;
    std::size_t size_ = 0;
    std::size_t capacity_ = N;
};

}  // namespace lazytensor::detail
