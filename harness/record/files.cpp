#include "harness/record/files.h"

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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "fusion/errors.h"

namespace fg {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

}  // namespace fg
