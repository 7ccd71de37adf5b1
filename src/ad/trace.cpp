// The tracing interpreter: bind under fx::trace records equations on meta tensors; a Graph runs
// them again through bind on real tensors.
#include "fluxion/ad/trace.hpp"

#include <ostream>
#include <sstream>
#include <unordered_map>

#include "fluxion/ops/create.hpp"

namespace fx {
namespace detail {
namespace {

void bind_traced(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out,
                 int nout);

// The trace evaluates on the meta device instead of passing applications down: only tapes may
// sit under it (a differentiation around the traced function), and they record what it makes.
struct TraceState final : Interpreter {
  TraceState(Graph* g) : graph(g) {}
  Tensor process(const Primitive& p, std::span<const Tensor> in, Attrs attrs) override {
    Tensor out;
    bind_traced(p, in, attrs, &out, 1);
    return out;
  }
  void process_n(const Primitive& p, std::span<const Tensor> in, Attrs attrs,
                 Tensor* out) override {
    bind_traced(p, in, attrs, out, p.num_outputs);
  }
  Graph* graph;
  std::unordered_map<const TensorImpl*, int> ids;
  // The meta stand-in of each captured tensor: one graph constant however often it is used, and
  // the same value when a tape above the trace hands the captured tensor to a pullback.
  std::unordered_map<const TensorImpl*, Tensor> standins;
  // Every meta tensor the trace has named stays alive until it ends, so its TensorImpl cannot be
  // reused by a later, unrelated tensor that would then be mistaken for it.
  std::vector<Tensor> keep;
};
thread_local TraceState* current = nullptr;

int new_value(TraceState& s, const Tensor& t) {
  const int id = int(s.graph->values.size());
  s.graph->values.push_back({t.shape(), t.dtype()});
  s.ids[t.impl()] = id;
  s.keep.push_back(t);
  return id;
}

// The id of x in the graph; a tensor the trace has not seen becomes a constant, and the meta
// stand-in that replaces it in the traced forward is written to `standin`.
int value_of(TraceState& s, const Tensor& x, Tensor& standin) {
  standin = x;
  if (auto it = s.ids.find(x.impl()); it != s.ids.end()) return it->second;
  if (auto it = s.standins.find(x.impl()); it != s.standins.end()) {
    standin = it->second;
    return s.ids.at(standin.impl());
  }
  if (!x.device().has_data())
    fail("fx::trace: a ", dtype_name(x.dtype()), " ", x.shape(), " ", device_name(x.device()),
         " tensor with no known value reached an op (made by fx::empty inside the traced "
         "function?)");
  standin = Tensor::empty(x.shape(), x.dtype(), Device::meta);
  // A constant a tape tracks (a captured model differentiated inside the traced function) keeps
  // its identity for that tape: the stand-in carries the same tags and storage version.
  TensorImpl* p = standin.impl();
  p->ntags = x.impl()->ntags;
  for (int k = 0; k < p->ntags; ++k) p->tags[k] = x.impl()->tags[k];
  p->storage->version = x.storage()->version;
  const int id = new_value(s, standin);
  s.standins.emplace(x.impl(), standin);
  s.keep.push_back(x);  // its TensorImpl is not reused while the trace lives
  // A copy of the data as it is now (a later in-place write must not change the graph), made
  // with tracing paused: the copy is not part of the traced computation.
  Tensor data;
  {
    const PauseInterpreters paused;
    data = x.clone();
  }
  s.graph->constants.push_back({id, std::move(data), 0});
  return id;
}

// bind under fx::trace: inputs not yet traced become constants of the graph, the forward runs on
// the meta device (shapes only), the application becomes an equation (its nout outputs are
// consecutive values), and the tapes under the trace record it (those above record it anyway).
void bind_traced(const Primitive& p, std::span<const Tensor> in, Attrs attrs, Tensor* out,
                 int nout) {
  TraceState& s = *current;
  Graph::Equation eq{&p, {}, AttrStore(attrs), -1};
  std::vector<Tensor> standins(in.size());
  eq.inputs.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    eq.inputs.push_back(in[i].defined() ? value_of(s, in[i], standins[i]) : -1);
  const std::span<const Tensor> args(standins);
  if (nout == 1) out[0] = p.forward(p, args, attrs);
  else p.forward_n(p, args, attrs, out);
  for (int k = 0; k < nout; ++k) {
    FX_CHECK(!out[k].device().has_data(), "fx::trace: primitive '", p.name,
             "' made a tensor with data from traced inputs");
    const int id = new_value(s, out[k]);
    if (k == 0) eq.output = id;
  }
  s.graph->equations.push_back(std::move(eq));
  record_below(&s, p, args, out, nout, attrs);
}

}  // namespace

void keep_alive_in_trace(const std::shared_ptr<const void>& owner) {
  if (!current) return;
  auto& owners = current->graph->owners;
  if (owners.empty() || owners.back() != owner) owners.push_back(owner);
}

void trace_fill(const Tensor& t, double value) {
  if (!current) return;
  const int id = new_value(*current, t);
  current->graph->constants.push_back({id, Tensor(), value});
}

void trace_alias(const Tensor& of, const Tensor& alias) {
  if (!current) return;
  auto it = current->ids.find(of.impl());
  if (it == current->ids.end()) return;  // a constant: the alias becomes one when used
  current->ids[alias.impl()] = it->second;
  current->keep.push_back(alias);
}

TraceScope::TraceScope() : graph_(std::make_unique<Graph>()) {
  FX_CHECK(!current, "fx::trace: tracing inside a traced function is not supported");
  FX_CHECK(!intercepted(),
           "fx::trace: tracing inside fx::vmap is not supported (vmap inside "
           "a traced function is)");
  current = new TraceState(graph_.get());
  push_interpreter(current);
  ++tracing_depth;
}

TraceScope::~TraceScope() {
  --tracing_depth;
  top_interpreter = current->below;  // the recordings begun inside have ended (RAII)
  delete current;
  current = nullptr;
}

void TraceScope::add_input(const Tensor& t) { graph_->inputs.push_back(new_value(*current, t)); }

void TraceScope::add_output(const Tensor& t) {
  FX_CHECK(t.defined(), "fx::trace: the traced function returned an undefined tensor");
  Tensor standin;
  graph_->outputs.push_back(value_of(*current, t, standin));
}

Graph TraceScope::finish() { return std::move(*graph_); }

}  // namespace detail

std::vector<Tensor> Graph::run(const std::vector<Tensor>& args) const {
  FX_CHECK(args.size() == inputs.size(), "fx::Graph: traced with ", inputs.size(),
           " tensor arguments, called with ", args.size());
  std::vector<Tensor> v(values.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& want = values[size_t(inputs[i])];
    FX_CHECK(args[i].defined() && args[i].shape() == want.shape && args[i].dtype() == want.dtype,
             "fx::Graph: argument ", i, " was traced as ", dtype_name(want.dtype), " ", want.shape,
             ", called with ",
             args[i].defined() ? std::string(dtype_name(args[i].dtype())) : "undefined", " ",
             args[i].defined() ? args[i].shape() : Shape{});
    v[size_t(inputs[i])] = args[i];
  }
  for (const Constant& c : constants) {
    const Value& val = values[size_t(c.value)];
    v[size_t(c.value)] = c.data.defined() ? c.data : full(val.shape, c.fill, val.dtype);
  }
  std::vector<Tensor> in;
  for (const Equation& eq : equations) {
    in.clear();
    for (int id : eq.inputs) in.push_back(id >= 0 ? v[size_t(id)] : Tensor());
    if (eq.prim->num_outputs == 1)
      v[size_t(eq.output)] = bind(*eq.prim, std::span<const Tensor>(in), eq.attrs.view());
    else
      detail::bind_n(*eq.prim, std::span<const Tensor>(in), eq.attrs.view(), &v[size_t(eq.output)]);
  }
  std::vector<Tensor> out;
  for (int id : outputs) out.push_back(v[size_t(id)]);
  return out;
}

namespace {
std::string type_of(const Graph::Value& v) {
  std::ostringstream os;
  os << dtype_name(v.dtype) << "[";
  for (int d = 0; d < v.shape.size(); ++d) os << (d ? "," : "") << v.shape[d];
  os << "]";
  return os.str();
}
}  // namespace

std::string Graph::to_string() const {
  std::ostringstream os;
  auto name = [&](int id) { return id < 0 ? std::string("_") : "%" + std::to_string(id); };
  os << "graph(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << name(inputs[i]) << ": " << type_of(values[size_t(inputs[i])]);
  os << ") {\n";
  for (const Constant& c : constants) {
    os << "  " << name(c.value) << ": " << type_of(values[size_t(c.value)]) << " = ";
    if (c.data.defined()) os << "constant\n";
    else os << "full " << c.fill << "\n";
  }
  for (const Equation& eq : equations) {
    os << "  ";
    for (int k = 0; k < eq.prim->num_outputs; ++k)
      os << (k ? ", " : "") << name(eq.output + k) << ": "
         << type_of(values[size_t(eq.output + k)]);
    os << " = " << eq.prim->name << "(";
    for (size_t k = 0; k < eq.inputs.size(); ++k) os << (k ? ", " : "") << name(eq.inputs[k]);
    os << ")";
    std::ostringstream attrs;
    attrs << eq.attrs.view();
    if (!attrs.str().empty()) os << " {" << attrs.str() << "}";
    os << "\n";
  }
  os << "  return ";
  for (size_t k = 0; k < outputs.size(); ++k) os << (k ? ", " : "") << name(outputs[k]);
  os << "\n}\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << g.to_string(); }

}  // namespace fx
