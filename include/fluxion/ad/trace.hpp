// Tracing: the primitives a function applies, recorded as a graph without running any kernel.
//
//   auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sum(fx::tanh(x * w)); };
//   fx::Tensor x = fx::randn({3}), w = fx::randn({3});
//   fx::Graph g = fx::trace(f, x, w);   // runs f on meta tensors: shapes and dtypes only
//   std::cout << g;                     // one line per equation, like a jaxpr
//   fx::Tensor y = g(x, w)[0];          // executes the graph: equals f(x, w)
//
//   // Gradients inside the traced function are traced too (their backward pass included):
//   fx::Graph dg = fx::trace([](const fx::Tensor& w) {
//     return fx::gradient([](const fx::Tensor& v) { return fx::sum(v * v); }, w); }, w);
//
// While tracing, values computed from the arguments have no data: `item()` on one (an `if` on a
// traced value) is an fx::Error that says to use fx::cond or fx::scan (fluxion/ad/control.hpp).
// Tensors the function captures, or makes from C++ data, become constants of the graph; random
// numbers drawn inside it are therefore fixed at trace time. Executing a graph applies its
// primitives through bind, so `g(...)` is itself differentiable.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fluxion/core/fields.hpp"
#include "fluxion/ops/device.hpp"
#include "fluxion/ops/primitive.hpp"

namespace fx {

class Graph {
 public:
  struct Value {  // a typed value: an argument, a constant or an equation's result
    Shape shape;
    DType dtype;
  };
  struct Constant {
    int value;
    Tensor data;      // captured data, or undefined for a fill
    double fill = 0;  // full(shape, fill) when data is undefined
  };
  struct Equation {
    const Primitive* prim;
    std::vector<int> inputs;  // value ids; -1 for an undefined (optional) input
    AttrStore attrs;          // printed as {name=value ...}
    int output;  // the first result; a primitive with several has output .. + num_outputs
  };

  std::vector<Value> values;
  std::vector<int> inputs;  // in the order of the arguments' tensor leaves
  std::vector<Constant> constants;
  std::vector<Equation> equations;
  std::vector<int> outputs;  // in the order of the result's tensor leaves
  // Run-time rules (fx::custom_rule, fx::checkpointed) that equations point into, kept alive
  // with the graph.
  std::vector<std::shared_ptr<const void>> owners;

  // Runs the graph on new arguments with the traced shapes and dtypes (fx::Error otherwise):
  // the tensor leaves of `args`, in order, replace the traced arguments.
  template <class... Args>
  std::vector<Tensor> operator()(const Args&... args) const {
    std::vector<Tensor> flat;
    (zip_tensors([&](const Tensor& t) { flat.push_back(t); }, args), ...);
    return run(flat);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& args) const;
  std::string to_string() const;
};
std::ostream& operator<<(std::ostream& os, const Graph& g);

namespace detail {
// Keeps `owner` alive with the graph of the trace in progress on this thread, if any: a run-time
// rule's Primitive lives in it and the graph's equation points there.
void keep_alive_in_trace(const std::shared_ptr<const void>& owner);

// One trace in progress on this thread (nested traces are an fx::Error).
class TraceScope {
 public:
  TraceScope();
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  // A meta copy of x (any struct of tensors) whose tensor leaves become the graph's inputs.
  template <class T>
  T input(const T& x) {
    T m = to_meta(x);
    zip_tensors([&](const Tensor& t) { add_input(t); }, m);
    return m;
  }
  template <class R>
  void output(const R& r) {
    zip_tensors([&](const Tensor& t) { add_output(t); }, r);
  }
  Graph finish();

 private:
  template <class T>
  static T to_meta(const T& x) {
    return to(x, Device::meta);
  }
  void add_input(const Tensor& t);
  void add_output(const Tensor& t);
  std::unique_ptr<Graph> graph_;
};
}  // namespace detail

// Traces f on meta copies of args (tensors or structs of tensors) into a Graph.
template <class F, class... Args>
Graph trace(F&& f, const Args&... args) {
  detail::TraceScope scope;
  std::tuple<Args...> meta{scope.input(args)...};  // braces: inputs numbered left to right
  scope.output(std::apply(f, meta));
  return scope.finish();
}

}  // namespace fx
