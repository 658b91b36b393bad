// fusegate minify (harness/tools/minify.h).
#include "harness/tools/minify.h"

#include <sys/wait.h>

#include <cstdlib>
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

// The graph shrunk with an outside judge (MinifySpec::predicate): every
// candidate written under a folder of its own and `predicate FILE` run on it.
int minify_by_predicate(const Graph& g, const std::string& name, const MinifySpec& m, const std::string& out) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "fusegate-minify-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) cannot_test("minify --predicate: no temporary folder (" + tmpl + ")");
  const fs::path dir = tmpl;
  const std::string file = (dir / (name + ".fg")).string();
  int checks = 0;
  // 0 shows, 1 does not, -1 cannot be judged (its exit status in `status`)
  auto judge = [&](const Graph& c, int* status) {
    ++checks;
    write_atomic(file, print_graph(c));
    const std::string cmd = "timeout -k 5 " + std::to_string(m.timeout_s) + " " + m.predicate + " '" + file + "'";
    const int rc = std::system(cmd.c_str());
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
    return *status == 0 ? 0 : *status == 1 ? 1 : -1;
  };
  int status = 0;
  const int first = judge(g, &status);
  if (first != 0) {
    remove_tree(dir.string());
    if (first < 0)
      cannot_test("minify --predicate: `" + m.predicate + " FILE` exited " + std::to_string(status) +
                  (status == 124 ? " (past --timeout " + std::to_string(m.timeout_s) + " s)" : "") +
                  " on the graph given: it cannot judge it (0: shows, 1: does not)");
    std::cout << "minify: the predicate does not hold for " << name << " as given: nothing to minify\n";
    return 0;
  }
  auto ops = [](const Graph& x) {
    int n = 0;
    for (const Node& k : x.nodes) n += k.op != Op::Input;
    return n;
  };
  auto header = [&](const Graph& b, const char* state) {
    return "# fusegate minify " + name + " --predicate: " + std::to_string(ops(g)) + " -> " + std::to_string(ops(b)) +
           " op nodes in " + std::to_string(checks) + " checks" + state + "\n";
  };
  // each smaller graph that still shows it is written as it is found: a
  // minimization stopped early keeps the smallest so far
  const Graph best = shrink(g, [&](const Graph& c) {
    int st = 0;
    const bool shows = judge(c, &st) == 0;
    if (shows) write_atomic(out, header(c, " (so far)") + print_graph(c));
    return shows;
  });
  remove_tree(dir.string());
  write_atomic(out, header(best, "") + print_graph(best));
  std::cout << "minify: " << name << " " << ops(g) << " -> " << ops(best) << " op nodes in " << checks
            << " checks of the predicate; written to " << out << "\n";
  return 1;
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
  if (!m.predicate.empty()) {
    const std::string out = m.out.empty() ? name + ".min.fg" : m.out;
    if (fs::path(out).extension() != ".fg") user_error("minify --out " + out + ": name an .fg file (the minified graph)");
    return minify_by_predicate(g, name, m, out);
  }
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
