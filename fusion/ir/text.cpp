#include "fusion/ir/text.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "fusion/errors.h"

namespace fg {

// ----------------------------------------------------------------- parsing

namespace {

enum class Tok { Ident, Int, Float, String, Ref, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier, ref name (no '%'), decoded string, or number text
  std::string raw;   // as written, for "found '...'" in errors
  int line = 1, col = 1;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Tokens are produced on demand so that an error early in the file is
// reported before a lexical problem further down.
class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    user_error(file_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg);
  }

  Token next() {
    skip_space();
    Token t;
    t.line = line_;
    t.col = col_;
    size_t start = i_;
    if (i_ >= s_.size()) {
      t.kind = Tok::End;
      return t;
    }
    char c = s_[i_];
    if (ident_start(c)) {
      while (i_ < s_.size() && ident_char(s_[i_])) bump();
      t.kind = Tok::Ident;
      t.text = s_.substr(start, i_ - start);
    } else if (c == '%') {
      bump();
      size_t name_start = i_;
      if (i_ < s_.size() && ident_start(s_[i_])) {
        while (i_ < s_.size() && ident_char(s_[i_])) bump();
      } else if (i_ < s_.size() && digit(s_[i_])) {
        while (i_ < s_.size() && digit(s_[i_])) bump();
      } else {
        fail(t.line, t.col, "expected a name or number after '%'");
      }
      t.kind = Tok::Ref;
      t.text = s_.substr(name_start, i_ - name_start);
    } else if (digit(c) || (c == '-' && i_ + 1 < s_.size() && digit(s_[i_ + 1]))) {
      lex_number(t);
    } else if (c == '-' && (word_at(i_ + 1, "inf") || word_at(i_ + 1, "nan"))) {
      for (int k = 0; k < 4; ++k) bump();
      t.kind = Tok::Float;
      t.text = s_.substr(start, 4);
    } else if (c == '"') {
      lex_string(t);
    } else if (std::strchr("()[]{},:=", c)) {
      bump();
      t.kind = Tok::Punct;
      t.text = std::string(1, c);
    } else {
      fail(t.line, t.col, std::string("unexpected character '") + c + "'");
    }
    t.raw = s_.substr(start, i_ - start);
    return t;
  }

 private:
  void bump() {
    if (s_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }

  void skip_space() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') bump();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        bump();
      } else {
        break;
      }
    }
  }

  // `w` appears at `at` as a whole word (not the prefix of an identifier).
  bool word_at(size_t at, const char* w) const {
    size_t n = std::strlen(w);
    return s_.compare(at, n, w) == 0 && (at + n >= s_.size() || !ident_char(s_[at + n]));
  }

  void lex_number(Token& t) {
    size_t start = i_;
    bool is_float = false;
    if (s_[i_] == '-') bump();
    while (i_ < s_.size() && digit(s_[i_])) bump();
    if (i_ < s_.size() && s_[i_] == '.') {
      is_float = true;
      bump();
      while (i_ < s_.size() && digit(s_[i_])) bump();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      is_float = true;
      bump();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) bump();
      if (i_ >= s_.size() || !digit(s_[i_]))
        fail(t.line, t.col, "malformed number '" + s_.substr(start, i_ - start) + "'");
      while (i_ < s_.size() && digit(s_[i_])) bump();
    }
    t.kind = is_float ? Tok::Float : Tok::Int;
    t.text = s_.substr(start, i_ - start);
  }

  void lex_string(Token& t) {
    bump();  // opening quote
    for (;;) {
      if (i_ >= s_.size() || s_[i_] == '\n') fail(t.line, t.col, "unterminated string");
      char c = s_[i_];
      if (c == '"') {
        bump();
        break;
      }
      if (c == '\\') {
        int line = line_, col = col_;
        bump();
        char e = i_ < s_.size() ? s_[i_] : '\0';
        switch (e) {
          case '"': t.text += '"'; break;
          case '\\': t.text += '\\'; break;
          case 'n': t.text += '\n'; break;
          case 't': t.text += '\t'; break;
          default: fail(line, col, "unknown escape in string");
        }
        bump();
        continue;
      }
      t.text += c;
      bump();
    }
    t.kind = Tok::String;
  }

  const std::string& s_;
  std::string file_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : lex_(text, file), file_(file) { cur_ = lex_.next(); }

  // Parses the whole file; `starts` gets the token that opens each graph.
  std::vector<Graph> parse_file(std::vector<Token>* starts) {
    std::vector<Graph> gs;
    do {
      if (starts) starts->push_back(cur_);
      gs.push_back(parse_one());
    } while (cur_.kind != Tok::End);
    return gs;
  }

  [[noreturn]] void fail(const Token& t, const std::string& msg) const { lex_.fail(t.line, t.col, msg); }

 private:
  static std::string describe(const Token& t) {
    return t.kind == Tok::End ? "end of input" : "'" + t.raw + "'";
  }

  Token take() {
    Token t = std::move(cur_);
    cur_ = lex_.next();
    return t;
  }
  bool at_punct(char c) const { return cur_.kind == Tok::Punct && cur_.text[0] == c; }
  bool at_word(const char* w) const { return cur_.kind == Tok::Ident && cur_.text == w; }

  Token expect_punct(char c) {
    if (!at_punct(c)) fail(cur_, std::string("expected '") + c + "' but found " + describe(cur_));
    return take();
  }
  Token expect_kind(Tok k, const char* what) {
    if (cur_.kind != k) fail(cur_, std::string("expected ") + what + " but found " + describe(cur_));
    return take();
  }
  void expect_word(const char* w) {
    if (!at_word(w)) fail(cur_, std::string("expected '") + w + "' but found " + describe(cur_));
    take();
  }

  int64_t int_value(const Token& t) {
    int64_t v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size()) fail(t, "integer " + t.raw + " out of range");
    return v;
  }
  int64_t parse_int() { return int_value(expect_kind(Tok::Int, "an integer")); }

  double float_value(const Token& t) {
    const std::string& s = t.text;
    using lim = std::numeric_limits<double>;
    if (s == "inf" || s == "-inf") return s[0] == '-' ? -lim::infinity() : lim::infinity();
    if (s == "nan" || s == "-nan") return s[0] == '-' ? -lim::quiet_NaN() : lim::quiet_NaN();
    double v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(t, "number " + t.raw + " out of range");
    return v;
  }

  std::vector<int64_t> parse_int_list() {
    std::vector<int64_t> v;
    expect_punct('[');
    if (!at_punct(']')) {
      v.push_back(parse_int());
      while (at_punct(',')) {
        take();
        v.push_back(parse_int());
      }
    }
    expect_punct(']');
    return v;
  }

  // A tensor type; every dim at least 1 (`dynamic_ok`: -1 stands for a
  // size known only at run time, as nonzero gives), and the element count
  // within what the compiler's 64-bit index arithmetic holds.
  TensorType parse_type(bool dynamic_ok = false) {
    Token d = expect_kind(Tok::Ident, "a type");
    TensorType t;
    if (!parse_dtype(d.text, &t.dtype)) fail(d, "unknown dtype '" + d.text + "'");
    Token dims = cur_;
    t.shape = parse_int_list();
    int64_t numel = 1;
    for (size_t k = 0; k < t.shape.size(); ++k) {
      const int64_t x = t.shape[k];
      if (x == -1 && dynamic_ok) continue;
      if (x < 1)
        fail(dims, "dim " + std::to_string(k) + " of " + t.str() + " is " + std::to_string(x) +
                       ": every dim must be at least 1");
      if (__builtin_mul_overflow(numel, x, &numel) || numel > kMaxTypeNumel)
        fail(dims, t.str() + " has more than 2^48 elements: beyond what fusegate compiles");
    }
    return t;
  }
  static constexpr int64_t kMaxTypeNumel = int64_t{1} << 48;

  Attr parse_attr_value() {
    switch (cur_.kind) {
      case Tok::Int: return int_value(take());
      case Tok::Float: return float_value(take());
      case Tok::String: return take().text;
      case Tok::Ident:
        if (cur_.text == "inf" || cur_.text == "nan") return float_value(take());
        break;
      case Tok::Punct:
        if (at_punct('[')) return parse_int_list();
        break;
      default: break;
    }
    fail(cur_, "expected an attribute value but found " + describe(cur_));
  }

  // `{k = v, ...}`; attr_keys_ keeps where each key was written
  Attrs parse_attrs() {
    Attrs attrs;
    attr_keys_.clear();
    expect_punct('{');
    for (;;) {
      Token key = expect_kind(Tok::Ident, "an attribute name");
      expect_punct('=');
      Attr v = parse_attr_value();
      if (!attrs.emplace(key.text, std::move(v)).second) fail(key, "duplicate attribute '" + key.text + "'");
      attr_keys_[key.text] = key;
      if (!at_punct(',')) break;
      take();
    }
    expect_punct('}');
    return attrs;
  }

  // The op reference's verdict on an op's attributes, at the key at fault
  // (a missing one: at `at`, the op or the input).
  void check_attr_table(Op op, const Attrs& attrs, const Token& at, const std::string& what) {
    AttrProblem bad;
    if (check_attrs(op, attrs, &bad)) return;
    auto k = attr_keys_.find(bad.key);
    fail(k != attr_keys_.end() && !bad.key.empty() ? k->second : at, what + ": " + bad.message);
  }

  // A ref whose text is the node's own id stays unnamed, so that printing
  // gives back the same text; any other text becomes the node's name.
  std::string define(const Token& ref, int id) {
    if (!values_.emplace(ref.text, id).second) fail(ref, "redefinition of value %" + ref.text);
    return ref.text == std::to_string(id) ? std::string() : ref.text;
  }

  int use() {
    Token r = expect_kind(Tok::Ref, "a value like %x");
    auto it = values_.find(r.text);
    if (it == values_.end()) fail(r, "use of undefined value %" + r.text);
    return it->second;
  }

  std::vector<int> parse_uses() {
    std::vector<int> ids;
    if (cur_.kind != Tok::Ref) return ids;
    ids.push_back(use());
    while (at_punct(',')) {
      take();
      ids.push_back(use());
    }
    return ids;
  }

  // return %a, %b {shard = 1}: each output may say how it is laid out
  void parse_returns(Graph& g) {
    if (cur_.kind != Tok::Ref) return;
    std::vector<Attrs> notes;
    bool any = false;
    for (;;) {
      Token r = cur_;
      g.outputs.push_back(use());
      notes.emplace_back();
      if (at_punct('{')) {
        Token at = cur_;
        notes.back() = parse_attrs();
        const std::string bad = check_annotations(notes.back(), g.node(g.outputs.back()).type, true);
        if (!bad.empty()) fail(at, "output %" + r.text + ": " + bad);
        any = true;
      }
      if (!at_punct(',')) break;
      take();
    }
    if (any) g.output_attrs = std::move(notes);
  }

  // One statement of the body: `disabled "what" { ... }`, or a value
  // `%x = op(...) ...`, `%x = if(%p) : type { ... yield %a } else { ... yield %b }`.
  void parse_body_stmt(Graph& g) {
    if (at_word("expect")) {
      // `expect break "REASON"`: a graph break the repro is written to have
      take();
      if (!at_word("break")) fail(cur_, "expected 'break' after 'expect' (expect break \"REASON\")");
      take();
      const Token reason = expect_kind(Tok::String, "the break's reason, a string (the start of it is enough)");
      if (reason.text.empty()) fail(reason, "an expected break needs its reason; an empty one matches any break");
      g.expected_breaks.push_back(reason.text);
      return;
    }
    if (at_word("disabled")) {
      Token kw = take();
      const std::string what = expect_kind(Tok::String, "the disabled region's name, a string").text;
      expect_punct('{');
      // the region's line: where Dynamo's break is, at the call
      const Attrs tag{{"@disabled", int64_t{disabled_count_++}}, {"@disabled_name", what},
                      {"@disabled_line", int64_t{kw.line}}};
      while (!at_punct('}')) {
        if (at_word("disabled") || at_word("return")) fail(cur_, "a disabled region holds statements only, no nested region");
        parse_stmt(g, tag);
      }
      take();
      return;
    }
    parse_stmt(g, {});
  }

  // The arm of an if: statements, then `yield %v`; its values are seen by
  // nothing outside it.
  int parse_arm(Graph& g, const Attrs& tag) {
    expect_punct('{');
    const std::map<std::string, int> outside = values_;
    while (!at_word("yield")) {
      if (cur_.kind != Tok::Ref) fail(cur_, "expected a statement or 'yield %value' in the arm of an if");
      parse_stmt(g, tag);
    }
    take();
    const int v = use();
    expect_punct('}');
    values_ = outside;
    return v;
  }

  void parse_if(Graph& g, const Token& ref, const Token& op_tok, const Attrs& tag) {
    if (!tag.empty()) fail(op_tok, "an if inside an if or a disabled region is not supported");
    expect_punct('(');
    const int pred = use();
    expect_punct(')');
    expect_punct(':');
    Token type_tok = cur_;
    TensorType declared = parse_type();
    const int64_t k = if_count_++;
    const int then_v = parse_arm(g, {{"@if", k}, {"@arm", int64_t{1}}});
    expect_word("else");
    const int else_v = parse_arm(g, {{"@if", k}, {"@arm", int64_t{0}}});
    const std::string name = define(ref, static_cast<int>(g.nodes.size()));
    try {
      g.add(Op::If, {pred, then_v, else_v}, {{"@if", k}}, nullptr, name, SourceLoc{file_, ref.line, ""});
    } catch (const UserError& e) {
      fail(op_tok, e.what());
    }
    if (g.nodes.back().type != declared)
      fail(type_tok, "declared type " + declared.str() + " but the arms yield " + g.nodes.back().type.str());
  }

  void parse_stmt(Graph& g, const Attrs& tag) {
    Token ref = expect_kind(Tok::Ref, "a statement like '%x = op(...) : type' or 'return'");
    int line = ref.line;
    int id = static_cast<int>(g.nodes.size());
    if (values_.count(ref.text)) fail(ref, "redefinition of value %" + ref.text);
    expect_punct('=');
    Token op_tok = expect_kind(Tok::Ident, "an op name");
    if (op_tok.text == "if") return parse_if(g, ref, op_tok, tag);
    Op op;
    if (!op_from_name(op_tok.text, &op)) fail(op_tok, unknown_op_message(op_tok.text));
    if (op == Op::Input) fail(op_tok, "inputs are declared in the graph header, not as statements");
    if (op == Op::If) fail(op_tok, "if takes a block: %x = if(%p) : type { ... yield %a } else { ... yield %b }");
    expect_punct('(');
    // the value is defined after its operands are read: %2 = relu(%2) uses
    // an undefined value
    std::vector<int> ins = parse_uses();
    expect_punct(')');
    std::string name = define(ref, id);
    Attrs attrs;
    if (at_punct('{')) {
      attrs = parse_attrs();
    } else {
      attr_keys_.clear();
    }
    check_attr_table(op, attrs, op_tok, op_tok.text);
    attrs.insert(tag.begin(), tag.end());  // the blocks it is in ('@' keys: no text can spell them)
    expect_punct(':');
    Token type_tok = cur_;
    TensorType declared = parse_type(op == Op::Nonzero);
    // Graph::add takes full's type on trust, so check here what verify would
    // otherwise report without a column.
    if (op == Op::Full && !ins.empty()) fail(op_tok, "full takes no inputs");
    try {
      g.add(op, std::move(ins), std::move(attrs), &declared, name, SourceLoc{file_, line, "", op_tok.col});
    } catch (const UserError& e) {
      fail(op_tok, e.what());
    }
    const TensorType& inferred = g.nodes.back().type;
    if (inferred != declared)
      fail(type_tok, "declared type " + declared.str() + " but " + op_name(op) + " gives " + inferred.str());
  }

  Graph parse_one() {
    values_.clear();
    if_count_ = disabled_count_ = 0;
    Graph g;
    Token kw = cur_;
    expect_word("graph");
    g.name = expect_kind(Tok::Ident, "a graph name").text;
    expect_punct('(');
    if (!at_punct(')')) {
      for (;;) {
        Token ref = expect_kind(Tok::Ref, "an input like %x");
        std::string name = define(ref, static_cast<int>(g.nodes.size()));
        expect_punct(':');
        TensorType t = parse_type();
        Attrs notes;
        if (at_punct('{')) {
          Token at = cur_;
          notes = parse_attrs();
          check_attr_table(Op::Input, notes, at, "input %" + ref.text);
          const std::string bad = check_annotations(notes, t, false);
          if (!bad.empty()) fail(at, "input %" + ref.text + ": " + bad);
        }
        g.add(Op::Input, {}, std::move(notes), &t, name, SourceLoc{file_, ref.line, "", ref.col});
        if (!at_punct(',')) break;
        take();
      }
    }
    expect_punct(')');
    expect_punct('{');
    while (!at_word("return")) parse_body_stmt(g);
    take();
    parse_returns(g);
    expect_punct('}');
    try {
      verify(g, /*as_user=*/true);
    } catch (const UserError& e) {
      fail(kw, e.what());
    }
    return g;
  }

  Lexer lex_;
  std::string file_;
  Token cur_;
  std::map<std::string, int> values_;  // ref text -> node id, per graph
  std::map<std::string, Token> attr_keys_;  // the last attribute list's keys
  int64_t if_count_ = 0, disabled_count_ = 0;  // blocks so far in this graph
};

}  // namespace

std::vector<Graph> parse_graphs(const std::string& text, const std::string& file) {
  Parser p(text, file);
  return p.parse_file(nullptr);
}

Graph parse_graph(const std::string& text, const std::string& file) {
  Parser p(text, file);
  std::vector<Token> starts;
  std::vector<Graph> gs = p.parse_file(&starts);
  if (gs.size() != 1) p.fail(starts[1], "expected a single graph but found " + std::to_string(gs.size()));
  return std::move(gs[0]);
}

std::vector<Graph> parse_graph_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error("cannot read " + path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) user_error("cannot read " + path + ": read failed");
  return parse_graphs(ss.str(), path);
}

}  // namespace fg
