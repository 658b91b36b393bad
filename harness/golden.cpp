#include "harness/golden.h"

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
#include "harness/golden_env.h"

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

// Strips nlohmann's "[json.exception.parse_error.101] parse error at line 1,
// column 2: " prefix: the message gives our own position instead.
std::string parse_detail(const std::string& what) {
  std::string s = what;
  size_t close = s.find("] ");
  if (s.rfind("[json.exception", 0) == 0 && close != std::string::npos) s = s.substr(close + 2);
  if (s.rfind("parse error", 0) == 0) {
    size_t colon = s.find(": ");
    if (colon != std::string::npos) s = s.substr(colon + 2);
  }
  return s;
}

// nlohmann reports the error as a count of bytes read; editors want line and
// column of the offending character.
void byte_to_line_col(const std::string& text, size_t byte, int* line, int* col) {
  size_t off = byte == 0 ? 0 : byte - 1;
  off = std::min(off, text.size());
  *line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') {
      ++*line;
      line_start = i + 1;
    }
  }
  *col = static_cast<int>(off - line_start) + 1;
}

// True when arrays and objects in `text` nest deeper than `limit` (strings
// skipped); `at` gets the byte where the limit is passed. One linear scan.
bool nesting_exceeds(const std::string& text, int limit, size_t* at) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) {
        *at = i;
        return true;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
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
                  {"codegen_variants", T::Arr, false, T::Obj}, {"gemm_algos", T::Arr, false, T::Obj},
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
                      {"score", T::Arr, false, T::Num}, {"graph", T::Int, false}, {"round", T::Int, false},
                      {"source", T::Arr, false, T::Str}});
  }
}

}  // namespace

std::optional<json> read_json_file(const std::string& path, const std::string& what, const std::string& hint,
                                   std::string* text_out) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return std::nullopt;
  if (fs::is_directory(st)) user_error(path + ": error: " + what + " path is a folder, not a file; " + hint);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    user_error(path + ": error: cannot read " + what + " (" + std::strerror(err) + "); check its permissions, or " +
               hint);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) user_error(path + ": error: cannot read " + what + " (i/o error); " + hint);
  std::string text = ss.str();
  // Records and proofs nest six levels deep; a file nested far deeper is
  // neither, and would cost the parser and the error locator time and memory
  // that grow with its depth (quadratically, for the locator's paths).
  constexpr int kMaxDepth = 64;
  size_t deep_at = 0;
  if (nesting_exceeds(text, kMaxDepth, &deep_at)) {
    int line = 1, col = 1;
    byte_to_line_col(text, deep_at + 1, &line, &col);
    user_error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + what +
               " nests deeper than " + std::to_string(kMaxDepth) + " levels: it is not one; " + hint);
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    int line = 1, col = 1;
    byte_to_line_col(text, e.byte, &line, &col);
    user_error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: corrupted " + what + " (" +
               parse_detail(e.what()) + "); " + hint);
  } catch (const json::out_of_range& e) {
    // a number beyond a double ("1e400"): the parser says which, not where
    // (found by the fuzz target proof_loader)
    std::string msg = e.what();
    const size_t q = msg.find('\'');
    const std::string number = q == std::string::npos ? "" : msg.substr(q + 1, msg.find('\'', q + 1) - q - 1);
    int line = 1, col = 1;
    const size_t at = number.empty() ? std::string::npos : text.find(number);
    if (at != std::string::npos) byte_to_line_col(text, at + 1, &line, &col);
    user_error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: corrupted " + what +
               " (the number " + (number.empty() ? std::string("here") : number) + " is out of range); " + hint);
  }
  if (text_out) *text_out = std::move(text);
  return j;
}

std::optional<json> load_golden(const std::string& path) {
  std::string text;
  std::optional<json> j = read_json_file(path, "golden file", recovery_hint(path), &text);
  if (!j) return j;
  check_schema(path, text, *j);
  return j;
}

namespace {
// The temporary file write_atomic() is writing now, for a stop signal's
// handler (a fixed buffer: the handler may only call unlink).
char g_inflight[4096];
volatile sig_atomic_t g_inflight_set = 0;

void set_inflight(const std::string& tmp) {
  g_inflight_set = 0;
  if (tmp.size() >= sizeof g_inflight) return;
  std::memcpy(g_inflight, tmp.c_str(), tmp.size() + 1);
  g_inflight_set = 1;
}
}  // namespace

void unlink_inflight_write() {
  if (g_inflight_set) ::unlink(g_inflight);
}

void sweep_stale_writes(const std::string& golden_dir) {
  std::error_code ec;
  if (!fs::is_directory(golden_dir, ec)) return;
  // ".<name>.tmp.<pid>.<n>.<stamp>" (write_atomic): never a golden, whose
  // name does not start with a dot
  std::vector<fs::path> doomed;
  for (auto it = fs::recursive_directory_iterator(golden_dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (name.empty() || name[0] != '.' || at == std::string::npos || !it->is_regular_file(ec)) continue;
    int dots = 0;
    bool digits = true;
    for (size_t i = at + 5; i < name.size(); ++i) {
      if (name[i] == '.') ++dots;
      else digits = digits && name[i] >= '0' && name[i] <= '9';
    }
    if (dots != 2 || !digits) continue;
    const long pid = std::atol(name.c_str() + at + 5);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) doomed.push_back(it->path());
  }
  for (const auto& p : doomed) fs::remove(p, ec);
}

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }
}  // namespace

void remove_tree(const std::string& dir) { nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

namespace {
// Writes text into whatever path names, in place (not atomic): for a path
// that is no regular file, which rename() would replace by one.
void write_fd(const std::string& path, int fd, const std::string& text, bool close_it);

void write_through(const std::string& path, const std::string& text) {
  // a FIFO is opened without waiting: with no reader it would block for ever
  struct stat st {};
  const bool fifo = ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (fifo ? O_NONBLOCK : O_TRUNC), 0666);
  if (fd < 0) {
    int err = errno;
    user_error(path + ": error: " +
               (fifo && err == ENXIO ? std::string("a FIFO with no reader; start its reader first")
                                     : "cannot open it for writing (" + std::string(std::strerror(err)) + ")"));
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  write_fd(path, fd, text, true);
}

// The text down an open descriptor; errors name the path.
void write_fd(const std::string& path, int fd, const std::string& text, bool close_it) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      if (close_it) ::close(fd);
      user_error(path + ": error: cannot write it (" + std::string(std::strerror(err)) + ")");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (close_it && ::close(fd) != 0) {
    int err = errno;
    user_error(path + ": error: cannot write it (close: " + std::string(std::strerror(err)) + ")");
  }
}
}  // namespace

int std_stream_fd(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"})
    if (path.rfind(prefix, 0) == 0) {
      const std::string n = path.substr(std::strlen(prefix));
      if (!n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos) return std::stoi(n);
    }
  return -1;
}

namespace {

// Where writing `p` lands: each folder's links resolved, then the file's own
// link, link by link (a dangling one names where the file would go).
fs::path landing_place(const std::string& p) {
  fs::path cur = fs::absolute(p);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    cur = fs::weakly_canonical(cur.parent_path(), ec) / cur.filename();
    if (!fs::is_symlink(fs::symlink_status(cur, ec))) return cur;
    const fs::path target = fs::read_symlink(cur, ec);
    if (ec) return cur;
    cur = target.is_absolute() ? target : cur.parent_path() / target;
  }
  user_error(p + ": error: too many levels of symbolic links; nothing was written");
}

}  // namespace

std::string link_leaves(const std::string& folder, const std::string& path) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(folder), ec);
  const fs::path lands = landing_place(path);
  const fs::path rel = lands.lexically_relative(root);
  return rel.empty() || *rel.begin() == ".." ? lands.string() : "";
}

void write_inside(const std::string& folder, const std::string& path, const std::string& text) {
  const std::string lands = link_leaves(folder, path);
  if (!lands.empty())
    user_error(path + ": error: is a link that leaves " + folder + " (it would write " + lands +
               "); nothing was written: replace the link with a file, or remove it and write again");
  write_atomic(path, text);
}

void write_atomic(const std::string& path, const std::string& text) {
  // This process's own descriptor (/dev/stdout, /dev/fd/N): written down the
  // descriptor as it is open, after what std::cout / std::cerr hold, never
  // reopened (a file that stdout is redirected to would be truncated, or
  // replaced by the rename).
  if (const int fd = std_stream_fd(path); fd >= 0) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    return write_fd(path, fd, text, false);
  }
  // A symlink is followed link by link, and what it names is written as
  // that path would be: the link is kept, a file replaced atomically (a
  // dangling link's file created so), and a link into this process's own
  // stream stops there (resolving it further would reach the file stdout is
  // redirected to, and replace it).
  std::error_code lec;
  if (fs::is_symlink(path, lec)) {
    fs::path p = path;
    for (int hop = 0; hop < 40 && fs::is_symlink(p, lec) && std_stream_fd(p.string()) < 0; ++hop) {
      const fs::path to = fs::read_symlink(p, lec);
      if (lec) break;
      p = (to.is_absolute() ? to : p.parent_path() / to).lexically_normal();
    }
    if (fs::is_symlink(p, lec) && std_stream_fd(p.string()) < 0)
      user_error(path + ": error: its links do not end (a loop, or more than 40); name a file");
    if (fs::is_directory(p, lec)) user_error(path + ": error: is a link to a folder, not a file: name a file");
    return write_atomic(p.string(), text);
  }
  // A path that is no regular file (a FIFO, a device) is written through:
  // rename() would put a regular file in its place (an audit's `--out
  // /dev/full` replaced the device, as root, and exited 0).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return write_through(path, text);
  fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    user_error(path + ": error: cannot create folder " + dir.string() + " (" + ec.message() +
               "); check the golden folder's permissions");

  // Same folder as the target, so rename() stays within one file system and
  // is atomic. open(O_EXCL) with mode 0666 keeps the umask's say on the final
  // permissions, which mkstemp's 0600 would not.
  static std::atomic<unsigned> counter{0};
  auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter++) + "." + std::to_string(stamp & 0xffffff)))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int err = errno;
    user_error(path + ": error: cannot create a temporary file beside it (" + std::strerror(err) +
               "); check the folder's permissions");
  }
  set_inflight(tmp);
  struct Clear {
    ~Clear() { g_inflight_set = 0; }
  } clear;
  auto fail = [&](const char* step) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    user_error(path + ": error: cannot write golden file (" + step + ": " + std::strerror(err) +
               "); the old file is unchanged, free disk "
               "space or fix permissions and retry");
  };
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // Without the sync a crash after rename() can leave an empty file on some
  // file systems: rename is ordered against metadata, not data.
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    user_error(path + ": error: cannot write golden file (close: " +
               std::string(std::strerror(err)) + "); the old file is unchanged");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    user_error(path + ": error: cannot replace golden file (" + std::string(std::strerror(err)) +
               "); the old file is unchanged, check permissions");
  }
  // Persist the rename itself; failure here loses nothing already visible.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// ---------------------------------------------------------------------------
// Unified diff. Lines keep their '\n' so that a missing final newline counts
// as a change, as in diff(1). The common head and tail are cut first (a bless
// usually touches a few figures), then Hirschberg's linear-space LCS aligns
// the middle: golden files of many ranks with ledgers reach thousands of
// lines, where a full LCS table would cost hundreds of megabytes.
// ---------------------------------------------------------------------------
namespace {

enum class Op { Equal, Del, Ins };

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return out;
}

using Lines = std::vector<std::string>;

// LCS lengths of a[a0,a1) against every prefix (forward) or suffix (reverse)
// of b[b0,b1), in one row of memory.
std::vector<int> lcs_row(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0, size_t b1,
                         bool reverse) {
  size_t m = b1 - b0;
  std::vector<int> prev(m + 1, 0), cur(m + 1, 0);
  for (size_t k = 0; k < a1 - a0; ++k) {
    const std::string& x = reverse ? a[a1 - 1 - k] : a[a0 + k];
    for (size_t j = 1; j <= m; ++j) {
      const std::string& y = reverse ? b[b1 - j] : b[b0 + j - 1];
      cur[j] = x == y ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev;
}

void align(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0, size_t b1,
           std::vector<Op>* ops) {
  if (a0 == a1) {
    ops->insert(ops->end(), b1 - b0, Op::Ins);
    return;
  }
  if (b0 == b1) {
    ops->insert(ops->end(), a1 - a0, Op::Del);
    return;
  }
  if (a1 - a0 == 1) {
    for (size_t j = b0; j < b1; ++j) {
      if (a[a0] == b[j]) {
        ops->insert(ops->end(), j - b0, Op::Ins);
        ops->push_back(Op::Equal);
        ops->insert(ops->end(), b1 - j - 1, Op::Ins);
        return;
      }
    }
    ops->push_back(Op::Del);
    ops->insert(ops->end(), b1 - b0, Op::Ins);
    return;
  }
  size_t mid = a0 + (a1 - a0) / 2;
  std::vector<int> fwd = lcs_row(a, a0, mid, b, b0, b1, false);
  std::vector<int> bwd = lcs_row(a, mid, a1, b, b0, b1, true);
  size_t m = b1 - b0, best = 0;
  int best_len = -1;
  for (size_t k = 0; k <= m; ++k) {
    int len = fwd[k] + bwd[m - k];
    if (len > best_len) {
      best_len = len;
      best = k;
    }
  }
  align(a, a0, mid, b, b0, b0 + best, ops);
  align(a, mid, a1, b, b0 + best, b1, ops);
}

struct Entry {
  Op op;
  size_t old_line;  // 0-based position in the old text before this entry
  size_t new_line;
};

void put_line(std::string* out, char tag, const std::string& line) {
  out->push_back(tag);
  *out += line;
  if (line.empty() || line.back() != '\n') *out += "\n\\ No newline at end of file\n";
}

// Old files or insertions of zero lines name the line before, as diff(1).
std::string range(size_t start, size_t count) {
  return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& old_text, const std::string& new_text,
                         const std::string& old_name, const std::string& new_name) {
  if (old_text == new_text) return "";
  Lines a = split_lines(old_text), b = split_lines(new_text);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;

  std::vector<Op> ops(head, Op::Equal);
  std::vector<Op> middle;
  align(a, head, a.size() - tail, b, head, b.size() - tail, &middle);
  // Within one run of changes print removals before additions, as readers
  // of diffs expect; the alignment may interleave them.
  for (size_t i = 0; i < middle.size();) {
    if (middle[i] == Op::Equal) {
      ops.push_back(Op::Equal);
      ++i;
      continue;
    }
    size_t j = i, dels = 0, ins = 0;
    for (; j < middle.size() && middle[j] != Op::Equal; ++j) (middle[j] == Op::Del ? dels : ins)++;
    ops.insert(ops.end(), dels, Op::Del);
    ops.insert(ops.end(), ins, Op::Ins);
    i = j;
  }
  ops.insert(ops.end(), tail, Op::Equal);

  std::vector<Entry> entries;
  size_t oi = 0, ni = 0;
  for (Op op : ops) {
    entries.push_back({op, oi, ni});
    if (op != Op::Ins) ++oi;
    if (op != Op::Del) ++ni;
  }
  std::vector<size_t> changes;
  for (size_t k = 0; k < entries.size(); ++k)
    if (entries[k].op != Op::Equal) changes.push_back(k);

  const size_t context = 3;
  std::string out = "--- " + old_name + "\n+++ " + new_name + "\n";
  for (size_t c = 0; c < changes.size();) {
    size_t first = changes[c], last = changes[c];
    size_t d = c + 1;
    while (d < changes.size() && changes[d] - last - 1 <= 2 * context) last = changes[d++];
    size_t begin = first >= context ? first - context : 0;
    size_t end = std::min(entries.size(), last + 1 + context);
    size_t old_count = 0, new_count = 0;
    for (size_t k = begin; k < end; ++k) {
      if (entries[k].op != Op::Ins) ++old_count;
      if (entries[k].op != Op::Del) ++new_count;
    }
    out += "@@ -" + range(entries[begin].old_line, old_count) + " +" +
           range(entries[begin].new_line, new_count) + " @@\n";
    for (size_t k = begin; k < end; ++k) {
      const Entry& e = entries[k];
      if (e.op == Op::Ins)
        put_line(&out, '+', b[e.new_line]);
      else
        put_line(&out, e.op == Op::Del ? '-' : ' ', a[e.old_line]);
    }
    c = d;
  }
  return out;
}

}  // namespace fg
