// SPDX-License-Identifier: MIT
// Affine index maps: how a kernel's iteration index reaches an element of a node through views.
//
// A kernel iterates over a domain (an index d with extents D). Each node it touches is read at
// index i = offset + M d (one row of M per node dimension). Permute and expand act on rows;
// reshape goes through the row-major linear index and stays affine as long as no domain index
// carries across a boundary of the new shape (the same test as PyTorch's view-vs-copy rule).
// At a buffer, the map turns into a strided access: element = offset + sum_j stride_j * d_j.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "../core/shape.hpp"
#include "node.hpp"

namespace lazytensor::detail {

/// A strided access over a kernel domain: element index = offset + sum_j strides[j] * d_j.
struct Access {
    std::int64_t offset = 0;
    Strides strides;

    friend bool operator==(const Access& a, const Access& b) { return a.offset == b.offset && a.strides == b.strides; }
    friend bool operator!=(const Access& a, const Access& b) { return !(a == b); }
};

/// The outcome of following a reshape: done, impossible, or possible once the kernel's domain
/// axis `axis` is split into (extent / factor, factor).
struct ReshapeResult {
    enum class Kind { Ok, Fail, Split } kind = Kind::Ok;
    std::size_t axis = 0;
    std::int64_t factor = 1;
    explicit operator bool() const { return kind == Kind::Ok; }
};

class IndexMap {
public:
    /// The identity map over `shape` (a node read at its own index).
    static IndexMap identity(const Shape& shape) {
        IndexMap m;
        m.domain_ = shape;
        m.target_ = shape;
        m.offset_.resize(shape.size(), 0);
        m.coef_.resize(shape.size() * shape.size(), 0);
        for (std::size_t k = 0; k < shape.size(); ++k) m.coef_[k * shape.size() + k] = 1;
        m.canonicalize();
        return m;
    }

    /// The map from a domain onto its reduced (keepdim) shape: reduced axes read index 0.
    static IndexMap projection(const Shape& domain, const Axes& reduced) {
        IndexMap m = identity(domain);
        for (int a : reduced) m.target_[static_cast<std::size_t>(a)] = 1;
        m.canonicalize();
        return m;
    }

    const Shape& domain() const { return domain_; }
    const Shape& target() const { return target_; }

    /// Moves the map from a view node's index to its source's index. A reshape may instead
    /// report that it needs a finer domain, or that it cannot be followed (the map is unchanged).
    ReshapeResult through_view(const Node& view) {
        const Shape& src = view.src[0]->shape;
        switch (view.kind) {
            case NodeKind::Permute: {
                IndexMap out = zero(domain_, src);
                for (std::size_t k = 0; k < view.axes.size(); ++k) {
                    const auto to = static_cast<std::size_t>(view.axes[k]);
                    out.offset_[to] = offset_[k];
                    for (std::size_t j = 0; j < n(); ++j) out.at(to, j) = at(k, j);
                }
                *this = std::move(out);
                break;
            }
            case NodeKind::Expand: {
                target_ = src;  // broadcast dimensions have extent 1 in the source: canonicalize zeroes them
                break;
            }
            case NodeKind::Reshape: {
                ReshapeResult r = reshape_to(src);
                if (!r) return r;
                break;
            }
            case NodeKind::Slice: window(view.params, src); break;
            case NodeKind::Unfold: {  // params: (axis, size, step, dilation) per axis; window axes last
                IndexMap out = zero(domain_, src);
                for (std::size_t k = 0; k < src.size(); ++k) {
                    out.offset_[k] = offset_[k];
                    for (std::size_t j = 0; j < n(); ++j) out.at(k, j) = at(k, j);
                }
                for (std::size_t g = 0, window = src.size(); g + 3 < view.params.size(); g += 4, ++window) {
                    const auto axis = static_cast<std::size_t>(view.params[g]);
                    const std::int64_t step = view.params[g + 2], dilation = view.params[g + 3];
                    out.offset_[axis] = step * offset_[axis] + dilation * offset_[window];
                    for (std::size_t j = 0; j < n(); ++j) out.at(axis, j) = step * at(axis, j) + dilation * at(window, j);
                }
                *this = std::move(out);
                break;
            }
            default: return ReshapeResult{ReshapeResult::Kind::Fail};
        }
        canonicalize();
        return {};
    }

    /// Moves the map to a source of shape `src` that this map's target is a window of: target
    /// index i_k reads source index starts_steps[2k] + starts_steps[2k+1] * i_k. Pads use it
    /// with step 1 and a negative start (the reads that fall outside are gated).
    template <class List>
    void window(const List& starts_steps, const Shape& src) {
        for (std::size_t k = 0; k < m(); ++k) {
            const std::int64_t start = starts_steps[2 * k], step = starts_steps[2 * k + 1];
            offset_[k] = start + step * offset_[k];
            for (std::size_t j = 0; j < n(); ++j) at(k, j) *= step;
        }
        target_ = src;
        canonicalize();
    }

    /// The map onto `target` (same rank; every other row's indices fit it) over this domain
    /// plus one new last axis of `extent`, with row k reading the new axis alone. A gather:
    /// the new axis's stride in the access is the step of the data-dependent index.
    IndexMap with_axis_for_row(std::size_t k, std::int64_t extent, const Shape& target) const {
        Shape domain = domain_;
        domain.push_back(extent);
        IndexMap out = zero(domain, target);
        for (std::size_t r = 0; r < m(); ++r) {
            if (r == k) {
                out.at(r, n()) = 1;
                continue;
            }
            out.offset_[r] = offset_[r];
            for (std::size_t j = 0; j < n(); ++j) out.at(r, j) = at(r, j);
        }
        out.canonicalize();
        return out;
    }

    /// Reads the target through a reshape to `shape` (same element count).
    ReshapeResult reshape(const Shape& shape) {
        ReshapeResult r = reshape_to(shape);
        if (r) canonicalize();
        return r;
    }

    /// The same map over a domain whose axis j is split into (extent / factor, factor).
    IndexMap split_domain(std::size_t j, std::int64_t factor) const {
        Shape domain;
        for (std::size_t k = 0; k < n(); ++k) {
            if (k == j) {
                domain.push_back(domain_[k] / factor);
                domain.push_back(factor);
            } else {
                domain.push_back(domain_[k]);
            }
        }
        IndexMap out = zero(domain, target_);
        for (std::size_t k = 0; k < m(); ++k) {
            out.offset_[k] = offset_[k];
            for (std::size_t i = 0, o = 0; i < n(); ++i, ++o) {
                out.at(k, o) = at(k, i) * (i == j ? factor : 1);
                if (i == j) out.at(k, ++o) = at(k, i);
            }
        }
        out.canonicalize();
        return out;
    }

    /// The strided access this map gives into a node laid out with (offset, strides).
    Access access(std::int64_t base_offset, const Strides& strides) const {
        Access a;
        a.offset = base_offset;
        a.strides.resize(n(), 0);
        for (std::size_t k = 0; k < m(); ++k) {
            a.offset += strides[k] * offset_[k];
            for (std::size_t j = 0; j < n(); ++j) a.strides[j] += strides[k] * at(k, j);
        }
        return a;
    }

    friend bool operator==(const IndexMap& a, const IndexMap& b) {
        return a.domain_ == b.domain_ && a.target_ == b.target_ && a.offset_ == b.offset_ && a.coef_ == b.coef_;
    }
    friend bool operator!=(const IndexMap& a, const IndexMap& b) { return !(a == b); }

private:
    std::size_t n() const { return domain_.size(); }
    std::size_t m() const { return target_.size(); }
    std::int64_t& at(std::size_t k, std::size_t j) { return coef_[k * n() + j]; }
    std::int64_t at(std::size_t k, std::size_t j) const { return coef_[k * n() + j]; }

    static IndexMap zero(const Shape& domain, const Shape& target) {
        IndexMap m;
        m.domain_ = domain;
        m.target_ = target;
        m.offset_.resize(target.size(), 0);
        m.coef_.resize(target.size() * domain.size(), 0);
        return m;
    }

    // Extent-1 dimensions carry no information: zero them so that equal maps compare equal.
    void canonicalize() {
        for (std::size_t k = 0; k < m(); ++k)
            if (target_[k] == 1) {
                offset_[k] = 0;
                for (std::size_t j = 0; j < n(); ++j) at(k, j) = 0;
            }
        for (std::size_t j = 0; j < n(); ++j)
            if (domain_[j] == 1)
                for (std::size_t k = 0; k < m(); ++k) at(k, j) = 0;
    }

    ReshapeResult reshape_to(const Shape& src) {
        using Kind = ReshapeResult::Kind;
        if (numel(src) == 0) {  // an empty tensor: nothing is ever read
            *this = zero(domain_, src);
            return {};
        }
        // A reshape that only adds or drops axes of extent 1 maps axis to axis: offsets and
        // terms carry over as they are, also where a gated read's offset lies outside its axis
        // (a fold's placed windows), which the linear split below must refuse.
        {
            SmallVector<std::size_t, 6> from, to;
            for (std::size_t k = 0; k < m(); ++k)
                if (target_[k] != 1) from.push_back(k);
            for (std::size_t k = 0; k < src.size(); ++k)
                if (src[k] != 1) to.push_back(k);
            bool same = from.size() == to.size();
            for (std::size_t i = 0; same && i < from.size(); ++i) same = target_[from[i]] == src[to[i]];
            if (same) {
                IndexMap out = zero(domain_, src);
                for (std::size_t i = 0; i < from.size(); ++i) {
                    out.offset_[to[i]] = offset_[from[i]];
                    for (std::size_t j = 0; j < n(); ++j) out.at(to[i], j) = at(from[i], j);
                }
                *this = std::move(out);
                return {};
            }
        }
        // Linear (row-major) index into the current target, as an affine function of d.
        const Strides cur = contiguous_strides(target_);
        std::int64_t linear0 = 0;
        SmallVector<std::int64_t, 6> linear(n(), 0);
        for (std::size_t k = 0; k < m(); ++k) {
            linear0 += cur[k] * offset_[k];
            for (std::size_t j = 0; j < n(); ++j) linear[j] += cur[k] * at(k, j);
        }
        // Split it into digits of the source shape; each domain term must stay in one digit.
        const Strides next = contiguous_strides(src);
        IndexMap out = zero(domain_, src);
        SmallVector<std::int64_t, 6> lo(src.size(), 0), hi(src.size(), 0);
        for (std::size_t k = 0; k < src.size(); ++k) {
            out.offset_[k] = src[k] == 0 ? 0 : (linear0 / next[k]) % src[k];
            lo[k] = hi[k] = out.offset_[k];
        }
        ReshapeResult split{Kind::Fail};
        for (std::size_t j = 0; j < n(); ++j) {
            if (domain_[j] <= 1 || linear[j] == 0) continue;
            const std::int64_t mag = std::llabs(linear[j]);
            std::size_t digit = src.size();
            for (std::size_t k = 0; k < src.size(); ++k)
                if (src[k] > 1 && next[k] <= mag && mag < next[k] * src[k]) digit = k;
            if (digit == src.size() || mag % next[digit] != 0) return ReshapeResult{Kind::Fail};
            const std::int64_t step = linear[j] / next[digit];
            out.at(digit, j) = step;
            (step > 0 ? hi : lo)[digit] += step * (domain_[j] - 1);
            // A term that alone runs past its digit carries into the next one: splitting the
            // domain axis at the digit's boundary makes both halves affine.
            const std::int64_t factor = step > 0 ? src[digit] / step : 0;
            if (step > 0 && step * (domain_[j] - 1) >= src[digit] && src[digit] % step == 0 && factor > 1 &&
                domain_[j] % factor == 0 && split.kind == Kind::Fail)
                split = ReshapeResult{Kind::Split, j, factor};
        }
        for (std::size_t k = 0; k < src.size(); ++k)
            if (lo[k] < 0 || hi[k] >= std::max<std::int64_t>(src[k], 1)) return split;
        *this = std::move(out);
        return {};
    }

    Shape domain_;
    Shape target_;
    SmallVector<std::int64_t, 6> offset_;
    SmallVector<std::int64_t, 36> coef_;
};

}  // namespace lazytensor::detail
