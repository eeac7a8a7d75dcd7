// SPDX-License-Identifier: MIT
// Expression templates. Combining tensors builds a typed expression: its C++ type is the tree,
// it holds its operands by value (tensor handles, scalars, sub-expressions) and allocates
// nothing. Shapes are checked as the expression is built, so a broadcast mistake throws at the
// line that makes it. Assigning the expression to a Tensor (or realizing it) turns it into
// graph nodes. Result types follow PyTorch's promotion, computed at compile time by the same
// constexpr rules the graph applies at run time.
#pragma once

#include <type_traits>
#include <utility>

#include "../ir/static_kernel.hpp"
#include "tensor.hpp"

namespace lazytensor::detail {

/// The compiled loop of expression type E, or null (frontend/static_kernel.hpp).
template <class E>
const StaticKernel* static_kernel_of();

/// Marks a node built from expression E with E's compiled loop. Only the node an expression
/// becomes as a whole gets one (its operands are built with build_node): a loop per
/// subexpression would compile O(depth^2) code that hardly ever runs.
template <class E>
NodePtr with_static_kernel(NodePtr n) {
    n->static_kernel = static_kernel_of<E>();
    return n;
}

template <class E, class = void>
struct has_build_node : std::false_type {};
template <class E>
struct has_build_node<E, std::void_t<decltype(std::declval<const E&>().build_node())>> : std::true_type {};

/// The graph node of an operand inside an expression: an expression's without its compiled loop.
template <class E>
NodePtr operand_node(const E& e) {
    if constexpr (has_build_node<E>::value) return e.build_node();
    else return e.build();
}

/// A C++ scalar operand.
template <class S>
struct ScalarLeaf {
    S value;
};

template <class E>
struct operand_traits {
    static constexpr bool scalar = false;
    static constexpr DType dtype = dtype_of<typename E::value_type>();
};
template <class S>
struct operand_traits<ScalarLeaf<S>> {
    static constexpr bool scalar = true;
    static constexpr DType dtype = scalar_dtype<S>();
};

template <class... Es>
constexpr DType promoted_dtype() {
    Promotion p;
    ((p = operand_traits<Es>::scalar ? p.with_scalar(operand_traits<Es>::dtype) : p.with_tensor(operand_traits<Es>::dtype)), ...);
    return p.result();
}

/// The dtype a unary function of `rule` gives for an element type V; an element type the rule
/// rejects is a static_assert. (Ops and composites alike: composites name their rule.)
template <TypeRule Rule, class V>
constexpr DType unary_rule_result() {
    static_assert(!(std::is_same_v<V, bool> && (Rule == TypeRule::Numeric || Rule == TypeRule::Floating)),
                  "lazytensor: this element-wise function is not defined for bool tensors; cast first, "
                  "e.g. lt::exp(lt::cast<float>(x))");
    static_assert(!(Rule == TypeRule::Bitwise && is_floating(dtype_of<V>())),
                  "lazytensor: bitwise not (~) needs an integer or bool tensor, not a floating-point one; for "
                  "x == 0 use !x (lt::logical_not), or cast first, e.g. ~lt::cast<int32_t>(x)");
    return result_dtype(Rule, compute_dtype(Rule, dtype_of<V>()));
}
template <UnaryOp Op, class V>
constexpr DType unary_result() {
    return unary_rule_result<type_rule(Op), V>();
}

/// The dtype a binary function of `rule` gives for operands L and R (wrapped: tensors,
/// expressions or ScalarLeaf); combinations the rule rejects are static_asserts.
template <TypeRule Rule, class L, class R>
constexpr DType binary_rule_result() {
    static_assert(!((Rule == TypeRule::Arith || Rule == TypeRule::Floating) && operand_traits<L>::dtype == DType::Bool &&
                    operand_traits<R>::dtype == DType::Bool),
                  "lazytensor: arithmetic on two bool operands is not defined; cast one to a numeric type "
                  "first, e.g. lt::cast<int32_t>(mask)");
    static_assert(!(Rule == TypeRule::Bitwise && is_floating(promoted_dtype<L, R>())),
                  "lazytensor: bitwise operations (&, |, ^) need integer or bool operands, not floating-point "
                  "ones; for logical and/or use && and || (lt::logical_and, lt::logical_or), or cast first, "
                  "e.g. lt::cast<int32_t>(x)");
    static_assert(!(Rule == TypeRule::Shift && !is_integral(promoted_dtype<L, R>())),
                  "lazytensor: shifts (<<, >>) need integer operands, not floating-point or bool ones; cast "
                  "first, e.g. lt::cast<int32_t>(x)");
    return result_dtype(Rule, compute_dtype(Rule, promoted_dtype<L, R>()));
}
template <BinaryOp Op, class L, class R>
constexpr DType binary_result() {
    return binary_rule_result<type_rule(Op), L, R>();
}

template <class E>
graph::Operand operand(const E& e) {
    if constexpr (operand_traits<E>::scalar) return graph::Operand(make_scalar(e.value));
    else return graph::Operand(operand_node(e));
}

template <class E>
void merge_operand(const E& e, std::optional<Shape>& shape, std::optional<Device>& device, const char* op) {
    if constexpr (!operand_traits<E>::scalar) {
        shape = shape ? broadcast_shapes(*shape, e.shape(), op) : e.shape();
        if (device && *device != e.device())
            fail<DeviceError>(op, ": operands are on different devices (", *device, " and ", e.device(),
                              "); move one with .to(device)");
        device = e.device();
    }
}

/// A scalar operand that the operation's dtype cannot hold fails where the expression is
/// written (graph::check_scalar_fits), not later where it is realized.
template <class E>
void check_scalar_operand(const E& e, DType computes_in, const char* op) {
    if constexpr (operand_traits<E>::scalar) graph::check_scalar_fits(make_scalar(e.value), computes_in, op);
}

/// f(a): element-wise unary function.
template <UnaryOp Op, class A>
class UnaryExpr : public TensorBase<dtype_type_t<unary_result<Op, typename A::value_type>()>, UnaryExpr<Op, A>> {
public:
    explicit UnaryExpr(A a) : a_(std::move(a)) {}
    const Shape& shape() const { return a_.shape(); }
    Device device() const { return a_.device(); }
    NodePtr build() const { return with_static_kernel<UnaryExpr>(build_node()); }
    NodePtr build_node() const { return graph::unary(Op, operand_node(a_)); }

private:
    A a_;
};

/// a op b: element-wise binary operation with broadcasting; either side may be a scalar.
template <BinaryOp Op, class L, class R>
class BinaryExpr : public TensorBase<dtype_type_t<binary_result<Op, L, R>()>, BinaryExpr<Op, L, R>> {
public:
    BinaryExpr(L l, R r) : l_(std::move(l)), r_(std::move(r)) {
        std::optional<Shape> shape;
        std::optional<Device> device;
        merge_operand(l_, shape, device, op_name(Op));
        merge_operand(r_, shape, device, op_name(Op));
        constexpr DType computes_in = compute_dtype(type_rule(Op), promoted_dtype<L, R>());
        check_scalar_operand(l_, computes_in, op_name(Op));
        check_scalar_operand(r_, computes_in, op_name(Op));
        shape_ = std::move(*shape);
        device_ = *device;
    }
    const Shape& shape() const { return shape_; }
    Device device() const { return device_; }
    NodePtr build() const { return with_static_kernel<BinaryExpr>(build_node()); }
    NodePtr build_node() const { return graph::binary(Op, operand(l_), operand(r_)); }

private:
    L l_;
    R r_;
    Shape shape_;
    Device device_;
};

/// where(cond, x, y): x where cond is true, else y; x and y may be scalars.
template <class C, class X, class Y>
class WhereExpr : public TensorBase<dtype_type_t<promoted_dtype<X, Y>()>, WhereExpr<C, X, Y>> {
public:
    WhereExpr(C c, X x, Y y) : c_(std::move(c)), x_(std::move(x)), y_(std::move(y)) {
        std::optional<Shape> shape;
        std::optional<Device> device;
        merge_operand(c_, shape, device, "where");
        merge_operand(x_, shape, device, "where");
        merge_operand(y_, shape, device, "where");
        check_scalar_operand(x_, promoted_dtype<X, Y>(), "where");
        check_scalar_operand(y_, promoted_dtype<X, Y>(), "where");
        shape_ = std::move(*shape);
        device_ = *device;
    }
    const Shape& shape() const { return shape_; }
    Device device() const { return device_; }
    NodePtr build() const { return with_static_kernel<WhereExpr>(build_node()); }
    NodePtr build_node() const { return graph::where(operand(c_), operand(x_), operand(y_)); }

private:
    C c_;
    X x_;
    Y y_;
    Shape shape_;
    Device device_;
};

/// cast<U>(a): element-wise conversion.
template <class U, class A>
class CastExpr : public TensorBase<U, CastExpr<U, A>> {
public:
    explicit CastExpr(A a) : a_(std::move(a)) {}
    const Shape& shape() const { return a_.shape(); }
    Device device() const { return a_.device(); }
    NodePtr build() const { return graph::cast(operand_node(a_), dtype_of<U>()); }

private:
    A a_;
};

/// Wraps an operand for storage in an expression: tensors and expressions by value, C++
/// scalars as ScalarLeaf.
template <class E>
auto wrap(E&& e) {
    if constexpr (is_scalar_v<E>) return ScalarLeaf<std::decay_t<E>>{e};
    else return std::decay_t<E>(std::forward<E>(e));
}

template <class E>
using wrapped_t = decltype(wrap(std::declval<E>()));

template <class L, class R>
inline constexpr bool is_binary_operands_v =
    (is_tensor_like_v<L> && (is_tensor_like_v<R> || is_scalar_v<R>)) || (is_scalar_v<L> && is_tensor_like_v<R>);

template <BinaryOp Op, class L, class R>
auto make_binary(L&& l, R&& r) {
    return BinaryExpr<Op, wrapped_t<L>, wrapped_t<R>>(wrap(std::forward<L>(l)), wrap(std::forward<R>(r)));
}

template <UnaryOp Op, class A>
auto make_unary(A&& a) {
    return UnaryExpr<Op, std::decay_t<A>>(std::forward<A>(a));
}

}  // namespace lazytensor::detail

namespace lazytensor {

template <class T, class D>
template <class U>
auto TensorBase<T, D>::cast() const {
    static_assert(detail::dtype_traits<U>::supported,
                  "lazytensor: cast<U> needs U = bool, int8_t to int64_t, uint8_t to uint64_t, lazytensor::half, "
                  "lazytensor::bfloat16, float or double");
    return detail::CastExpr<U, D>(self());
}

}  // namespace lazytensor

// The compiled loops that static_kernel_of<E> (declared above) makes.
#include "static_kernel.hpp"
