// fusegate export (harness/tools/export.h): a repro's mode-C graph as .fg
// text that means the same at every world size it runs at.
#include "harness/tools/export.h"

#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "fusion/capture/session.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "harness/record/files.h"
#include "repros/registry.h"

namespace fg {

namespace {

// A value that is only its type: capture records ops, nothing computes.
struct Typed : Concrete {
  explicit Typed(TensorType t) : type(std::move(t)) {}
  TensorType type;
};

class CaptureExecutor : public Executor {
 public:
  explicit CaptureExecutor(int world) : world_(world) {}
  ConcreteP eager(const Node& n, const std::vector<ConcreteP>&) override {
    TensorType t = n.type;
    for (auto& d : t.shape) d = d < 0 ? 0 : d;
    return std::make_shared<Typed>(t);
  }
  std::vector<ConcreteP> run_graph(const Graph& g, const std::vector<ConcreteP>&, int) override {
    graphs.push_back(g);
    std::vector<ConcreteP> outs;
    for (int id : g.outputs) outs.push_back(std::make_shared<Typed>(g.node(id).type));
    return outs;
  }
  TensorType type_of(const ConcreteP& t) override { return static_cast<Typed*>(t.get())->type; }
  double item(const ConcreteP&) override { return 0; }
  std::string describe(const ConcreteP& t) override { return type_of(t).str(); }
  int world_size() const override { return world_; }
  int rank() const override { return 0; }
  std::vector<Graph> graphs;

 private:
  int world_;
};

std::string where(const Graph& g, const Node& n) {
  std::string s = g.ref(n.id) + " = " + op_name(n.op);
  if (!n.loc.file.empty()) s += " (" + n.loc.str() + ")";
  return s;
}

std::string attr_text(const Attr& a) {
  if (const auto* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&a)) return format_double(*d);
  if (const auto* s = std::get_if<std::string>(&a)) return "\"" + *s + "\"";
  return shape_str(std::get<std::vector<int64_t>>(a));
}

// The repro's mode-C graphs at each world size it runs at, from those a
// check runs and the next: where its layouts divide and its ops capture.
std::map<int, std::vector<Graph>> captures_of(const Repro& r) {
  std::map<int, std::vector<Graph>> out;
  for (int w : {1, 2, 4, 8}) try {
      check_world_size(r, w);
      out[w] = capture_types(r, w);
    } catch (const UserError&) {
    }
  return out;
}

// A name the text can print ("out"; not "%9", how a .fg names an unnamed
// value it returns).
bool printable_name(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") == std::string::npos) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Node `n`'s attributes at world size 1 (`a1`) made to mean at `world` what
// they mean there (`a2`, the capture at `world`): a shape dim that scales
// becomes -1, a slice whose bounds scale takes them as blocks. A
// UserError where the text cannot say it.
Attrs world_relative(const Repro& r, const Graph& g1, const Node& n, const Attrs& a2, int world) {
  Attrs a = n.attrs;
  auto cannot = [&](const std::string& key, const std::string& why) {
    user_error("cannot export " + r.name + ": " + where(g1, n) + " has " + key + " = " + attr_text(n.attrs.at(key)) +
               " at world size 1 and " + (a2.count(key) ? attr_text(a2.at(key)) : std::string("none")) +
               " at world size " + std::to_string(world) + ", and " + why +
               "; write the repro so that each op's attributes hold at every world size (a .fg reshapes with -1 "
               "and slices a sharded dim by blocks)");
  };
  for (const auto& [key, v1] : n.attrs) {
    auto it = a2.find(key);
    if (it != a2.end() && it->second == v1) continue;
    // a collective's own world size is the session's, not the text's
    if (key == "world" && (n.op == Op::AllGather || n.op == Op::ReduceScatter)) {
      a.erase(key);
      continue;
    }
    if (it == a2.end()) cannot(key, "the attribute is missing there");
    if ((n.op == Op::Reshape || n.op == Op::Expand) && key == "shape") {
      const auto& s1 = std::get<std::vector<int64_t>>(v1);
      const auto& s2 = std::get<std::vector<int64_t>>(it->second);
      if (s1.size() != s2.size()) cannot(key, "the rank changes");
      std::vector<size_t> moved;
      for (size_t d = 0; d < s1.size(); ++d)
        if (s1[d] != s2[d]) moved.push_back(d);
      std::vector<int64_t> s = s1;
      if (n.op == Op::Reshape) {
        // one dim may be -1 in a reshape: the one that scales
        for (int64_t x : s1)
          if (x == -1) cannot(key, "it already has a -1 dim");
        if (moved.size() != 1) cannot(key, std::to_string(moved.size()) + " dims change, and a reshape has one -1");
        s[moved[0]] = -1;
      } else {
        // expand's -1 keeps the operand's size: right where it is the operand's
        const Shape& in = g1.node(n.inputs[0]).type.shape;
        for (size_t d : moved) {
          const size_t off = s1.size() - in.size();
          if (d < off || in[d - off] != s1[d]) cannot(key, "a dim that scales is not the operand's");
          s[d] = -1;
        }
      }
      a[key] = s;
      continue;
    }
    if (n.op == Op::Slice && (key == "start" || key == "end")) continue;  // below, as a pair
    cannot(key, "the text has no way to say how it depends on the world size");
  }
  if (n.op == Op::Slice && n.attrs.count("start") && (!a2.count("start") || a2.at("start") != n.attrs.at("start") ||
                                                      a2.at("end") != n.attrs.at("end"))) {
    // a slice of a sharded dim: [s, e) of len at world size 1 is the middle
    // block of [s, e - s, len - e], cut block by block at every world size
    const Shape& in = g1.node(n.inputs[0]).type.shape;
    const int64_t dim = norm_dim(attr_int(n.attrs, "dim", n.op), in.size(), n.op);
    const SliceBounds b1 = slice_bounds(n.attrs, in, n.op);
    Shape in2 = in;
    in2[static_cast<size_t>(dim)] /= world;
    const SliceBounds b2 = slice_bounds(a2, in2, n.op);
    if (b1.step != 1 || b1.start % world != 0 || b1.end % world != 0 || b2.start != b1.start / world ||
        b2.end != b1.end / world)
      cannot("start", "its bounds are not those of world size 1 divided by " + std::to_string(world));
    std::vector<int64_t> blocks;
    int64_t index = 0;
    if (b1.start > 0) {
      blocks.push_back(b1.start);
      index = 1;
    }
    blocks.push_back(b1.end - b1.start);
    if (in[static_cast<size_t>(dim)] > b1.end) blocks.push_back(in[static_cast<size_t>(dim)] - b1.end);
    a.erase("start");
    a.erase("end");
    a.erase("step");
    a["blocks"] = blocks;
    a["index"] = index;
  }
  return a;
}

// The ops, operands and types of two graphs, node by node: "" when alike,
// else the first difference.
std::string same_graph(const Graph& a, const Graph& b) {
  if (a.nodes.size() != b.nodes.size())
    return std::to_string(a.nodes.size()) + " nodes against " + std::to_string(b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.op != y.op || x.inputs != y.inputs || x.type != y.type)
      return "node " + std::to_string(i) + ": " + op_name(x.op) + " " + x.type.str() + " against " + op_name(y.op) +
             " " + y.type.str();
  }
  if (a.outputs != b.outputs) return "the outputs differ";
  return "";
}

// The one graph of a capture (`gs`, of repro `r` at `world`).
Graph one_graph(const Repro& r, const std::vector<Graph>& gs, int world) {
  if (gs.size() != 1)
    user_error("cannot export " + r.name + ": mode C captures " + std::to_string(gs.size()) +
               " graphs at world size " + std::to_string(world) +
               " (a graph break); export writes one graph (split the repro at its break)");
  return gs[0];
}

}  // namespace

std::vector<Graph> capture_types(const Repro& r, int world, Mode mode, std::vector<std::string>* breaks) {
  CaptureExecutor ex(world);
  Session s(mode, &ex, r.file);
  Inputs in;
  for (const auto& spec : r.inputs(world)) {
    TensorType t{spec.dtype, spec.full_shape};
    if (!spec.shard.replicated()) t.shape[static_cast<size_t>(spec.shard.dim)] /= world;
    in[spec.name] = s.wrap(std::make_shared<Typed>(t), spec.name, input_annotations(spec));
  }
  s.finish(r.forward(s, in));
  if (breaks)
    for (const auto& b : s.breaks()) breaks->push_back(b.reason);
  return ex.graphs;
}

Graph export_graph(const Repro& r, const std::string& name) {
  const std::map<int, std::vector<Graph>> captured = captures_of(r);
  if (!captured.count(1))
    user_error("cannot export " + r.name + ": it does not run at world size 1, where a .fg is written");
  Graph g = one_graph(r, captured.at(1), 1);
  if (captured.size() > 1) {
    const int w = std::next(captured.begin())->first;
    const Graph g2 = one_graph(r, captured.at(w), w);
    if (g2.nodes.size() != g.nodes.size())
      user_error("cannot export " + r.name + ": it captures " + std::to_string(g.nodes.size()) +
                 " nodes at world size 1 and " + std::to_string(g2.nodes.size()) + " at world size " +
                 std::to_string(w) + "; a .fg is one program at every world size");
    for (Node& n : g.nodes) {
      const Node& m = g2.node(n.id);
      if (m.op != n.op || m.inputs != n.inputs)
        user_error("cannot export " + r.name + ": " + where(g, n) + " at world size 1 is " + where(g2, m) +
                   " at world size " + std::to_string(w) + "; a .fg is one program at every world size");
      if (n.op != Op::Input) n.attrs = world_relative(r, g, n, m.attrs, w);
    }
  }
  g.name = name;
  // inputs draw the repro's values; outputs are named as the repro names them
  for (Node& n : g.nodes)
    if (n.op == Op::Input) n.attrs["seed"] = r.name;
  std::set<std::string> named;
  for (const Node& n : g.nodes)
    if (!n.name.empty()) named.insert(n.name);
  for (size_t i = 0; i < g.outputs.size() && i < r.outputs.size(); ++i) {
    Node& o = g.nodes[static_cast<size_t>(g.outputs[i])];
    if (o.op != Op::Input && o.name.empty() && printable_name(r.outputs[i]) && named.insert(r.outputs[i]).second)
      o.name = r.outputs[i];
  }
  if (!r.output_shards.empty()) {
    g.output_attrs.assign(g.outputs.size(), Attrs{});
    for (size_t i = 0; i < g.outputs.size() && i < r.output_shards.size(); ++i)
      if (!r.output_shards[i].replicated()) {
        g.output_attrs[i]["shard"] = int64_t{r.output_shards[i].dim};
        if (!r.output_shards[i].blocks.empty()) g.output_attrs[i]["blocks"] = r.output_shards[i].blocks;
      }
  }
  // the text read back means the repro at every world size it runs at
  const Graph back = parse_graph(print_graph(g), name + ".fg");
  const Repro as_text = graph_repro(back, r.name, r.description, name + ".fg");
  for (const auto& [w, gs] : captured) {
    const std::string d = same_graph(one_graph(as_text, capture_types(as_text, w), w), one_graph(r, gs, w));
    if (!d.empty())
      user_error("cannot export " + r.name + ": the text does not capture as the repro does at world size " +
                 std::to_string(w) + " (" + d + ")");
  }
  return g;
}

std::string export_text(const Repro& r, const std::string& name) {
  const Graph g = export_graph(r, name);
  std::string head = "# " + r.name + (r.description.empty() ? "" : ": " + r.description) + "\n";
  head += "# Exported by `fusegate export " + r.name + "` from " + r.file +
          ": its mode-C graph, written at world size 1; each input draws the repro's values (seed).\n";
  std::string text = head + print_graph(g);
  if (text.back() != '\n') text += '\n';
  return text;
}

int cmd_export(const Repro& r, const std::string& out) {
  std::string name = r.name;
  if (!out.empty()) {
    if (out.size() < 4 || out.compare(out.size() - 3, 3, ".fg") != 0)
      user_error("export --out " + out + ": name an .fg file (its name is the repro's name when it runs)");
    name = std::filesystem::path(out).stem().string();
  }
  const std::string text = export_text(r, name);
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  write_atomic(out, text);
  std::cerr << "fusegate export: wrote " << out << " (" << r.name << ", mode C at world size 1); run it with "
            << "fusegate run --graph " << out << " --mode C --world-size N\n";
  return 0;
}

}  // namespace fg
