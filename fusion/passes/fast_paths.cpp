#include "fusion/passes/fast_paths.h"

#include <algorithm>
#include <queue>

#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"

namespace fg {

const char* const kFastPathUsed = "used";
const char* const kFastPathUnproven = "blocked: unproven under TP";
const char* const kFastPathOtherShapeClass = "blocked: unproven for this shape class";
const char* const kFastPathNotMatched = "not matched";
const char* const kFastPathNotSelected = "not selected";

namespace {

std::string refs(const Graph& g, const std::vector<int>& ids) {
  std::string r;
  for (int i : ids) r += (r.empty() ? "" : "+") + g.ref(i);
  return r;
}

// A site may replace its nodes only if nothing outside reads them but the
// values it stands in for, and none is a graph output it does not replace.
bool self_contained(const Graph& g, const FastPathSite& s, const std::vector<std::vector<int>>& users) {
  std::set<int> cov(s.covered.begin(), s.covered.end()), rep(s.replaced.begin(), s.replaced.end());
  for (int id : s.covered) {
    if (rep.count(id)) continue;
    for (int u : users[static_cast<size_t>(id)])
      if (!cov.count(u)) return false;
    if (std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end()) return false;
  }
  return true;
}

// A site must not read a graph input that a copy_ writes (moving the site
// could move its read across the write), nor read a value computed from
// what it replaces (the site would wait on itself).
bool orderable(const Graph& g, const FastPathSite& s, const std::vector<std::vector<int>>& users) {
  for (const Node& n : g.nodes)
    if (n.op == Op::CopyInto && std::find(s.inputs.begin(), s.inputs.end(), n.inputs[0]) != s.inputs.end())
      return false;
  std::set<int> cov(s.covered.begin(), s.covered.end());
  std::vector<bool> after(g.nodes.size(), false);
  std::vector<int> work(s.replaced.begin(), s.replaced.end());
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    for (int u : users[static_cast<size_t>(id)])
      if (!cov.count(u) && !after[static_cast<size_t>(u)]) {
        after[static_cast<size_t>(u)] = true;
        work.push_back(u);
      }
  }
  for (int i : s.inputs)
    if (after[static_cast<size_t>(i)]) return false;
  return true;
}

// Rebuilds `g` with each taken site contracted to its emitted nodes, in an
// order that keeps every value after what it reads (the earliest node
// first), then drops the pure nodes nothing reads any more.
Graph contract_sites(const Graph& g, const std::vector<const FastPathSite*>& taken) {
  const size_t n = g.nodes.size();
  std::vector<int> unit(n, -1);  // node -> site index, or -1 (its own unit)
  for (size_t s = 0; s < taken.size(); ++s)
    for (int id : taken[s]->covered) unit[static_cast<size_t>(id)] = static_cast<int>(s);
  // units: nodes 0..n-1 (those not covered) and sites n..n+S-1
  const size_t units = n + taken.size();
  auto unit_of = [&](int id) { return unit[static_cast<size_t>(id)] < 0 ? static_cast<size_t>(id) : n + static_cast<size_t>(unit[static_cast<size_t>(id)]); };
  std::vector<std::vector<size_t>> after(units);
  std::vector<int> pending(units, 0);
  std::vector<int> first(units, 0);
  auto depend = [&](size_t u, int on) {
    size_t d = unit_of(on);
    if (d == u) return;
    after[d].push_back(u);
    ++pending[u];
  };
  for (const Node& nd : g.nodes) {
    first[static_cast<size_t>(nd.id)] = nd.id;
    if (unit[static_cast<size_t>(nd.id)] >= 0) continue;
    for (int i : nd.inputs) depend(static_cast<size_t>(nd.id), i);
  }
  for (size_t s = 0; s < taken.size(); ++s) {
    first[n + s] = taken[s]->covered.front();
    for (int i : taken[s]->inputs) depend(n + s, i);
  }
  std::priority_queue<std::pair<int, size_t>, std::vector<std::pair<int, size_t>>, std::greater<>> ready;
  for (size_t u = 0; u < units; ++u)
    if ((u >= n || unit[u] < 0) && pending[u] == 0) ready.push({first[u], u});
  Graph out;
  out.name = g.name;
  std::vector<int> map(n, -1);
  size_t emitted = 0, wanted = units;
  for (size_t id = 0; id < n; ++id) wanted -= unit[id] >= 0 ? 1 : 0;
  while (!ready.empty()) {
    size_t u = ready.top().second;
    ready.pop();
    ++emitted;
    if (u < n) {
      const Node& nd = g.nodes[u];
      std::vector<int> in;
      for (int i : nd.inputs) in.push_back(map[static_cast<size_t>(i)]);
      map[u] = copy_node(out, nd, in);
    } else {
      const FastPathSite& s = *taken[u - n];
      std::vector<int> in;
      for (int i : s.inputs) in.push_back(map[static_cast<size_t>(i)]);
      std::vector<int> ids = s.emit(out, in);
      FG_CHECK(ids.size() == s.replaced.size(), "fast path " + s.name + " emitted the wrong number of values");
      for (size_t k = 0; k < ids.size(); ++k) {
        const int old = s.replaced[k];
        FG_CHECK(out.node(ids[k]).type == g.node(old).type,
                 "fast path " + s.name + " stands " + out.node(ids[k]).type.str() + " in for " + g.ref(old) + ": " +
                     g.node(old).type.str());
        map[static_cast<size_t>(old)] = ids[k];
        out.nodes[static_cast<size_t>(ids[k])].loc = g.node(old).loc;
      }
    }
    for (size_t v : after[u])
      if (--pending[v] == 0) ready.push({first[v], v});
  }
  FG_CHECK(emitted == wanted, "fast path sites form a cycle with the nodes between them");
  for (int o : g.outputs) {
    FG_CHECK(map[static_cast<size_t>(o)] >= 0, "graph output " + g.ref(o) + " was replaced by no fast path value");
    out.outputs.push_back(map[static_cast<size_t>(o)]);
  }

  // drop pure values nothing reads now (what the sites read only through
  // the nodes they replaced)
  std::vector<bool> live(out.nodes.size(), false);
  for (int o : out.outputs) live[static_cast<size_t>(o)] = true;
  for (size_t i = out.nodes.size(); i-- > 0;) {
    const Node& nd = out.nodes[i];
    FusionKind k = fusion_kind(nd.op);
    bool pure = k == FusionKind::Pointwise || k == FusionKind::Reduction || k == FusionKind::View ||
                (k == FusionKind::Input && nd.op == Op::Full);
    if (!pure && nd.op != Op::Input) live[i] = true;
    if (live[i])
      for (int in : nd.inputs) live[static_cast<size_t>(in)] = true;
  }
  return rebuild(out, [&](const Node& nd, const std::vector<int>& in, const std::vector<int>&, Graph& o) {
    if (!live[static_cast<size_t>(nd.id)] && nd.op != Op::Input) return -1;
    return copy_node(o, nd, in);
  });
}

}  // namespace

int fast_path_status_order(const std::string& s) {
  if (s == kFastPathUsed) return 0;
  const bool unproven = s == kFastPathUnproven || s.rfind(kFastPathOtherShapeClass, 0) == 0;
  if (s.rfind("blocked: ", 0) == 0 && !unproven) return 1;  // invalidated, or cannot run here
  if (unproven) return 2;
  if (s.rfind("not used", 0) == 0) return 3;
  if (s == kFastPathNotMatched) return 4;
  return 5;
}

std::string fast_path_cost_refusal(const FastPathSpec& spec, const FastPathTarget& target) {
  if (spec.max_autotune_only && target.fusion != FusionPolicy::MaxAutotune)
    return "not used: max-autotune only (the default policy stays faithful to Inductor)";
  if (spec.exchange_alone && target.world_size == 1)
    return "not used: cost model (one rank: nothing to exchange)";
  if (spec.exchange_only_gain && target.world_size == 1 && target.backend == Backend::Cuda)
    return "not used: cost model (no exchange to save on one rank; the generic path is faster)";
  if (spec.cuda_gain_only && target.backend == Backend::Cpu)
    return "not used: cost model (its host kernel is a reference loop; the generic path's GEMM is faster)";
  if (*spec.cuda_measured_slower && target.backend == Backend::Cuda)
    return std::string("not used: cost model (measured slower: ") + spec.cuda_measured_slower + ")";
  return "";
}

Graph apply_fast_paths(const Graph& g, const FastPathSelection& sel, const FastPathProofs& proofs,
                       std::vector<LedgerEntry>* ledger, std::map<std::string, FastPathStatus>* status,
                       const FastPathTarget& target) {
  const auto users = g.users();
  struct Candidate {
    FastPathSite site;
    const FastPathSpec* spec;
    std::string status;
  };
  std::vector<Candidate> cands;
  for (const FastPathSpec& spec : fast_path_catalog()) {
    FastPathStatus& st = (*status)[spec.name];
    st.status = sel.asks(spec.name) || proofs.forced.count(spec.name) ? kFastPathNotMatched : kFastPathNotSelected;
    if (st.status == kFastPathNotSelected) continue;
    for (FastPathSite& s : spec.match(g)) {
      if (!self_contained(g, s, users) || !orderable(g, s, users)) continue;
      // each class once: two sites of one class (the block's two
      // all-reduces) are one class its proof must cover
      if (std::find(st.shape_classes.begin(), st.shape_classes.end(), s.shape_class) == st.shape_classes.end())
        st.shape_classes.push_back(s.shape_class);
      std::string why;
      if (proofs.forced.count(spec.name)) {
        why = "";
      } else if (!(why = fast_path_cost_refusal(spec, target)).empty()) {
        // not run here whatever a proof says
      } else if (proofs.blocked.count(spec.name)) {
        why = "blocked: " + proofs.blocked.at(spec.name);
      } else if (proofs.invalid.count(spec.name)) {
        why = "blocked: proof invalidated (" + proofs.invalid.at(spec.name) + ")";
      } else {
        auto cov = proofs.shape_classes.find(spec.name);
        if (cov == proofs.shape_classes.end() || cov->second.empty()) {
          why = kFastPathUnproven;
        } else if (!cov->second.count(s.shape_class)) {
          // a proof holds here, for other shapes: say which, so that the
          // reader proves this class rather than looks for a missing file
          why = std::string(kFastPathOtherShapeClass) + " (its proof covers ";
          for (auto it = cov->second.begin(); it != cov->second.end(); ++it)
            why += (it == cov->second.begin() ? "" : "; ") + *it;
          why += ")";
        }
      }
      cands.push_back({std::move(s), &spec, why});
    }
  }
  // eligible sites by priority, then name, then where they start
  std::vector<Candidate*> order;
  for (auto& c : cands)
    if (c.status.empty()) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) {
    if (a->spec->priority != b->spec->priority) return a->spec->priority > b->spec->priority;
    if (a->spec->name != b->spec->name) return a->spec->name < b->spec->name;
    return a->site.covered.front() < b->site.covered.front();
  });
  std::map<int, const Candidate*> owner;  // node -> the taken site covering it
  std::vector<const FastPathSite*> taken;
  for (Candidate* c : order) {
    const Candidate* other = nullptr;
    for (int id : c->site.covered)
      if (owner.count(id)) other = owner.at(id);
    if (other) {
      c->status = "not used: lower priority than " + other->spec->name;
      continue;
    }
    if (bisect_limits().fast_paths >= 0 && static_cast<int64_t>(taken.size()) >= bisect_limits().fast_paths) {
      c->status = "not used: past its FUSEGATE_BISECT limit";
      continue;
    }
    for (int id : c->site.covered) owner[id] = c;
    c->status = kFastPathUsed;
    taken.push_back(&c->site);
  }
  // the ledger lists the sites in the order they were considered for taking
  // (eligible ones by priority, then the blocked): FUSEGATE_BISECT counts
  // applications in that order
  std::vector<const Candidate*> ledger_order(order.begin(), order.end());
  for (const auto& c : cands)
    if (std::find(order.begin(), order.end(), &c) == order.end()) ledger_order.push_back(&c);
  for (const Candidate* cp : ledger_order) {
    const Candidate& c = *cp;
    LedgerEntry e;
    e.first = "fast_path " + c.spec->name;
    e.second = refs(g, c.site.replaced);
    for (int id : c.site.covered) e.add_source(g.node(id).loc);
    e.fused = c.status == kFastPathUsed;
    e.reason = e.fused ? Reject::FastPathUsed
               : c.status == kFastPathUnproven || c.status.rfind(kFastPathOtherShapeClass, 0) == 0
                   ? Reject::FastPathUnproven
               : c.status.find("FUSEGATE_BISECT") != std::string::npos ? Reject::BisectLimit
               : c.status.rfind("not used: cost model", 0) == 0 ? Reject::FastPathCostModel
               : c.status.rfind("not used: max-autotune only", 0) == 0 ? Reject::FastPathPolicy
               : c.status.rfind("not used", 0) == 0 ? Reject::FastPathOutranked
               : c.status.rfind("blocked: proof invalidated", 0) != 0 ? Reject::FastPathOneHost
                                                     : Reject::FastPathInvalidated;
    ledger->push_back(e);
    FastPathStatus& st = (*status)[c.spec->name];
    if (fast_path_status_order(c.status) < fast_path_status_order(st.status)) st.status = c.status;
  }
  if (taken.empty()) return g;
  return contract_sites(g, taken);
}

}  // namespace fg
