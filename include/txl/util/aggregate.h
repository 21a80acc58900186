// The number of fields of an aggregate struct, found by brace-initialising it from ever more
// values of a type that converts to anything: the largest count that compiles. Lets a table
// of a struct's fields be checked against the struct, so a field added to one and not the
// other fails the build instead of being silently skipped.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace txl {

namespace aggregate_detail {

struct AnyValue {
  template <class T>
  operator T() const;  // never defined: used in unevaluated contexts only
};

template <class T, class Void, class... Args>
struct BraceConstructible : std::false_type {};
template <class T, class... Args>
struct BraceConstructible<T, std::void_t<decltype(T{std::declval<Args>()...})>, Args...>
    : std::true_type {};

}  // namespace aggregate_detail

template <class T, class... Args>
constexpr std::size_t aggregate_field_count() {
  static_assert(std::is_aggregate_v<T>, "aggregate_field_count needs an aggregate");
  using aggregate_detail::AnyValue;
  if constexpr (aggregate_detail::BraceConstructible<T, void, Args..., AnyValue>::value) {
    return aggregate_field_count<T, Args..., AnyValue>();
  } else {
    return sizeof...(Args);
  }
}

}  // namespace txl
