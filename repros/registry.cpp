#include "repros/registry.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

std::vector<Tensor> run_fg(Session& s, const Graph& g, Inputs& in) {
  std::vector<Tensor> v(g.nodes.size());
  for (const Node& n : g.nodes) {
    Here here(n.loc);
    std::vector<Tensor> a;
    for (int i : n.inputs) a.push_back(v[static_cast<size_t>(i)]);
    switch (n.op) {
      case Op::Input: {
        auto it = in.find(n.name);
        if (it == in.end()) user_error(g.name + ": no value for input %" + n.name);
        v[static_cast<size_t>(n.id)] = it->second;
        break;
      }
      case Op::Full: v[static_cast<size_t>(n.id)] = s.full(attr_float(n.attrs, "value", n.op), n.type.dtype, n.type.shape, here); break;
      case Op::Print: s.print(g.ref(n.id), a[0], here); v[static_cast<size_t>(n.id)] = a[0]; break;
      case Op::Item: {
        double x = s.item(a[0], here);
        v[static_cast<size_t>(n.id)] = s.full(x, DType::F64, {}, here);
        break;
      }
      case Op::Nonzero: v[static_cast<size_t>(n.id)] = s.nonzero(a[0], here); break;
      case Op::AllReduce: v[static_cast<size_t>(n.id)] = s.all_reduce(a[0], here); break;
      case Op::AllGather: v[static_cast<size_t>(n.id)] = s.all_gather(a[0], here); break;
      case Op::ReduceScatter: v[static_cast<size_t>(n.id)] = s.reduce_scatter(a[0], here); break;
      default: v[static_cast<size_t>(n.id)] = s.op(n.op, a, n.attrs, here); break;
    }
  }
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(v[static_cast<size_t>(o)]);
  return out;
}

std::set<std::string> replicated_inputs(const std::vector<InputSpec>& specs) {
  std::set<std::string> r;
  for (const auto& s : specs)
    if (s.shard_dim < 0) r.insert(s.name);
  return r;
}

Repro fg_repro(const std::string& path) {
  std::vector<Graph> gs = parse_graph_file(path);
  if (gs.size() != 1) user_error(path + ": a .fg repro holds exactly one graph, found " + std::to_string(gs.size()));
  auto g = std::make_shared<Graph>(gs[0]);
  // Locations that go into records and goldens name the file from its repro
  // folder, never by an absolute path that differs between machines:
  // ".../repros/fg/x.fg" as "repros/fg/x.fg" (as C++ repros are named),
  // any other folder as "<folder>/x.fg".
  const std::filesystem::path p(path);
  const size_t at = path.rfind("/repros/");
  const std::string shown = at != std::string::npos
                                ? path.substr(at + 1)
                                : (p.parent_path().filename() / p.filename()).string();
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
  r.replicated_outputs = false;
  r.inputs = [g](int) {
    std::vector<InputSpec> specs;
    for (int id : g->input_ids()) {
      const Node& n = g->node(id);
      bool norm = n.name.size() >= 2 && (n.name.rfind("norm") == n.name.size() - 4 || n.name.rfind("ln") == n.name.size() - 2);
      specs.push_back({n.name, n.type.shape, n.type.dtype, norm ? 1.0 : 0.0, norm ? 0.1 : 1.0});
    }
    return specs;
  };
  r.forward = [g](Session& s, Inputs& in) { return run_fg(s, *g, in); };
  for (size_t i = 0; i < g->outputs.size(); ++i) r.outputs.push_back("out" + std::to_string(i));
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
      {"x", {d.batch, d.seq, d.hidden}, DType::BF16, 0.0, 1.0},
      {"ln1", {d.hidden}, DType::BF16, 1.0, 0.1},
      {"w_qkv", {3 * proj, d.hidden}, DType::BF16, 0.0, 1.0 / std::sqrt(static_cast<double>(d.hidden)), 0, 3},
      {"w_o", {d.hidden, proj}, DType::BF16, 0.0, 1.0 / std::sqrt(static_cast<double>(proj)), 1},
      {"ln2", {d.hidden}, DType::BF16, 1.0, 0.1},
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
    r.description += " (GPU anchor size: hidden 2048, 16 heads x 128, MLP 8192, batch 2 x seq 512)";
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

std::vector<Repro> all_repros(const std::vector<std::string>& fg_dirs) {
  std::vector<Repro> rs{tp_block_llama(),      tp_block_wan(), tp_block_llama(anchor_block()), tp_block_wan(anchor_block()),
                        tp_block_llama_seq()};
  for (const auto& dir : fg_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".fg") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    // the first folder that defines a name wins, so a user's folder can
    // shadow a shipped repro
    for (const auto& f : files)
      if (!find_repro(rs, std::filesystem::path(f).stem().string())) rs.push_back(fg_repro(f));
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
