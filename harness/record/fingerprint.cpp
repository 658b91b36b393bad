// Fingerprints within a dtype's tolerance, and rank 0's outputs at another
// world size against world 1 (harness/record/compare.h).
#include <cmath>

#include "harness/record/compare.h"
#include "harness/record/json_read.h"
#include "harness/record/record.h"

namespace fg {
using nlohmann::json;

// -- fingerprints --------------------------------------------------------------

namespace {

struct Tol {
  double rtol, atol;
};

bool tolerance_for(const std::string& dtype, Tol* t) {
  // torch.testing.assert_close's defaults; integers and bool are exact.
  if (dtype == "bf16")
    *t = {1.6e-2, 1e-5};
  else if (dtype == "f16")
    *t = {1e-3, 1e-5};
  else if (dtype == "f32")
    *t = {1.3e-6, 1e-5};
  else if (dtype == "f64")
    *t = {1e-7, 1e-7};
  else if (dtype == "i64" || dtype == "i32" || dtype == "u8" || dtype == "bool")
    *t = {0, 0};
  else
    return false;
  return true;
}

// NaN equals NaN here: matching NaN counts are checked separately, and a sum
// over a tensor holding NaN is NaN (stored as null) on both sides.
bool near(double x, double y, double tol) {
  if (x == y) return true;
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return false;
  return std::fabs(x - y) <= tol;
}

// Tolerance scales must stay finite even when the data holds Inf or NaN.
double scale(double x) { return std::isfinite(x) ? std::fabs(x) : 0.0; }

}  // namespace

bool fingerprints_close(const record::Fingerprint& a, const record::Fingerprint& b, std::string* why) {
  using record::Fingerprint;
  std::string sink;
  std::string& w = why ? *why : sink;
  auto differ = [&](const std::string& what, const std::string& x, const std::string& y) {
    w = what + " " + x + " vs " + y;
    return false;
  };
  const std::string da = a.dtype.value_or(""), db = b.dtype.value_or("");
  if (da != db) return differ("dtype", da, db);
  Tol tol{};
  if (!tolerance_for(da, &tol)) {
    w = "unknown dtype '" + da + "'";
    return false;
  }
  if (!a.shape || !b.shape) {
    w = "fingerprint lacks shape";
    return false;
  }
  if (*a.shape != *b.shape) return differ("shape", json(*a.shape).dump(), json(*b.shape).dump());
  struct Count {
    std::optional<long long> Fingerprint::*count;
    const char* name;
  };
  for (const Count& k : {Count{&Fingerprint::numel, "numel"}, Count{&Fingerprint::nan, "nan"},
                         Count{&Fingerprint::inf, "inf"}}) {
    const auto& x = a.*k.count;
    const auto& y = b.*k.count;
    if (!x || !y) {
      w = std::string("fingerprint lacks ") + k.name;
      return false;
    }
    if (*x != *y) return differ(k.name, std::to_string(*x), std::to_string(*y));
  }
  struct Figure {
    std::optional<double> Fingerprint::*figure;
    const char* name;
  };
  for (const Figure& k : {Figure{&Fingerprint::sum, "sum"}, Figure{&Fingerprint::sumsq, "sumsq"},
                          Figure{&Fingerprint::max_abs, "max_abs"}})
    if (!(a.*k.figure) || !(b.*k.figure)) {
      w = std::string("fingerprint lacks ") + k.name;
      return false;
    }
  const double n = static_cast<double>(*a.numel);
  auto per = [&](double total) { return n > 0 ? total / n : 0.0; };
  double rms_a = std::sqrt(per(*a.sumsq));
  double rms_b = std::sqrt(per(*b.sumsq));
  double mean_a = per(*a.sum), mean_b = per(*b.sum);
  double max_a = *a.max_abs, max_b = *b.max_abs;
  // The slack factor 4 on rtol: compiled code may reorder reductions and fuse
  // or split roundings, so its results stray further from the golden than
  // one eager op's rounding does; torch's defaults alone would flag that.
  const double k = 4 * tol.rtol;
  // The whole output's rms and mean move far less than one element does:
  // measured on the cpu goldens (2026-11-27), at most 3.6e-6 of the rms
  // across environments (avx2 goldens run on avx512f) and 6.5e-5 across
  // world sizes, where single samples moved up to 8.7e-3. So in bf16,
  // whose per-element slack (4 x 1.6e-2) let a 5% scale of a whole output
  // pass a check (an audit), they get rtol / 4 (4e-3 of the rms) once an
  // output has 1024 elements or more; a smaller one keeps k, and so do f16
  // (rtol / 4 would be half its ulp, and no cpu golden measured it) and
  // f32 / f64 (4 x rtol is already tight).
  const double k_whole = da == "bf16" && n >= 1024 ? tol.rtol / 4 : k;
  double rms = std::max(scale(rms_a), scale(rms_b));
  auto check = [&](const char* what, double x, double y, double allowed) {
    if (near(x, y, allowed)) return true;
    w = std::string(what) + " " + fmt(x) + " vs " + fmt(y) + " (allowed difference " +
        fmt(allowed) + ")";
    return false;
  };
  if (!check("rms", rms_a, rms_b, k_whole * rms + tol.atol)) return false;
  if (!check("mean", mean_a, mean_b, k_whole * rms + tol.atol)) return false;
  if (!check("max_abs", max_a, max_b, k * std::max(scale(max_a), scale(max_b)) + tol.atol))
    return false;
  const std::vector<double> none;
  const std::vector<double>& sa = a.samples ? *a.samples : none;
  const std::vector<double>& sb = b.samples ? *b.samples : none;
  if (sa.size() != sb.size())
    return differ("sample count", std::to_string(sa.size()), std::to_string(sb.size()));
  for (size_t i = 0; i < sa.size(); ++i) {
    double x = sa[i], y = sb[i];
    double allowed = tol.atol + k * std::max(scale(x), scale(y)) + k * rms;
    std::string what = "samples[" + std::to_string(i) + "]";
    if (!check(what.c_str(), x, y, allowed)) return false;
  }
  w.clear();
  return true;
}

Verdict compare_across_worlds(const record::RunRecord& base, const record::RunRecord& other,
                              const std::string& check_id) {
  using namespace record;
  Verdict v;
  v.check_id = check_id;
  std::string world = "world " + (other.world_size ? std::to_string(*other.world_size) : std::string());
  auto pick = [](const RunRecord& rec) -> const RankRecord* {
    auto ranks = ranks_by_id(rec);
    if (ranks.empty()) return nullptr;
    auto zero = ranks.find(0);
    return zero != ranks.end() ? zero->second : ranks.begin()->second;
  };
  const RankRecord* b = pick(base);
  const RankRecord* o = pick(other);
  if (!b || !o) {
    v.findings.push_back(
        {VerdictKind::CannotTest,
         std::string(b ? world : "world 1") + " record has no ranks: the run did not finish"});
    v.kind = VerdictKind::CannotTest;
    return v;
  }
  auto outs = outputs_by_name(*o);
  for (auto& [name, bo] : outputs_by_name(*b)) {
    auto it = outs.find(name);
    if (it == outs.end()) {
      v.findings.push_back({VerdictKind::Fail, "output " + name + " is missing at " + world});
      continue;
    }
    const OutputDigest& ot = *it->second;
    const bool shard = ot.replicated && !*ot.replicated;
    if (shard && !ot.gathered) {
      // a .fg without layouts: each rank ran the whole program on its own
      // copy, a different program from world 1's
      v.findings.push_back({VerdictKind::Pass, "output " + name + " is not compared with world 1: the repro declares "
                                               "no layouts, so each rank of " + world + " runs its own copy"});
      continue;
    }
    const auto& fa = bo->fingerprint;
    const auto& fb = shard ? ot.gathered->fingerprint : ot.fingerprint;
    std::string why = "fingerprint missing";
    if (!fa || !fb || !fingerprints_close(*fa, *fb, &why))
      v.findings.push_back({VerdictKind::Fail, "output " + name + ": " + world +
                                                   (shard ? ", gathered from every rank," : " rank 0") +
                                                   " drifts from world 1: " + why});
  }
  v.kind = overall_kind(v.findings);
  return v;
}

}  // namespace fg
