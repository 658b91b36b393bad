// The record types' one list of fields (`list_fields`: not `visit`, which
// argument-dependent lookup would also find as std::visit), and what follows
// from it: reading JSON, writing it, and the shape the schema test compares
// with record.schema.json (harness/record/record.h).
#include <cmath>
#include <limits>
#include <type_traits>

#include "harness/record/record.h"

namespace fg::record {
using nlohmann::json;

namespace {

enum class Need { Optional, Required };

// -- the fields, once ---------------------------------------------------------

template <class V> void list_fields(V& v, Break& x) {
  v("reason", x.reason, Need::Required);
  v("location", x.location, Need::Required);
}
template <class V> void list_fields(V& v, Launch& x) {
  v("name", x.name, Need::Required);
  v("kind", x.kind, Need::Required);
  v("ops", x.ops);
  v("graph", x.graph);
  v("device_kernels", x.device_kernels);
  v("aten_ops", x.aten_ops);
}
template <class V> void list_fields(V& v, Fingerprint& x) {
  v("dtype", x.dtype);
  v("shape", x.shape);
  v("numel", x.numel);
  v("nan", x.nan);
  v("inf", x.inf);
  v("sum", x.sum);
  v("sumsq", x.sumsq);
  v("max_abs", x.max_abs);
  v("samples", x.samples);
}
template <class V> void list_fields(V& v, Gathered& x) {
  v("shard", x.shard, Need::Required);
  v("exact", x.exact);
  v("fingerprint", x.fingerprint, Need::Required);
}
template <class V> void list_fields(V& v, OutputDigest& x) {
  v("name", x.name, Need::Required);
  v.exact("exact", x.exact, x.exact_by_environment);
  v("replicated", x.replicated);
  v("fingerprint", x.fingerprint, Need::Required);
  v("gathered", x.gathered);
}
template <class V> void list_fields(V& v, LedgerEntry& x) {
  v("nodes", x.nodes, Need::Required);
  v("outcome", x.outcome, Need::Required);
  v("reason", x.reason);
  v("score", x.score);
  v("graph", x.graph);
  v("round", x.round);
  v("source", x.source);
}
template <class V> void list_fields(V& v, FastPathStatus& x) {
  v("name", x.name, Need::Required);
  v("status", x.status, Need::Required);
  v("shape_classes", x.shape_classes);
}
template <class V> void list_fields(V& v, Hashes& x) {
  v("graphs", x.graphs, Need::Required);
  v("decisions", x.decisions, Need::Required);
  v("collectives", x.collectives, Need::Required);
}
template <class V> void list_fields(V& v, AccuracyOutput& x) {
  v("name", x.name, Need::Required);
  v("pass", x.pass);
  v("allclose_eager", x.allclose_eager);
  v("rmse_vs_fp64", x.rmse_vs_fp64);
  v("eager_rmse_vs_fp64", x.eager_rmse_vs_fp64);
  v("max_abs_vs_eager", x.max_abs_vs_eager);
}
template <class V> void list_fields(V& v, Accuracy& x) {
  v("status", x.status);
  v("outputs", x.outputs);
}
template <class V> void list_fields(V& v, Recompiles& x) {
  v("same_shapes", x.same_shapes, Need::Required);
  v("changed_shapes", x.changed_shapes, Need::Required);
  v("guard", x.guard);
}
template <class V> void list_fields(V& v, StageApplication& x) {
  v("graph", x.graph);
  v("stage", x.stage);
  v("rule", x.rule);
  v("node", x.node);
  v("source", x.source);
  v("held_back", x.held_back);
}
template <class V> void list_fields(V& v, CodegenVariant& x) {
  v("graph", x.graph);
  v("kernel", x.kernel);
  v("variant", x.variant);
  v("nodes", x.nodes);
  v("source", x.source);
  v("held_back", x.held_back);
}
template <class V> void list_fields(V& v, GemmForward& x) {
  v("how", x.how);
  v("graph", x.graph);
  v("checked", x.checked);
  v("choice", x.choice);
  v("choice_config", x.choice_config);
  v("choice_faster_rounds", x.choice_faster_rounds);
  v("choice_ms", x.choice_ms, Need::Required);
  v("top1_ms", x.top1_ms, Need::Required);
  v("kept", x.kept, Need::Required);
}
template <class V> void list_fields(V& v, GemmAlgo& x) {
  v("shape", x.shape, Need::Required);
  v("source", x.source, Need::Required);
  v("type", x.type);
  v("m", x.m);
  v("n", x.n);
  v("k", x.k);
  v("batch", x.batch);
  v("bias", x.bias);
  v("gelu", x.gelu);
  v("addend", x.addend);
  v("algo", x.algo);
  v("config", x.config);
  v("choice", x.choice);
  v("candidates", x.candidates);
  v("us", x.us);
  v("top1_us", x.top1_us);
  v("fallbacks", x.fallbacks);
  v("top1_algo", x.top1_algo);
  v("why", x.why);
  v("forward", x.forward);
}
template <class V> void list_fields(V& v, GemmChoice& x) {
  v("shape", x.shape, Need::Required);
  v("choice", x.choice, Need::Required);
  v("source", x.source);
  v("template_us", x.template_us);
  v("library_us", x.library_us);
}
template <class V> void list_fields(V& v, ResidualPlacement& x) {
  v("site", x.site, Need::Required);
  v("placement", x.placement, Need::Required);
  v("source", x.source);
  v("gemm_ms", x.gemm_ms);
  v("apart_ms", x.apart_ms);
  v("apart_faster_rounds", x.apart_faster_rounds);
  v("how", x.how);
}
template <class V> void list_fields(V& v, Energy& x) {
  v("forwards", x.forwards);
  v("ms", x.ms);
  v("mj_per_forward", x.mj_per_forward);
  v("watts", x.watts);
  v("read_over_ms", x.read_over_ms);
  v("counter_periods", x.counter_periods);
  v("power_limit_w", x.power_limit_w);
  v("sm_mhz", x.sm_mhz);
  v("clock_reasons", x.clock_reasons);
  v("why", x.why);
}
template <class V> void list_fields(V& v, Times& x) {
  v("compile", x.compile);
  v("forward_median", x.forward_median);
  v("forward_min", x.forward_min);
  v("iters", x.iters);
  v("how", x.how);
  v("energy", x.energy);
}
template <class V> void list_fields(V& v, RankRecord& x) {
  v("rank", x.rank, Need::Required);
  v("graph_count", x.graph_count, Need::Required);
  v("graph_break_count", x.graph_break_count, Need::Required);
  v("kernel_count", x.kernel_count, Need::Required);
  v("recompile_count", x.recompile_count, Need::Required);
  v("device_kernel_count", x.device_kernel_count);
  v("aten_op_count", x.aten_op_count);
  v("device_kernels_not_counted", x.device_kernels_not_counted);
  v("aten_ops_not_counted", x.aten_ops_not_counted);
  v("expected_breaks", x.expected_breaks);
  v("breaks", x.breaks, Need::Required);
  v("kernels", x.kernels, Need::Required);
  v("kernel_count_by_kind", x.kernel_count_by_kind, Need::Required);
  v("outputs", x.outputs, Need::Required);
  v("ledger", x.ledger, Need::Required);
  v("fast_paths", x.fast_paths, Need::Required);
  v("hashes", x.hashes, Need::Required);
  v("accuracy", x.accuracy);
  v("recompiles", x.recompiles);
  v("codegen_variants", x.codegen_variants);
  v("stage_applications", x.stage_applications);
  v("gemm_algos", x.gemm_algos);
  v("gemm_choices", x.gemm_choices);
  v("residual_placement", x.residual_placement);
  v("device_kernels_outside_launches", x.device_kernels_outside_launches);
  v("times_ms", x.times_ms);
}
template <class V> void list_fields(V& v, AbWorst& x) {
  v("index", x.index);
  v("at", x.at);
  v("fast", x.fast);
  v("generic", x.generic);
  v("fp64", x.fp64);
}
template <class V> void list_fields(V& v, AbOutput& x) {
  v("name", x.name, Need::Required);
  v("replicated", x.replicated);
  v("dtype", x.dtype);
  v("numel", x.numel);
  v("exact_generic", x.exact_generic);
  v("exact_fast", x.exact_fast);
  v("identical", x.identical);
  v("differing", x.differing);
  v("nonfinite_fast", x.nonfinite_fast);
  v("max_abs_fast_vs_generic", x.max_abs_fast_vs_generic);
  v("max_abs_generic", x.max_abs_generic);
  v("max_abs_fast", x.max_abs_fast);
  v("rel_l2_generic", x.rel_l2_generic);
  v("rel_l2_fast", x.rel_l2_fast);
  v("ulps_fast_vs_generic", x.ulps_fast_vs_generic);
  v("ulps_fast_vs_fp64", x.ulps_fast_vs_fp64);
  v("ulps_generic_vs_fp64", x.ulps_generic_vs_fp64);
  v("worst", x.worst);
}
template <class V> void list_fields(V& v, AbRankRecord& x) {
  v("rank", x.rank, Need::Required);
  v("fast_paths", x.fast_paths);
  v("kernel_count_generic", x.kernel_count_generic);
  v("kernel_count_fast", x.kernel_count_fast);
  v("source_hash", x.source_hash);
  v("ab", x.ab);
}
template <class V> void list_fields(V& v, RunRecord& x) {
  v("format_version", x.format_version, Need::Required);
  v("repro", x.repro, Need::Required);
  v("mode", x.mode, Need::Required);
  v("world_size", x.world_size, Need::Required);
  v("backend", x.backend, Need::Required);
  v("fusion", x.fusion, Need::Required);
  v("fast_paths", x.fast_paths, Need::Required);
  v("nodes", x.nodes);
  v("env", x.env);
  v("environments", x.environments);
  v("ranks", x.ranks, Need::Required);
}

// a type with a field list
template <class T, class = void> struct is_struct : std::false_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

struct Probe {
  template <class T> void operator()(const char*, T&, Need = Need::Optional) {}
  template <class A, class B> void exact(const char*, A&, B&) {}
};
template <class T> struct is_struct<T, std::void_t<decltype(list_fields(std::declval<Probe&>(), std::declval<T&>()))>>
    : std::true_type {};

// declared ahead: the containers' readers and writers below call them for
// their elements
template <class T, std::enable_if_t<is_struct<T>::value, int> = 0>
void read(const json& j, const std::string& at, T& out);
template <class T> void read(const json& j, const std::string& at, std::optional<T>& out);
template <class T> void read(const json& j, const std::string& at, std::vector<T>& out);
template <class T> void read(const json& j, const std::string& at, std::map<std::string, T>& out);
template <class T, std::enable_if_t<is_struct<T>::value, int> = 0> json write(const T& v);
template <class T> json write(const std::vector<T>& v);
template <class T> json write(const std::map<std::string, T>& v);

// -- reading -------------------------------------------------------------------

const char* kind_of(const json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}

[[noreturn]] void mistyped(const std::string& at, const json& j, const char* expected) {
  throw RecordError(at, std::string(kind_of(j)) + ", expected " + expected);
}

void read(const json& j, const std::string& at, std::string& out) {
  if (!j.is_string()) mistyped(at, j, "a string");
  out = j.get<std::string>();
}
void read(const json& j, const std::string& at, long long& out) {
  if (!j.is_number_integer()) mistyped(at, j, "an integer");
  out = j.get<long long>();
}
void read(const json& j, const std::string& at, double& out) {
  // JSON holds no NaN or Inf: a writer stores null
  if (j.is_null()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (!j.is_number()) mistyped(at, j, "a number");
  out = j.get<double>();
}
void read(const json& j, const std::string& at, bool& out) {
  if (!j.is_boolean()) mistyped(at, j, "a boolean");
  out = j.get<bool>();
}
template <class T> void read(const json& j, const std::string& at, std::optional<T>& out) {
  T v{};
  read(j, at, v);
  out = std::move(v);
}
template <class T> void read(const json& j, const std::string& at, std::vector<T>& out) {
  if (!j.is_array()) mistyped(at, j, "an array");
  out.clear();
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    T v{};
    read(j[i], at + "[" + std::to_string(i) + "]", v);
    out.push_back(std::move(v));
  }
}
template <class T> void read(const json& j, const std::string& at, std::map<std::string, T>& out) {
  if (!j.is_object()) mistyped(at, j, "an object");
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) read(*it, at + "." + it.key(), out[it.key()]);
}

struct Reader {
  const json& o;
  const std::string& at;
  std::string path(const char* key) const { return at.empty() ? key : at + "." + key; }
  template <class T> void operator()(const char* key, T& m, Need = Need::Optional) {
    auto it = o.find(key);
    if (it != o.end()) read(*it, path(key), m);
  }
  void exact(const char* key, std::optional<std::string>& one,
             std::optional<std::map<std::string, std::string>>& by_env) {
    auto it = o.find(key);
    if (it == o.end()) return;
    if (it->is_object())
      read(*it, path(key), by_env);
    else if (it->is_string())
      read(*it, path(key), one);
    else
      mistyped(path(key), *it, "a string (a run's digest) or an object (a golden's, by environment)");
  }
};

template <class T, std::enable_if_t<is_struct<T>::value, int>>
void read(const json& j, const std::string& at, T& out) {
  if (!j.is_object()) mistyped(at, j, "an object");
  Reader r{j, at};
  list_fields(r, out);
}

// -- writing -------------------------------------------------------------------

json write(const std::string& v) { return v; }
json write(long long v) { return v; }
json write(double v) { return v; }  // NaN and Inf dump as null
json write(bool v) { return v; }
template <class T> json write(const std::vector<T>& v) {
  json a = json::array();
  for (const T& x : v) a.push_back(write(x));
  return a;
}
template <class T> json write(const std::map<std::string, T>& v) {
  json o = json::object();
  for (const auto& [k, x] : v) o[k] = write(x);
  return o;
}

struct Writer {
  json& o;
  template <class T> void operator()(const char* key, const T& m, Need = Need::Optional) {
    if constexpr (is_optional<T>::value) {
      if (m) o[key] = write(*m);
    } else {
      o[key] = write(m);
    }
  }
  void exact(const char* key, const std::optional<std::string>& one,
             const std::optional<std::map<std::string, std::string>>& by_env) {
    if (by_env)
      o[key] = write(*by_env);
    else if (one)
      o[key] = *one;
  }
};

template <class T, std::enable_if_t<is_struct<T>::value, int>> json write(const T& v) {
  json o = json::object();
  Writer w{o};
  list_fields(w, const_cast<T&>(v));  // the visitor only reads through a Writer
  return o;
}

// -- the shape, for the schema test ----------------------------------------------

template <class T> json shape_of();
struct Shaper {
  json props = json::object();
  json required = json::array();
  template <class T> void operator()(const char* key, T&, Need need = Need::Optional) {
    props[key] = shape_of<T>();
    if (need == Need::Required) required.push_back(key);
  }
  template <class A, class B> void exact(const char* key, A&, B&) {
    props[key] = {{"type", {"string", "object"}}, {"additionalProperties", {{"type", "string"}}}};
    required.push_back(key);
  }
};
template <class T> struct shape_tag {};
template <class T> json shape(shape_tag<std::optional<T>>) { return shape_of<T>(); }
template <class T> json shape(shape_tag<std::vector<T>>) { return {{"type", "array"}, {"items", shape_of<T>()}}; }
template <class T> json shape(shape_tag<std::map<std::string, T>>) {
  return {{"type", "object"}, {"additionalProperties", shape_of<T>()}};
}
inline json shape(shape_tag<std::string>) { return {{"type", "string"}}; }
inline json shape(shape_tag<long long>) { return {{"type", "integer"}}; }
inline json shape(shape_tag<double>) { return {{"type", "number"}}; }
inline json shape(shape_tag<bool>) { return {{"type", "boolean"}}; }
template <class T, std::enable_if_t<is_struct<T>::value, int> = 0> json shape(shape_tag<T>) {
  Shaper s;
  T x{};
  list_fields(s, x);
  return {{"type", "object"}, {"properties", s.props}, {"required", s.required}};
}
template <class T> json shape_of() { return shape(shape_tag<T>{}); }

}  // namespace

RunRecord from_json(const json& j) {
  RunRecord r;
  read(j, "", r);
  return r;
}

template <class T> T part_from_json(const json& j) {
  T v{};
  read(j, "", v);
  return v;
}
template <class T> json part_to_json(const T& v) { return write(v); }

#define FG_RECORD_PART(T)                     \
  template T part_from_json<T>(const json&); \
  template json part_to_json<T>(const T&);
FG_RECORD_PART(RankRecord)
FG_RECORD_PART(LedgerEntry)
FG_RECORD_PART(CodegenVariant)
FG_RECORD_PART(StageApplication)
FG_RECORD_PART(AbRankRecord)
FG_RECORD_PART(std::vector<AbRankRecord>)
FG_RECORD_PART(Fingerprint)
FG_RECORD_PART(AccuracyOutput)
FG_RECORD_PART(Accuracy)
FG_RECORD_PART(std::vector<FastPathStatus>)
FG_RECORD_PART(std::vector<GemmAlgo>)
FG_RECORD_PART(std::vector<GemmChoice>)
FG_RECORD_PART(std::vector<ResidualPlacement>)
#undef FG_RECORD_PART

json to_json(const RunRecord& r) { return write(r); }

json type_shape() { return shape_of<RunRecord>(); }

std::map<long long, const RankRecord*> ranks_by_id(const RunRecord& r) {
  std::map<long long, const RankRecord*> out;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    out.emplace(r.ranks[i].rank.value_or(static_cast<long long>(i)), &r.ranks[i]);
  return out;
}

std::map<std::string, const OutputDigest*> outputs_by_name(const RankRecord& r) {
  std::map<std::string, const OutputDigest*> out;
  for (const OutputDigest& o : r.outputs) out.emplace(o.name, &o);
  return out;
}

}  // namespace fg::record
