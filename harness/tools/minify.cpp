// fusegate minify (harness/tools/minify.h).
#include "harness/tools/minify.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "harness/record/files.h"
#include "harness/tools/export.h"
#include "harness/tools/fuzz.h"
#include "repros/registry.h"

namespace fg {

namespace {

// The minified file declares each break its graph still has (`expect
// break`, the reason up to its details), so that it runs in mode C as the
// repro did: an undeclared break would fail it there, where it is no part
// of the failure.
void declare_breaks(const std::string& path, const MinifySpec& m) {
  const std::vector<Graph> gs = parse_graph_file(path);
  if (gs.size() != 1) return;
  std::vector<std::string> reasons;
  capture_types(graph_repro(gs[0], gs[0].name, "minified", path), m.world, m.mode, &reasons);
  if (reasons.empty()) return;
  std::string lines;
  for (const std::string& r : reasons) {
    const std::string head = r.substr(0, r.find('('));
    lines += "  expect break \"" + head.substr(0, head.find_last_not_of(' ') + 1) + "\"\n";
  }
  std::ifstream in(path);
  std::string text, line;
  bool done = false;
  while (std::getline(in, line)) {
    text += line + "\n";
    if (!done && line.rfind("graph ", 0) == 0) {
      text += lines;
      done = true;
    }
  }
  if (done) write_atomic(path, text);
}

}  // namespace

int cmd_minify(const MinifySpec& m) {
  namespace fs = std::filesystem;
  Graph g;
  std::string name;
  if (!m.graph_file.empty()) {
    if (fs::path(m.graph_file).extension() != ".fg" || !fs::is_regular_file(m.graph_file))
      user_error("--graph " + m.graph_file + ": not an .fg file");
    std::vector<Graph> gs = parse_graph_file(m.graph_file);
    if (gs.size() != 1) user_error(m.graph_file + ": minify takes one graph, found " + std::to_string(gs.size()));
    g = gs[0];
    name = fs::path(m.graph_file).stem().string();
    check_world_size(fg_repro(m.graph_file), m.world);
  } else {
    const std::vector<Repro> rs = all_repros(m.fg_dirs);
    const Repro* r = find_repro(rs, m.repro);
    if (!r) user_error("unknown repro '" + m.repro + "'; known repros: " + repro_names(rs));
    check_world_size(*r, m.world);
    name = r->name;
    const bool is_fg = r->file.size() > 3 && r->file.compare(r->file.size() - 3, 3, ".fg") == 0;
    // a .fg as written (its names and lines); a C++ repro as its export
    g = is_fg ? parse_graph_file(r->file).at(0) : export_graph(*r, name);
  }
  if (m.mode == Mode::Eager) user_error("minify shrinks compiled runs: use --mode B or C");
  // a graph that breaks (a host op, a disabled region) is shrunk as it
  // runs, its breaks where its text puts them; the breaks it declares are
  // declared again for the breaks the smaller graph still has (below)
  g.expected_breaks.clear();
  // every input keeps the values it has in the repro, under any file name
  for (Node& n : g.nodes)
    if (n.op == Op::Input && !n.attrs.count("seed")) n.attrs["seed"] = name;
  FuzzOptions o;
  o.seconds = 1e9;
  o.graphs = 1;
  o.backend = m.backend;
  o.policies = {m.fusion};
  o.worlds = {m.world};
  o.jobs = 1;
  o.max_findings = 1;
  o.fast_paths = m.fast_paths;
  o.golden_dir = m.golden_dir;
  o.timeout_s = m.timeout_s;
  o.graph_text = print_graph(g);
  o.graph_name = name;
  o.gate_accuracy = true;
  o.mode = m.mode;
  o.breaks_allowed = true;
  o.minify_out = m.out.empty() ? name + ".min.fg" : m.out;
  if (fs::path(o.minify_out).extension() != ".fg")
    user_error("minify --out " + o.minify_out + ": name an .fg file (the minified repro)");
  o.findings_dir = fs::path(o.minify_out).parent_path().string();
  if (o.findings_dir.empty()) o.findings_dir = ".";
  const int rc = cmd_fuzz(o);
  if (rc == 1 && fs::exists(o.minify_out)) declare_breaks(o.minify_out, m);
  return rc;
}

}  // namespace fg
