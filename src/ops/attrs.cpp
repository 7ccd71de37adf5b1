// Printing, comparing, hashing and owning typed attributes (fluxion/ops/attrs.hpp).
#include "fluxion/ops/attrs.hpp"

#include <ostream>

namespace fx {
namespace detail {

void print_attr_field(std::ostream& os, int64_t v) { os << v; }
void print_attr_field(std::ostream& os, double v) { os << v; }
void print_attr_field(std::ostream& os, const Shape& v) { os << v; }
void print_attr_field(std::ostream& os, DType v) { os << dtype_name(v); }
void print_attr_field(std::ostream& os, IntList v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
}

// The index-th name of "a, b, c" (as FX_ATTRS stringises its arguments), then '='.
void print_attr_names(std::ostream& os, std::string_view names, int index) {
  for (int k = 0; k < index; ++k) {
    const size_t comma = names.find(',');
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  names = names.substr(0, names.find(','));
  while (!names.empty() && names.front() == ' ') names.remove_prefix(1);
  while (!names.empty() && names.back() == ' ') names.remove_suffix(1);
  os << (index ? " " : "") << names << "=";
}

void wrong_attrs(const AttrType* have, const AttrType& want) {
  fail("fx: a primitive's rule read its attributes as ", want.name, " but the application carries ",
       have ? have->name : "none");
}

}  // namespace detail

std::ostream& operator<<(std::ostream& os, Attrs a) {
  if (a.type()) a.type()->print(os, a.data());
  return os;
}

bool operator==(Attrs a, Attrs b) {
  if (a.type() != b.type()) return false;
  return !a.type() || a.type()->equal(a.data(), b.data());
}

uint64_t hash(Attrs a) {
  return a.type() ? detail::mix(uint64_t(a.type()->size), a.type()->hash(a.data())) : 0;
}

void AttrStore::assign(Attrs a) {
  type_ = a.type();
  list_.clear();
  if (!type_) {
    words_.clear();
    return;
  }
  words_.assign((type_->size + 7) / 8, 0);
  std::memcpy(words_.data(), a.data(), type_->size);
  if (IntList* l = type_->list(words_.data())) {
    list_.assign(l->begin(), l->end());
    *l = IntList(std::span<const int64_t>(list_));
  }
}

}  // namespace fx
