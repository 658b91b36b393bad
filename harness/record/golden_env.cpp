#include "harness/record/golden_env.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>

#include "harness/record/compare.h"
#include "fusion/errors.h"
#include "harness/record/golden.h"
#include "harness/record/json_read.h"

namespace fg {
using nlohmann::json;
using record::RunRecord;

std::string hash_text(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
  return buf;
}

std::string environment_fingerprint(const record::Environment& env) {
  record::Environment e = env;
  e.erase("fingerprint");
  return hash_text(json(e).dump());
}

RunRecord golden_of(RunRecord rec) {
  record::Environment env = rec.env ? *rec.env : record::Environment{};
  const std::string fp = environment_fingerprint(env);
  env.erase("fingerprint");
  rec.env.reset();
  rec.environments = std::map<std::string, record::Environment>{{fp, env}};
  rec.format_version = kRecordFormatVersion;
  for (record::RankRecord& r : rec.ranks) {
    r.times_ms.reset();
    r.stage_applications.reset();  // what bisect counts in a run, not a state to keep
    if (r.gemm_choices)
      for (record::GemmChoice& e : *r.gemm_choices) e = record::GemmChoice{e.shape, e.choice, {}, {}, {}};
    if (r.residual_placement)
      for (record::ResidualPlacement& e : *r.residual_placement) {
        record::ResidualPlacement kept;
        kept.site = e.site;
        kept.placement = e.placement;
        e = kept;
      }
    for (record::OutputDigest& o : r.outputs) {
      if (o.exact) {
        o.exact_by_environment = std::map<std::string, std::string>{{fp, *o.exact}};
        o.exact.reset();
      }
      if (o.gathered) o.gathered->exact.reset();
    }
  }
  return rec;
}

namespace {

// The part of a golden that is the same in every environment, as JSON: the
// golden without environments, exact digests, fingerprints, the accuracy's
// figures (each output's pass kept), the names of the device kernels a
// launch ran (their count kept: each name blanked) and how each GEMM
// algorithm was chosen (its shape and algorithm kept).
json environment_free(RunRecord g) {
  g.environments.reset();
  g.env.reset();
  for (record::RankRecord& r : g.ranks) {
    // the ATen calls that make views alone: LibTorch makes more or fewer of
    // them by the machine (aten_metadata_op); the calls that do work are
    // the state
    r.aten_op_count = aten_work_count(r);
    for (record::Launch& k : r.kernels)
      if (k.aten_ops)
        for (auto it = k.aten_ops->begin(); it != k.aten_ops->end();)
          it = aten_metadata_op(it->first) ? k.aten_ops->erase(it) : std::next(it);
    // what a library does inside a launch: the check counts its device
    // kernels, whose names a new cuBLAS or cuDNN changes
    for (record::Launch& k : r.kernels)
      if (k.device_kernels) k.device_kernels = std::vector<std::string>(k.device_kernels->size());
    // each GEMM's algorithm is the program; how it was timed and where it
    // came from are the bless's
    if (r.gemm_algos)
      for (record::GemmAlgo& e : *r.gemm_algos) {
        record::GemmAlgo kept;
        kept.shape = e.shape;
        kept.algo = e.algo ? *e.algo : std::string();
        e = kept;
      }
    for (record::OutputDigest& o : r.outputs) {
      o.exact.reset();
      o.exact_by_environment.reset();
      o.fingerprint.reset();
      if (o.gathered) o.gathered->fingerprint.reset();
    }
    // the accuracy's figures are this environment's; whether each output
    // passed is not
    if (r.accuracy) {
      record::Accuracy kept;
      kept.status = r.accuracy->status ? *r.accuracy->status : std::string();
      for (const record::AccuracyOutput& o : r.accuracy->outputs) {
        record::AccuracyOutput k;
        k.name = o.name;
        k.pass = o.pass.value_or(false);
        kept.outputs.push_back(k);
      }
      r.accuracy = kept;
    }
  }
  return record::to_json(g);
}

// Every output's fingerprint (and the gathered copy's) of `a` within
// tolerance of `b`'s, matched by rank and name; `why` names the first that
// is not.
bool fingerprints_agree(const RunRecord& a, const RunRecord& b, std::string* why) {
  auto ra = ranks_by_id(a), rb = ranks_by_id(b);
  for (const auto& [id, rank] : ra) {
    auto other = rb.find(id);
    if (other == rb.end()) continue;  // the environment-free part says so
    auto ob = outputs_by_name(*other->second);
    for (const auto& [name, o] : outputs_by_name(*rank)) {
      auto it = ob.find(name);
      if (it == ob.end()) continue;
      const record::OutputDigest& p = *it->second;
      auto close = [&](const std::optional<record::Fingerprint>& x, const std::optional<record::Fingerprint>& y,
                       const char* part) {
        std::string w;
        if (!x || !y || fingerprints_close(*x, *y, &w)) return true;
        *why = "rank " + std::to_string(id) + " output " + name + part + ": fingerprint outside tolerance: " + w;
        return false;
      };
      if (!close(o->fingerprint, p.fingerprint, "")) return false;
      if (o->gathered && p.gathered && !close(o->gathered->fingerprint, p.gathered->fingerprint, " (gathered)"))
        return false;
    }
  }
  return true;
}

// The digests `golden` holds for environment `fp`, rank by rank and output
// by output, as one text ("" where it holds none).
std::string digests_of(const RunRecord& golden, const std::string& fp) {
  std::string out;
  for (const auto& [id, rank] : ranks_by_id(golden))
    for (const auto& [name, o] : outputs_by_name(*rank)) {
      const std::string* d = nullptr;
      if (o->exact_by_environment) {
        auto it = o->exact_by_environment->find(fp);
        if (it != o->exact_by_environment->end()) d = &it->second;
      }
      out += std::to_string(id) + "/" + name + "=" + (d ? *d : std::string("-")) + "\n";
    }
  return out;
}

// The first place two environment-free goldens differ, for a message:
// "/ranks/0/kernel_count 12 -> 13" (a JSON Pointer into the golden file, as
// a patch names it).
std::string first_difference(const json& a, const json& b) {
  const json patch = json::diff(a, b);
  if (patch.empty()) return "";
  const json& op = patch[0];
  const std::string path = op.at("path").get<std::string>();
  const std::string kind = op.at("op").get<std::string>();
  if (kind == "replace") {
    const json old = a.at(json::json_pointer(path));
    const std::string was = old.is_primitive() ? old.dump() : "...";
    const std::string now = op.at("value").is_primitive() ? op.at("value").dump() : "...";
    return path + " " + was + " -> " + now;
  }
  return path + (kind == "add" ? " added" : kind == "remove" ? " removed" : " " + kind);
}

}  // namespace

std::string environment_difference(const record::Environment& from, const record::Environment& to) {
  std::set<std::string> keys;
  for (const auto& [k, v] : from) keys.insert(k);
  for (const auto& [k, v] : to) keys.insert(k);
  std::vector<std::string> diff;
  for (const std::string& k : keys) {
    if (k == "fingerprint") continue;
    auto a = from.find(k), b = to.find(k);
    const std::string x = a == from.end() ? "" : a->second, y = b == to.end() ? "" : b->second;
    if (x != y) diff.push_back(k + " " + (x.empty() ? "(none)" : x) + " -> " + (y.empty() ? "(none)" : y));
  }
  return join(diff, ", ");
}

std::string nearest_environment_difference(const std::map<std::string, record::Environment>& environments,
                                           const record::Environment& env) {
  std::string best;
  size_t fewest = std::numeric_limits<size_t>::max();
  for (const auto& [fp, e] : environments) {
    const std::string d = environment_difference(e, env);
    const size_t n = d.empty() ? 0 : 1 + static_cast<size_t>(std::count(d.begin(), d.end(), ','));
    if (n < fewest) {
      fewest = n;
      best = d;
    }
  }
  return best;
}

bool same_state(const RunRecord& a, const RunRecord& b) { return environment_free(a) == environment_free(b); }

BlessPlan plan_bless(const RunRecord* old, const RunRecord& fresh) {
  BlessPlan p;
  p.golden = fresh;
  if (!old) return p;  // Created
  FG_CHECK(fresh.environments && fresh.environments->size() == 1, "plan_bless: a fresh golden holds one environment");
  const auto& [fp, ours] = *fresh.environments->begin();
  const std::map<std::string, record::Environment> none;
  const auto& envs = old->environments ? *old->environments : none;
  const int old_count = static_cast<int>(envs.size());
  const bool known = envs.count(fp) != 0;
  auto replace = [&](const std::string& why) {
    p.kind = BlessPlan::Replaced;
    p.golden = fresh;
    p.dropped = old_count - (known ? 1 : 0);
    p.why = why;
    return p;
  };
  const json a = environment_free(*old), b = environment_free(fresh);
  if (a != b) return replace(first_difference(a, b));
  // the same environment: its digests decide; if they moved, the state
  // moved, and the other environments' digests describe the old one
  if (known && digests_of(*old, fp) != digests_of(fresh, fp)) return replace("this environment's exact digests changed");
  std::string why;
  if (!known && !fingerprints_agree(*old, fresh, &why)) return replace(why);
  // the same state: the golden is kept as it is, but for environments
  // recorded under another key (another set of fields: an older
  // fusegate's), which no run can match again, and this environment's
  // digests where they are new
  p.golden = *old;
  auto fields = [](const record::Environment& e) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : e) keys.push_back(k);
    return keys;
  };
  for (const auto& [key, env] : envs)
    if (fields(env) != fields(ours)) {
      ++p.unmatchable;
      p.golden.environments->erase(key);
      for (record::RankRecord& r : p.golden.ranks)
        for (record::OutputDigest& o : r.outputs)
          if (o.exact_by_environment) o.exact_by_environment->erase(key);
    }
  if (known) {
    p.kind = p.unmatchable > 0 ? BlessPlan::Pruned : BlessPlan::Unchanged;
    return p;
  }
  p.kind = BlessPlan::Added;
  if (!p.golden.environments) p.golden.environments.emplace();
  (*p.golden.environments)[fp] = ours;
  auto fresh_ranks = ranks_by_id(fresh);
  for (size_t i = 0; i < p.golden.ranks.size(); ++i) {
    record::RankRecord& r = p.golden.ranks[i];
    auto it = fresh_ranks.find(r.rank.value_or(static_cast<long long>(i)));
    if (it == fresh_ranks.end()) continue;
    auto outs = outputs_by_name(*it->second);
    for (record::OutputDigest& o : r.outputs) {
      auto fo = outs.find(o.name);
      if (fo == outs.end() || !fo->second->exact_by_environment) continue;
      auto d = fo->second->exact_by_environment->find(fp);
      if (d == fo->second->exact_by_environment->end()) continue;
      if (!o.exact_by_environment) o.exact_by_environment.emplace();
      (*o.exact_by_environment)[fp] = d->second;
    }
  }
  return p;
}

}  // namespace fg
