#include "harness/record/golden.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <sstream>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "fusion/errors.h"
#include "harness/record/files.h"
#include "harness/record/golden_env.h"
#include "harness/record/record.h"

namespace fg {
namespace fs = std::filesystem;
using nlohmann::json;

std::string golden_path(const std::string& root, const std::string& backend,
                        const std::string& repro, const std::string& mode, int world,
                        const std::string& fusion, const std::string& fast_paths, int nnodes) {
  std::string name = mode + "_w" + std::to_string(world);
  if (fusion != "default" && mode != "A") name += "." + fusion;
  if (fast_paths != "proven" && mode != "A") {
    std::string sel = fast_paths;
    std::replace(sel.begin(), sel.end(), ',', '+');
    name += ".fp-" + sel;
  }
  // ranks over several nodes are a configuration of their own (a one-host
  // fast path is blocked there)
  if (nnodes > 1) name += ".nodes" + std::to_string(nnodes);
  name += ".json";
  return (fs::path(root) / backend / repro / name).string();
}

std::string bless_command(const std::string& repro, const std::string& mode, int world,
                          const std::string& backend, const std::string& fusion, const std::string& fast_paths,
                          int nnodes) {
  std::string cmd =
      "fusegate bless " + repro + " --mode " + mode + " --world-size " + std::to_string(world);
  if (!backend.empty() && backend != "cpu") cmd += " --backend " + backend;
  if (!fusion.empty() && fusion != "default" && mode != "A") cmd += " --fusion " + fusion;
  if (!fast_paths.empty() && fast_paths != "proven" && mode != "A") cmd += " --fast-paths " + fast_paths;
  if (nnodes > 1) cmd += " --nnodes " + std::to_string(nnodes);
  return cmd;
}

std::string dump_record(const json& j) {
  // Replace rather than throw on invalid UTF-8: a stray byte in a kernel name
  // must not make a record impossible to bless.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string dump_record(const record::RunRecord& r) { return dump_record(record::to_json(r)); }

namespace {

// Recovers the bless command from a golden path laid out by golden_path(), so
// that an error about a broken file can say how to rebuild it.
std::string recovery_hint(const std::string& path) {
  fs::path p(path);
  std::string file = p.filename().string();
  std::string repro = p.parent_path().filename().string();
  std::string backend = p.parent_path().parent_path().filename().string();
  const std::string ext = ".json";
  if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0) {
    std::string stem = file.substr(0, file.size() - ext.size());
    std::string fusion = "default", fast_paths = "proven";
    int nnodes = 1;
    size_t dot = stem.find('.');
    if (dot != std::string::npos) {
      // MODE_wN[.FUSION][.fp-NAMES][.nodesK]: no part holds a dot
      std::istringstream parts(stem.substr(dot + 1));
      stem = stem.substr(0, dot);
      for (std::string part; std::getline(parts, part, '.');) {
        if (part.rfind("fp-", 0) == 0) {
          fast_paths = part.substr(3);
          std::replace(fast_paths.begin(), fast_paths.end(), '+', ',');
        } else if (part.rfind("nodes", 0) == 0 && part.size() > 5 && part.size() < 9 &&
                   std::all_of(part.begin() + 5, part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          nnodes = std::stoi(part.substr(5));
        } else if (!part.empty()) {
          fusion = part;
        }
      }
    }
    size_t w = stem.rfind("_w");
    if (w != std::string::npos && w > 0 && !repro.empty()) {
      std::string mode = stem.substr(0, w);
      std::string digits = stem.substr(w + 2);
      bool numeric =
          !digits.empty() && digits.size() < 6 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (numeric)
        return "restore it from git or re-bless with: " +
               bless_command(repro, mode, std::stoi(digits), backend, fusion, fast_paths, nnodes);
    }
  }
  return "restore it from git or re-bless it with fusegate bless";
}

// Line of every key and array element in already-valid JSON text, keyed by
// path ("ranks", "ranks[1]", "ranks[1].kernel_count"), so that a schema error
// points at the line to fix. nlohmann keeps no positions, hence this scan.
std::map<std::string, int> value_lines(const std::string& text) {
  struct Frame {
    bool object = false;
    std::string prefix;
    size_t index = 0;
    bool want_key = true;
    std::string key;
  };
  std::map<std::string, int> lines;
  std::vector<Frame> stack;
  int line = 1;
  auto child_path = [&]() -> std::string {
    if (stack.empty()) return "";
    const Frame& f = stack.back();
    if (f.object) return f.prefix.empty() ? f.key : f.prefix + "." + f.key;
    return f.prefix + "[" + std::to_string(f.index) + "]";
  };
  auto value_starts = [&]() {
    if (!stack.empty() && !stack.back().object) lines.emplace(child_path(), line);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      std::string s;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size())
          s += text[++i];
        else
          s += text[i];
        if (text[i] == '\n') ++line;
      }
      if (!stack.empty() && stack.back().object && stack.back().want_key) {
        stack.back().key = s;
        stack.back().want_key = false;
        lines.emplace(child_path(), line);
      } else {
        value_starts();
      }
    } else if (c == '{' || c == '[') {
      value_starts();
      Frame f;
      f.object = c == '{';
      f.prefix = child_path();
      stack.push_back(f);
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object)
          stack.back().want_key = true;
        else
          ++stack.back().index;
      }
    } else if (c != ':' && c != ' ' && c != '\t' && c != '\r') {
      value_starts();
      while (i + 1 < text.size() && std::strchr(",]}: \t\r\n", text[i + 1]) == nullptr) ++i;
    }
  }
  return lines;
}

const char* type_word(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

class SchemaCheck {
 public:
  SchemaCheck(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  // `where` is the path whose line the message names: the key itself when
  // it is mistyped, the enclosing object when the key is missing.
  [[noreturn]] void fail(const std::string& where, const std::string& what) {
    if (lines_.empty()) lines_ = value_lines(text_);
    int line = 1;
    auto it = lines_.find(where);
    if (it != lines_.end()) line = it->second;
    user_error(path_ + ":" + std::to_string(line) + ": error: golden file " + what + "; " +
               recovery_hint(path_));
  }

 private:
  const std::string& path_;
  const std::string& text_;
  std::map<std::string, int> lines_;
};

// Every key a RunRecord defines (harness/RECORD.md), with its type and the
// type of its elements; `required` keys must be there. Keys it does not know
// are left alone (a newer fusegate may add some). A mistyped value is named
// by its JSON path and line: "ranks[0].kernels[1]: integer, expected an
// object".
enum class T { Int, Num, Str, Bool, Obj, Arr };
const char* t_word(T t) {
  switch (t) {
    case T::Int: return "an integer";
    case T::Num: return "a number";
    case T::Str: return "a string";
    case T::Bool: return "a boolean";
    case T::Obj: return "an object";
    case T::Arr: return "an array";
  }
  return "?";
}
bool is(const json& v, T t) {
  switch (t) {
    case T::Int: return v.is_number_integer();
    case T::Num: return v.is_number() || v.is_null();  // NaN and Inf are stored as null
    case T::Str: return v.is_string();
    case T::Bool: return v.is_boolean();
    case T::Obj: return v.is_object();
    case T::Arr: return v.is_array();
  }
  return false;
}

struct Field {
  const char* key;
  T type;
  bool required;
  std::optional<T> elem = std::nullopt;  // arrays: every element; objects: every value
};

void check_fields(SchemaCheck& sc, const json& o, const std::string& at, std::initializer_list<Field> fields) {
  for (const Field& f : fields) {
    const std::string kp = at.empty() ? f.key : at + "." + f.key;
    auto it = o.find(f.key);
    if (it == o.end()) {
      if (f.required) sc.fail(at, "lacks " + kp + " (" + t_word(f.type) + ")");
      continue;
    }
    if (!is(*it, f.type)) sc.fail(kp, "has " + kp + " as " + type_word(*it) + ", expected " + t_word(f.type));
    if (!f.elem) continue;
    size_t i = 0;
    for (auto e = it->begin(); e != it->end(); ++e, ++i) {
      const std::string ep = it->is_object() ? kp + "." + e.key() : kp + "[" + std::to_string(i) + "]";
      if (!is(*e, *f.elem)) sc.fail(ep, "has " + ep + " as " + type_word(*e) + ", expected " + t_word(*f.elem));
    }
  }
}

void check_schema(const std::string& path, const std::string& text, const json& j) {
  SchemaCheck sc(path, text);
  if (!j.is_object())
    sc.fail("", std::string("is ") + type_word(j) + ", expected an object holding a RunRecord");
  // Required: every key `check` compares. A golden without one would have
  // that comparison skipped with nothing said (the header, the environment
  // that decides whether exact digests are compared, the recompiles, the
  // graph/decision/collective hashes, the fast paths, each output's exact
  // digest and fingerprint); every golden this fusegate blesses holds them.
  // a golden without format_version is of format 1, as old as the key
  if (!j.contains("format_version") || !j["format_version"].is_number_integer() ||
      j["format_version"].get<int64_t>() != kRecordFormatVersion)
    sc.fail(j.contains("format_version") ? "format_version" : "",
            "is format_version " + (j.contains("format_version") ? j["format_version"].dump() : std::string("1")) +
                ", and this fusegate reads " + std::to_string(kRecordFormatVersion) +
                " only (format 2 keeps each environment's exact digests): check it with the fusegate that wrote it, "
                "or re-bless it with this one");
  check_fields(sc, j, "",
               {{"repro", T::Str, true}, {"mode", T::Str, true}, {"world_size", T::Int, true},
                {"backend", T::Str, true}, {"fusion", T::Str, true}, {"fast_paths", T::Str, true},
                {"environments", T::Obj, true, T::Obj}, {"ranks", T::Arr, true, T::Obj}});
  // every environment keyed by its own fingerprint: an edited environment,
  // or digests filed under another key, would be compared as what it is not
  const json& envs = j.at("environments");
  if (envs.empty()) sc.fail("environments", "holds no environment: no exact digest can be compared");
  for (auto it = envs.begin(); it != envs.end(); ++it) {
    const std::string ep = "environments." + it.key();
    for (auto f = it->begin(); f != it->end(); ++f)
      if (!f->is_string()) sc.fail(ep + "." + f.key(), "has " + ep + "." + f.key() + " as " + type_word(*f) +
                                                           ", expected a string");
    const std::string fp = environment_fingerprint(*it);
    if (fp != it.key())
      sc.fail(ep, "has an environment filed under " + it.key() + " whose contents hash to " + fp +
                      " (edited by hand?)");
  }
  const json& ranks = j.at("ranks");
  // one rank record for each rank, 0 .. world_size - 1 in order: a golden of
  // two ranks at world size 1 passed (an audit, 2026-11-27)
  if (ranks.size() != static_cast<size_t>(j.at("world_size").get<int64_t>()))
    sc.fail("ranks", "holds " + std::to_string(ranks.size()) + " rank record(s) for world_size " +
                         j.at("world_size").dump() + ", expected one a rank");
  for (size_t r = 0; r < ranks.size(); ++r) {
    const json& rk = ranks[r];
    const std::string rp = "ranks[" + std::to_string(r) + "]";
    check_fields(sc, rk, rp,
                 {{"rank", T::Int, true}, {"graph_count", T::Int, true}, {"graph_break_count", T::Int, true},
                  {"kernel_count", T::Int, true}, {"recompile_count", T::Int, true},
                  {"breaks", T::Arr, true, T::Obj}, {"kernels", T::Arr, true, T::Obj},
                  {"outputs", T::Arr, true, T::Obj}, {"ledger", T::Arr, true, T::Obj},
                  {"kernel_count_by_kind", T::Obj, true, T::Int}, {"device_kernel_count", T::Int, false},
                  {"aten_op_count", T::Int, false}, {"fast_paths", T::Arr, true, T::Obj},
                  {"hashes", T::Obj, true, T::Str}, {"accuracy", T::Obj, false}, {"recompiles", T::Obj, false},
                  {"codegen_variants", T::Arr, false, T::Obj}, {"stage_applications", T::Arr, false, T::Obj},
                  {"gemm_algos", T::Arr, false, T::Obj},
                  {"gemm_choices", T::Arr, false, T::Obj}, {"residual_placement", T::Arr, false, T::Obj}});
    if (rk.at("rank") != static_cast<int64_t>(r))
      sc.fail(rp + ".rank", "has " + rp + ".rank " + rk.at("rank").dump() + ", expected " + std::to_string(r) +
                                " (the ranks in order)");
    for (const char* k : {"graph_count", "graph_break_count", "kernel_count", "recompile_count",
                          "device_kernel_count", "aten_op_count"})
      if (rk.contains(k) && rk[k].get<int64_t>() < 0)
        sc.fail(rp + "." + k, "has " + rp + "." + k + " " + rk[k].dump() + ", expected a count (0 or more)");
    if (rk.contains("hashes") && rk["hashes"].is_object())
      check_fields(sc, rk["hashes"], rp + ".hashes",
                   {{"graphs", T::Str, true}, {"decisions", T::Str, true}, {"collectives", T::Str, true}});
    if (rk.contains("gemm_choices") && rk["gemm_choices"].is_array())
      for (size_t i = 0; i < rk["gemm_choices"].size(); ++i)
        check_fields(sc, rk["gemm_choices"][i], rp + ".gemm_choices[" + std::to_string(i) + "]",
                     {{"shape", T::Str, true}, {"choice", T::Str, true}});
    if (rk.contains("residual_placement") && rk["residual_placement"].is_array())
      for (size_t i = 0; i < rk["residual_placement"].size(); ++i) {
        const json& e = rk["residual_placement"][i];
        const std::string ep = rp + ".residual_placement[" + std::to_string(i) + "]";
        check_fields(sc, e, ep, {{"site", T::Str, true}, {"placement", T::Str, true}});
        if (e.is_object() && e.contains("site") && e["site"] == "")
          sc.fail(ep + ".site", "has " + ep + ".site empty, expected a site as the ledger names it");
        if (e.is_object() && e.contains("placement") && e["placement"].is_string() && e["placement"] != "gemm" &&
            e["placement"] != "apart")
          sc.fail(ep + ".placement", "has " + ep + ".placement " + e["placement"].dump() + ", expected \"gemm\" or \"apart\"");
      }
    for (size_t i = 0; i < rk.at("breaks").size(); ++i)
      check_fields(sc, rk["breaks"][i], rp + ".breaks[" + std::to_string(i) + "]",
                   {{"reason", T::Str, true}, {"location", T::Str, true}});
    for (size_t i = 0; i < rk.at("kernels").size(); ++i)
      check_fields(sc, rk["kernels"][i], rp + ".kernels[" + std::to_string(i) + "]",
                   {{"name", T::Str, true}, {"kind", T::Str, true}, {"ops", T::Arr, false, T::Str},
                    {"graph", T::Int, false}, {"device_kernels", T::Arr, false, T::Str},
                    {"aten_ops", T::Obj, false, T::Int}});
    for (size_t i = 0; i < rk.at("outputs").size(); ++i) {
      const std::string op = rp + ".outputs[" + std::to_string(i) + "]";
      check_fields(sc, rk["outputs"][i], op,
                   {{"name", T::Str, true}, {"exact", T::Obj, true, T::Str}, {"fingerprint", T::Obj, true},
                    {"replicated", T::Bool, false}, {"gathered", T::Obj, false}});
      // one exact digest for each environment, and none for another
      const json& exact = rk["outputs"][i]["exact"];
      for (auto it = envs.begin(); it != envs.end(); ++it)
        if (!exact.contains(it.key()))
          sc.fail(op + ".exact", "lacks " + op + ".exact." + it.key() + " (the exact digest of environment " +
                                     it.key() + ")");
      for (auto it = exact.begin(); it != exact.end(); ++it)
        if (!envs.contains(it.key()))
          sc.fail(op + ".exact." + it.key(), "has " + op + ".exact." + it.key() + ", a digest of no environment in "
                                                                                  "environments");
    }
    if (rk.contains("ledger"))
      for (size_t i = 0; i < rk["ledger"].size(); ++i)
        check_fields(sc, rk["ledger"][i], rp + ".ledger[" + std::to_string(i) + "]",
                     {{"nodes", T::Arr, true, T::Str}, {"outcome", T::Str, true}, {"reason", T::Str, false},
                      {"score", T::Arr, false, T::Int}, {"graph", T::Int, false}, {"round", T::Int, false},
                      {"source", T::Arr, false, T::Str}});
  }
}

}  // namespace
std::optional<record::RunRecord> load_golden(const std::string& path) {
  std::string text;
  std::optional<json> j = read_json_file(path, "golden file", recovery_hint(path), &text);
  if (!j) return std::nullopt;
  check_schema(path, text, *j);
  // and every field the record's types read, of its type
  try {
    return record::from_json(*j);
  } catch (const record::RecordError& e) {
    SchemaCheck(path, text).fail(e.path, "has " + e.path + " as " + e.problem);
  }
}


}  // namespace fg
