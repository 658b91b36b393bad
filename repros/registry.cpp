#include "repros/registry.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

namespace {

int64_t tag_of(const Node& n, const char* key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? -1 : std::get<int64_t>(it->second);
}

// A node's attributes without the format's own (the blocks it is in).
Attrs op_attrs(const Node& n) {
  Attrs a;
  for (const auto& [k, v] : n.attrs)
    if (k.empty() || k[0] != '@') a.emplace(k, v);
  return a;
}

// A broadcasting op whose operand has, on this rank, a dim of 1 where the
// .fg (world size 1) has more, against a larger dim of another operand:
// its share broadcast where the program meant elementwise (an expert dim of
// 4 sharded over 4 ranks, added to a replicated [4]). It would type, run
// and bless; it is a layout that does not fit the op.
void check_no_new_broadcast(const Graph& g, const Node& n, const std::vector<Tensor>& a) {
  if (!is_binary_pointwise(n.op) && n.op != Op::Where) return;
  size_t rank = 0;
  for (const Tensor& t : a) rank = std::max(rank, t.shape().size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Shape& here = a[i].shape();
    const Shape& full = g.node(n.inputs[i]).type.shape;
    if (here.size() != full.size()) continue;
    for (size_t d = 0; d < here.size(); ++d) {
      if (here[d] != 1 || full[d] == 1 || full[d] < 0) continue;  // -1: a size known only at run time
      const size_t at = rank - here.size() + d;  // the dim, aligned from the right
      for (size_t j = 0; j < a.size(); ++j) {
        const Shape& other = a[j].shape();
        if (j == i || rank - other.size() > at) continue;
        const int64_t od = other[at - (rank - other.size())];
        if (od > 1)
          user_error(std::string(op_name(n.op)) + ": dim " + std::to_string(d) + " of " + g.ref(n.inputs[i]) +
                     " is 1 on each rank, " + std::to_string(full[d]) + " at world size 1, and broadcasts against " +
                     std::to_string(od) + " of " + g.ref(n.inputs[j]) + ": its share is spread where the program "
                     "reads it elementwise");
      }
    }
  }
}

// An op of a .fg that failed as replayed at world size `world`: at its
// file:line:col, with the world size and every sharded input's layout and
// share.
std::string replay_error(const Graph& g, const Node& n, const std::vector<Tensor>& v, int world, const std::string& what) {
  std::string layouts;
  for (int id : g.input_ids()) {
    const Node& x = g.node(id);
    auto sh = x.attrs.find("shard");
    if (sh == x.attrs.end()) continue;
    const Tensor& t = v[static_cast<size_t>(id)];
    layouts += (layouts.empty() ? "" : ", ") + g.ref(id) + " " + x.type.str() + " {shard = " +
               std::to_string(std::get<int64_t>(sh->second)) + "}" +
               (t.defined() ? " is " + t.type().str() + " on each rank" : std::string());
  }
  const std::string at = n.loc.file + ":" + std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col) + ": error: ";
  return at + what + " (at world size " + std::to_string(world) + ", where " +
         (layouts.empty() ? std::string("every input is replicated") : "the sharded inputs are " + layouts) +
         "; the types a .fg declares are those of world size 1: a layout must fit every op reading it at every "
         "world size it runs at)";
}

}  // namespace

std::vector<Tensor> run_fg(Session& s, const Graph& g, Inputs& in) {
  std::vector<Tensor> v(g.nodes.size());
  std::map<int64_t, int> if_node;  // branch -> its if node
  for (const Node& n : g.nodes)
    if (n.op == Op::If) if_node[tag_of(n, "@if")] = n.id;
  std::map<int64_t, bool> taken;   // branch -> whether its then-arm runs
  // the host reads the condition where the first node of the if is: a
  // data-dependent branch, so a graph break, as Dynamo's
  auto decide = [&](int64_t k) {
    if (!taken.count(k)) {
      const Node& head = g.node(if_node.at(k));
      taken[k] = s.branch_on(v[static_cast<size_t>(head.inputs[0])], Here(head.loc));
    }
    return taken[k];
  };
  std::function<void(const Node&)> exec;
  // an op's own mistake at a world size above 1: the line types at world
  // size 1 (the parser checked it), so a layout does not fit the ops
  // reading it; at its line, with the layouts (a host op's, an input's or a
  // compile's error is its own)
  auto exec_at_line = [&](const Node& n) {
    const bool typed_op = n.op != Op::Input && fusion_kind(n.op) != FusionKind::Host;
    if (s.world_size() == 1 || !typed_op) return exec(n);
    try {
      exec(n);
    } catch (const UserError& e) {
      throw UserError(replay_error(g, n, v, s.world_size(), e.what()));
    }
  };
  exec = [&](const Node& n) {
    Here here(n.loc);
    std::vector<Tensor> a;
    for (int i : n.inputs) a.push_back(v[static_cast<size_t>(i)]);
    Tensor& out = v[static_cast<size_t>(n.id)];
    switch (n.op) {
      case Op::Input: {
        auto it = in.find(n.name);
        if (it == in.end()) user_error(g.name + ": no value for input %" + n.name);
        out = it->second;
        break;
      }
      case Op::Full: out = s.full(attr_float(n.attrs, "value", n.op), n.type.dtype, n.type.shape, here); break;
      case Op::Print: s.print(g.ref(n.id), a[0], here); out = a[0]; break;
      case Op::Item: out = s.full(s.item(a[0], here), DType::F64, {}, here); break;
      case Op::Nonzero: out = s.nonzero(a[0], here); break;
      case Op::If: out = decide(tag_of(n, "@if")) ? a[1] : a[2]; break;
      case Op::AllReduce: out = s.all_reduce(a[0], here); break;
      case Op::AllGather: out = s.all_gather(a[0], here); break;
      case Op::ReduceScatter: out = s.reduce_scatter(a[0], here); break;
      default:
        check_no_new_broadcast(g, n, a);
        out = s.op(n.op, a, op_attrs(n), here);
        break;
    }
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int64_t k = tag_of(n, "@if");
    if (k >= 0 && n.op != Op::If && decide(k) != (tag_of(n, "@arm") == 1)) continue;  // the arm not taken
    const int64_t d = tag_of(n, "@disabled");
    if (d >= 0) {
      // the region's statements run eagerly, outside any graph
      size_t end = i;
      while (end < g.nodes.size() && tag_of(g.nodes[end], "@disabled") == d) ++end;
      SourceLoc at = n.loc;
      at.line = static_cast<int>(tag_of(n, "@disabled_line"));
      s.disabled(std::get<std::string>(n.attrs.at("@disabled_name")), [&] {
        for (size_t j = i; j < end; ++j) exec_at_line(g.nodes[j]);
      }, Here(at));
      i = end - 1;
      continue;
    }
    exec_at_line(n);
  }
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(v[static_cast<size_t>(o)]);
  return out;
}

MemoryEstimate estimate_memory(const Repro& r, int world, int local) {
  MemoryEstimate e;
  for (const InputSpec& s : r.inputs(world)) {
    int64_t elems = 1;
    for (int64_t d : s.full_shape) elems *= d;
    if (!s.shard.replicated()) elems /= world;
    // the fp64 reference widens floats to 8 bytes
    e.input_bytes += elems * (dtype_size(s.dtype) * 2 + (is_floating(s.dtype) ? 8 : dtype_size(s.dtype)));
  }
  e.value_bytes = r.value_bytes * 2;
  e.total = (e.input_bytes + e.value_bytes) * local;
  return e;
}

void check_world_size(const Repro& r, int world) {
  const int lo = std::max(1, r.min_world), hi = std::min(r.max_world, kMaxWorld);
  if (world < lo || world > hi)
    user_error("world size " + std::to_string(world) + " is out of range for " + r.name + " (" + std::to_string(lo) +
               ".." + std::to_string(hi) +
               (hi == kMaxWorld ? ": at most " + std::to_string(kMaxWorld) + " ranks, each a process on this machine"
                                : std::string()) +
               ")");
  if (world == 1) return;
  for (const InputSpec& s : r.inputs(world)) {
    if (s.shard.replicated()) continue;
    const auto blocks = s.shard.block_sizes(s.full_shape[static_cast<size_t>(s.shard.dim)]);
    for (int64_t block : blocks)
      if (block % world != 0) {
        // a .fg input: at its declaration, with its layout
        const std::string at = s.loc.known() && s.loc.col > 0 ? s.loc.file + ":" + std::to_string(s.loc.line) + ":" +
                                                                     std::to_string(s.loc.col) + ": error: "
                                                               : std::string();
        std::string layout;
        if (!at.empty()) {
          layout = " (%" + s.name + " " + TensorType{s.dtype, s.full_shape}.str() + " {shard = " +
                   std::to_string(s.shard.dim);
          if (!s.shard.blocks.empty()) {
            layout += ", blocks = [";
            for (size_t i = 0; i < s.shard.blocks.size(); ++i)
              layout += (i ? ", " : "") + std::to_string(s.shard.blocks[i]);
            layout += "]";
          }
          layout += "})";
        }
        user_error(at + "world size " + std::to_string(world) + " does not divide " + r.name + "'s input " + s.name +
                   layout + " along dim " + std::to_string(s.shard.dim) + " (" + std::to_string(block) +
                   (blocks.size() > 1 ? " in a block" : "") + "): use a world size that divides it");
      }
  }
}

std::vector<int64_t> Sharding::block_sizes(int64_t full) const {
  return blocks.empty() ? std::vector<int64_t>{full} : blocks;
}

std::string InitSpec::str() const {
  switch (kind) {
    case Init::Normal: return "normal(" + format_double(a) + ", " + format_double(b) + ")";
    case Init::Uniform: return "uniform(" + format_double(a) + ", " + format_double(b) + ")";
    case Init::Ones: return "ones";
    case Init::Zeros: return "zeros";
    case Init::Arange: return "arange(" + format_double(a) + ", " + format_double(b) + ")";
  }
  return "?";
}

Attrs input_annotations(const InputSpec& s) {
  Attrs a;
  if (!s.dim_order.empty()) a["dim_order"] = s.dim_order;
  if (!s.seed.empty()) a["seed"] = s.seed;
  if (!s.shard.replicated()) {
    a["shard"] = int64_t{s.shard.dim};
    if (!s.shard.blocks.empty()) a["blocks"] = s.shard.blocks;
  }
  switch (s.init.kind) {
    case Init::Normal: a["init"] = std::string("normal"); a["mean"] = s.init.a; a["std"] = s.init.b; break;
    case Init::Uniform: a["init"] = std::string("uniform"); a["low"] = s.init.a; a["high"] = s.init.b; break;
    case Init::Ones: a["init"] = std::string("ones"); break;
    case Init::Zeros: a["init"] = std::string("zeros"); break;
    case Init::Arange: a["init"] = std::string("arange"); a["start"] = s.init.a; a["step"] = s.init.b; break;
  }
  return a;
}

std::set<std::string> replicated_inputs(const std::vector<InputSpec>& specs) {
  std::set<std::string> r;
  for (const auto& s : specs)
    if (s.shard.replicated()) r.insert(s.name);
  return r;
}

namespace {

Sharding sharding_of(const Attrs& a, const TensorType& t) {
  Sharding sh;
  if (!a.count("shard")) return sh;
  int64_t d = attr_int(a, "shard", Op::Input);
  sh.dim = static_cast<int>(d < 0 ? d + static_cast<int64_t>(t.shape.size()) : d);
  if (a.count("blocks")) sh.blocks = attr_ints(a, "blocks", Op::Input);
  return sh;
}

// An input's init as its attributes say (check_annotations has checked
// them), or by the first use the graph makes of it.
InitSpec init_of(const Graph& g, const Node& in) {
  const Attrs& a = in.attrs;
  std::string kind = attr_str_or(a, "init", "");
  if (kind.empty()) {
    if (a.count("mean") || a.count("std")) kind = "normal";
    else if (a.count("low") || a.count("high")) kind = "uniform";
    else if (a.count("start") || a.count("step")) kind = "arange";
  }
  auto fan_in = [](const Shape& s) { return normal(0.0, 1.0 / std::sqrt(static_cast<double>(s.back()))); };
  if (kind == "normal") return normal(attr_float_or(a, "mean", 0.0), attr_float_or(a, "std", 1.0));
  if (kind == "uniform") return {Init::Uniform, attr_float_or(a, "low", 0.0), attr_float_or(a, "high", 1.0)};
  if (kind == "ones") return {Init::Ones, 0, 0};
  if (kind == "zeros") return {Init::Zeros, 0, 0};
  if (kind == "arange") return {Init::Arange, attr_float_or(a, "start", 0.0), attr_float_or(a, "step", 1.0)};
  if (kind == "fan_in") return fan_in(in.type.shape);
  if (is_floating(in.type.dtype))
    for (const Node& n : g.nodes)
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] != in.id) continue;
        const bool linear = n.op == Op::Linear || n.op == Op::LinearAddRank0;
        if (linear && k == 1) return fan_in(in.type.shape);
        if (n.op == Op::Linear && k == 2) return fan_in(g.node(n.inputs[1]).type.shape);
        if ((n.op == Op::RmsNorm || n.op == Op::LayerNorm) && k == 1) return normal(1.0, 0.1);
        if (n.op == Op::LayerNorm && k == 2) return normal(0.0, 0.1);
        return normal(0.0, 1.0);
      }
  return normal(0.0, 1.0);
}

}  // namespace

Repro fg_repro(const std::string& path) {
  std::vector<Graph> gs = parse_graph_file(path);
  if (gs.size() != 1) user_error(path + ": a .fg repro holds exactly one graph, found " + std::to_string(gs.size()));
  auto g = std::make_shared<Graph>(gs[0]);
  // Locations that go into records and goldens name the file alone, as the
  // repro names it: where its folder lies (repros/fg, a --repro-dir, another
  // machine's path) is no part of its goldens, which then survive a move
  const std::string shown = std::filesystem::path(path).filename().string();
  for (Node& n : g->nodes)
    if (n.loc.known()) n.loc.file = shown;
  return graph_repro(*g, std::filesystem::path(path).stem().string(),
                     ".fg text graph (" + std::filesystem::path(path).filename().string() + ")", path);
}

Repro graph_repro(const Graph& graph, const std::string& name, const std::string& description,
                  const std::string& file) {
  auto g = std::make_shared<Graph>(graph);
  Repro r;
  r.name = name;
  r.description = description;
  r.file = file;
  std::vector<InputSpec> specs;
  bool laid_out = false;
  for (int id : g->input_ids()) {
    const Node& n = g->node(id);
    specs.push_back({n.name, n.type.shape, n.type.dtype, init_of(*g, n), sharding_of(n.attrs, n.type),
                     n.attrs.count("dim_order") ? attr_ints(n.attrs, "dim_order", Op::Input) : std::vector<int64_t>{}});
    specs.back().loc = n.loc;
    specs.back().seed = attr_str_or(n.attrs, "seed", "");
    laid_out = laid_out || !specs.back().shard.replicated();
  }
  for (size_t i = 0; i < g->outputs.size(); ++i) {
    // named as the .fg returns it: `return %out` is "out", `return %9`
    // "%9"; a value returned twice gets its place after the second
    std::string name = g->node(g->outputs[i]).name;
    if (name.empty() || name.find_first_not_of("0123456789") == std::string::npos) name = g->ref(g->outputs[i]);
    if (std::find(r.outputs.begin(), r.outputs.end(), name) != r.outputs.end()) name += "#" + std::to_string(i);
    r.outputs.push_back(name);
    r.output_shards.push_back(i < g->output_attrs.size()
                                  ? sharding_of(g->output_attrs[i], g->node(g->outputs[i]).type)
                                  : Sharding{});
    laid_out = laid_out || !r.output_shards.back().replicated();
  }
  // without any layout, every rank runs the whole program on its own copy
  r.replicated_outputs = laid_out;
  r.expected_breaks = g->expected_breaks;
  for (const Node& n : g->nodes) {
    if (n.op == Op::Input) continue;
    int64_t elems = 1;
    for (int64_t d : n.type.shape) elems *= std::max<int64_t>(d, 1);  // nonzero's -1: one row a dim
    r.value_bytes += elems * dtype_size(n.type.dtype);
  }
  r.inputs = [specs](int) { return specs; };
  r.forward = [g](Session& s, Inputs& in) { return run_fg(s, *g, in); };
  return r;
}

BlockDims cpu_block() { return BlockDims{}; }

Repro residual_block(const BlockDims& d, const std::string& name, const std::string& description,
                     const std::string& file, std::vector<InputSpec> own_inputs, BlockPart attention, BlockPart mlp) {
  Repro r;
  r.name = name + d.suffix;
  r.description = description;
  r.file = file;
  const int64_t proj = d.heads * d.head_dim;
  std::vector<InputSpec> specs{
      {"x", {d.batch, d.seq, d.hidden}, DType::BF16, normal(0.0, 1.0)},
      {"ln1", {d.hidden}, DType::BF16, normal(1.0, 0.1)},
      {"w_qkv", {3 * proj, d.hidden}, DType::BF16, normal(0.0, 1.0 / std::sqrt(static_cast<double>(d.hidden))),
       {0, {proj, proj, proj}}},
      {"w_o", {d.hidden, proj}, DType::BF16, normal(0.0, 1.0 / std::sqrt(static_cast<double>(proj))), {1}},
      {"ln2", {d.hidden}, DType::BF16, normal(1.0, 0.1)},
  };
  specs.insert(specs.end(), own_inputs.begin(), own_inputs.end());
  r.inputs = [specs](int) { return specs; };
  r.forward = [d, attention, mlp](Session& s, Inputs& w) {
    Tensor x = w["x"];
    Tensor x2 = x + attention(s, d, x, w);
    return std::vector<Tensor>{x2 + mlp(s, d, x2, w)};
  };
  r.outputs = {"out"};
  r.max_world = static_cast<int>(d.heads);
  if (!d.suffix.empty()) {
    r.only_backend = Backend::Cuda;
    r.description += " (GPU size: hidden " + std::to_string(d.hidden) + ", " + std::to_string(d.heads) + " heads x " +
                     std::to_string(d.head_dim) + ", MLP " + std::to_string(d.mlp) + ", batch " +
                     std::to_string(d.batch) + " x seq " + std::to_string(d.seq) + ")";
  }
  return r;
}

BlockDims anchor_block() {
  BlockDims d;
  d.hidden = 2048;
  d.heads = 16;
  d.head_dim = 128;
  d.mlp = 8192;
  d.seq = 512;
  d.suffix = "_h2048";
  return d;
}

BlockDims anchor_block_long() {
  BlockDims d = anchor_block();
  d.seq = 2048;
  d.suffix = "_h2048_s2048";
  return d;
}

BlockDims anchor_block_wide() {
  BlockDims d = anchor_block();
  d.hidden = 4096;
  d.heads = 32;
  d.mlp = 14336;
  d.suffix = "_h4096";
  return d;
}

std::vector<Repro> all_repros(const std::vector<std::string>& fg_dirs) {
  std::vector<Repro> rs{tp_block_llama(),
                        tp_block_wan(),
                        tp_block_llama(anchor_block()),
                        tp_block_wan(anchor_block()),
                        tp_block_llama_seq(),
                        tp_block_llama(anchor_block_long()),
                        tp_block_llama(anchor_block_wide())};
  std::set<std::string> seen;  // .fg files taken, by real path
  for (const auto& dir : fg_dirs) {
    std::error_code ec;
    std::vector<std::string> files;
    if (std::filesystem::path(dir).extension() == ".fg" && std::filesystem::is_regular_file(dir, ec)) {
      files.push_back(dir);  // one graph (`run --graph FILE.fg`)
    } else if (!std::filesystem::is_directory(dir, ec)) {
      continue;
    } else {
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".fg") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      // a repro is named by its file's stem, and a name means one repro:
      // a .fg named as another repro is an error, never a substitution (a
      // .fg named as a C++ repro had run the C++ one in its place)
      const std::string name = std::filesystem::path(f).stem().string();
      const std::filesystem::path real = std::filesystem::weakly_canonical(f, ec);
      if (!seen.insert(real.string()).second) continue;  // the same file through two folders
      if (const Repro* other = find_repro(rs, name))
        user_error(f + ": error: a .fg repro named " + name + ", as " +
                   (other->file.size() > 3 && other->file.compare(other->file.size() - 3, 3, ".fg") == 0
                        ? "the .fg repro " + other->file
                        : "the C++ repro " + name + " (" + other->file + ")") +
                   ": a name means one repro; rename the file");
      rs.push_back(fg_repro(f));
    }
  }
  return rs;
}

const Repro* find_repro(const std::vector<Repro>& rs, const std::string& name) {
  for (const auto& r : rs)
    if (r.name == name) return &r;
  return nullptr;
}

std::string repro_names(const std::vector<Repro>& rs) {
  std::string s;
  for (const auto& r : rs) s += (s.empty() ? "" : ", ") + r.name;
  return s;
}

}  // namespace fg
