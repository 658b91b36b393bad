#include "harness/cli/process.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fusion/errors.h"

namespace fg::cli {

int batch_depth = 0;

namespace {

// What a case writes to file descriptors 1 and 2 directly, past std::cout
// and std::cerr (a child process such as Graphviz's dot under --svg, or the
// shell saying it found no dot; a library's own fprintf), caught in two
// temporary files for the length of one case. The real descriptors are
// kept aside and put back, whatever the case throws.
class FdCapture {
 public:
  FdCapture() : out_(::dup(1)), err_(::dup(2)) {
    if (out_ < 0 || err_ < 0) throw fg::InternalError("--batch: cannot duplicate stdout/stderr");
  }
  ~FdCapture() {
    restore();
    ::close(out_);
    ::close(err_);
  }
  // from here on, descriptors 1 and 2 write to fresh temporary files
  void begin() {
    std::fflush(nullptr);
    tmp_out_.reset(std::tmpfile());
    tmp_err_.reset(std::tmpfile());
    if (!tmp_out_ || !tmp_err_) throw fg::InternalError("--batch: cannot make a temporary file");
    if (::dup2(::fileno(tmp_out_.get()), 1) < 0 || ::dup2(::fileno(tmp_err_.get()), 2) < 0) {
      restore();
      throw fg::InternalError("--batch: cannot redirect stdout/stderr");
    }
  }
  // the real descriptors back; what the case wrote to each
  std::pair<std::string, std::string> end() {
    restore();
    return {slurp(tmp_out_.get()), slurp(tmp_err_.get())};
  }

 private:
  struct Closer {
    void operator()(FILE* f) const { std::fclose(f); }
  };
  void restore() {
    std::fflush(nullptr);
    ::dup2(out_, 1);
    ::dup2(err_, 2);
  }
  static std::string slurp(FILE* f) {
    std::string s;
    if (!f) return s;
    std::rewind(f);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    return s;
  }
  int out_, err_;
  std::unique_ptr<FILE, Closer> tmp_out_, tmp_err_;
};

}  // namespace

// `explain --batch FILE` and `run --batch FILE`: each line of FILE a case of
// the command, run here as `fusegate COMMAND LINE` would run as a process,
// its standard output and error caught and written framed: what it writes
// through std::cout and std::cerr first, then what reached the descriptors
// directly (FdCapture; a process of its own would have them in the order
// written).
// Starting fusegate costs about half a second of CPU (LibTorch's shared
// libraries and static initialisers), more than explaining most cases or
// running a small graph eagerly: the explain snapshot test runs its 396
// repro cases through a few explain batches, the translation check
// (tests/parity/check_translation.py) its 181 eager runs through run
// batches. A case keeps nothing from the one before: explain compiles from
// the repro or file it is given; a run launches its own ranks (the rank
// spawner, harness/run/spawner.h, serves every case of the batch). The
// explain snapshot test runs every 25th of its cases alone too, and the
// cli test `run_batch` runs cases both ways, and fail where the bytes
// differ.
int command_batch(const std::string& command, const std::string& file) {
  std::ifstream f;
  std::istream* in = &std::cin;
  if (file != "-") {
    if (std::filesystem::is_directory(file))
      fg::user_error(command + " --batch " + file + ": is a folder; give a file");
    f.open(file);
    if (!f) fg::user_error(command + " --batch " + file + ": cannot be read");
    in = &f;
  }
  // the real streams, put back whatever a case throws
  struct Restore {
    std::streambuf* out = std::cout.rdbuf();
    std::streambuf* err = std::cerr.rdbuf();
    ~Restore() {
      std::cout.rdbuf(out);
      std::cerr.rdbuf(err);
    }
  } real;
  FdCapture fds;  // declared after `real`: the descriptors come back first
  int n = 0;
  std::string line;
  while (std::getline(*in, line)) {
    std::istringstream words(line);
    std::vector<std::string> args = {"fusegate", command};
    for (std::string w; words >> w;) args.push_back(w);
    if (args.size() == 2) continue;  // a blank line
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::ostringstream out, err;
    std::cout.rdbuf(out.rdbuf());
    std::cerr.rdbuf(err.rdbuf());
    fds.begin();
    ++batch_depth;  // a case holding --batch (or --batch=FILE) is its own exit 2
    const int rc = guarded_main(static_cast<int>(args.size()), argv.data());
    --batch_depth;
    const auto [fd_out, fd_err] = fds.end();
    std::cout.rdbuf(real.out);
    std::cerr.rdbuf(real.err);
    const std::string o = out.str() + fd_out, e = err.str() + fd_err;
    std::cout << "#fusegate-" << command << "-case " << n++ << " exit " << rc << " out " << o.size() << " err " << e.size()
              << "\n" << o << e;
  }
  if (in->bad())
    fg::user_error(command + " --batch " + file + ": reading it failed after " + std::to_string(n) + " case(s)");
  std::cout.flush();
  return 0;
}

}  // namespace fg::cli
