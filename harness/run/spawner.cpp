// The rank spawner (harness/run/spawner.h).
#include "harness/run/spawner.h"

#include "fusion/fault.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

extern char** environ;

namespace fg {
namespace {

// the spawner's argument area, padded so that a rank's argv fits in it
constexpr size_t kTitleBytes = 8192;
// how long the launcher waits for the spawner to answer (its start-up, a
// fork): past it the spawner is taken for hung and the ranks are exec'd
constexpr int kAnswerMs = 120000;

// the launcher's side
std::mutex g_mu;
bool g_tried = false;  // the spawner was started, or could not be
int g_fd = -1;         // the socket to the spawner
pid_t g_spawner = -1;  // reaped when this process exits

// the spawner's side
int (*g_entry)(int, char**) = nullptr;
char* g_title = nullptr;  // its argument area, rewritten with each rank's argv
size_t g_title_len = 0;

struct Request {
  int32_t launcher = 0;
  std::string cwd, log;
  std::vector<std::string> argv, env;
};

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void put_u32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string* out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}
void put_list(std::string* out, const std::vector<std::string>& l) {
  put_u32(out, static_cast<uint32_t>(l.size()));
  for (const auto& s : l) put_str(out, s);
}

bool get_u32(int fd, uint32_t* v) { return read_all(fd, v, sizeof *v); }
bool get_str(int fd, std::string* s) {
  uint32_t n = 0;
  if (!get_u32(fd, &n) || n > (64u << 20)) return false;
  s->assign(n, '\0');
  return n == 0 || read_all(fd, s->data(), n);
}
bool get_list(int fd, std::vector<std::string>* l) {
  uint32_t n = 0;
  if (!get_u32(fd, &n) || n > (1u << 20)) return false;
  l->resize(n);
  for (auto& s : *l)
    if (!get_str(fd, &s)) return false;
  return true;
}

bool read_request(int fd, Request* r) {
  uint32_t pid = 0;
  if (!get_u32(fd, &pid)) return false;
  r->launcher = static_cast<int32_t>(pid);
  return get_str(fd, &r->cwd) && get_str(fd, &r->log) && get_list(fd, &r->argv) && get_list(fd, &r->env) &&
         !r->argv.empty();
}

// ps and /proc/PID/cmdline: the rank's argv, as an exec'd rank shows it
void set_title(const std::vector<std::string>& argv) {
  if (!g_title || g_title_len == 0) return;
  size_t at = 0;
  for (const auto& a : argv) {
    if (at >= g_title_len - 1) break;
    const size_t n = std::min(a.size() + 1, g_title_len - 1 - at);
    std::memcpy(g_title + at, a.c_str(), n);
    at += n;
  }
  std::memset(g_title + at, 0, g_title_len - at);
}

// In the rank: become what fork + exec in the launcher would have made.
[[noreturn]] void become_rank(const Request& r) {
  // the spawner's middle process has exited: wait to be the launcher's
  // child (it is the subreaper) before asking to die with it
  for (int i = 0; getppid() != r.launcher; ++i) {
    if (i >= 20000) _exit(127);
    usleep(50);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != r.launcher) _exit(127);  // it died in between
  if (!std::freopen(r.log.c_str(), "w", stderr)) _exit(127);
  if (chdir(r.cwd.c_str()) != 0) _exit(127);
  clearenv();
  for (const auto& e : r.env) putenv(strdup(e.c_str()));
  set_title(r.argv);
  std::vector<std::string> args = r.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::exit(g_entry(static_cast<int>(args.size()), argv.data()));
}

// One request at a time: the rank is forked by a middle process that exits
// at once, so that the rank is reparented to the launcher; the answer (the
// rank's pid, or -1) goes back once that has happened.
[[noreturn]] void serve(int fd) {
  for (;;) {
    Request r;
    if (!read_request(fd, &r)) _exit(0);  // the launcher is done (or gone)
    int p[2];
    int32_t rank = -1;
    if (pipe2(p, O_CLOEXEC) == 0) {
      const pid_t mid = fork();
      if (mid == 0) {
        close(p[0]);
        const pid_t w = fork();
        if (w == 0) {
          close(p[1]);
          close(fd);
          become_rank(r);
        }
        const int32_t v = w;
        (void)!write(p[1], &v, sizeof v);
        _exit(0);
      }
      close(p[1]);
      if (mid > 0) {
        if (!read_all(p[0], &rank, sizeof rank)) rank = -1;
        waitpid(mid, nullptr, 0);
      }
      close(p[0]);
    }
    if (!write_all(fd, &rank, sizeof rank)) _exit(0);
  }
}

// At this process's exit (reap_spawner, or a std::exit that runs static
// destructors): the spawner sees its socket close, leaves, and is reaped here
// rather than left to init.
struct Reaper {
  ~Reaper() { reap_spawner(); }
} g_reaper;

void drop_spawner() {
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  if (g_spawner > 0) {
    kill(g_spawner, SIGKILL);
    waitpid(g_spawner, nullptr, 0);
  }
  g_spawner = -1;
}

// `fusegate _spawner FD PADDING`, its end of the socket inherited, dying
// with this process
void start_spawner() {
  g_tried = true;
  if (fault_active("exec_ranks")) return;
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  // a rank the spawner forks is reparented here when its middle process exits
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    close(sv[0]);
    close(sv[1]);
    return;
  }
  std::vector<std::string> args = {self, kSpawnerCommand, std::to_string(sv[1]), std::string(kTitleBytes, ' ')};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    fcntl(sv[1], F_SETFD, 0);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return;
  }
  g_fd = sv[0];
  g_spawner = pid;
}

}  // namespace

int spawner_main(int argc, char** argv, int (*entry)(int, char**)) {
  if (argc != 4) {
    std::fprintf(stderr, "fusegate: %s is started by fusegate itself, not by hand\n", kSpawnerCommand);
    return 2;
  }
  g_entry = entry;
  // the argument area, when the kernel laid the strings out end to end
  bool contiguous = true;
  for (int i = 0; i + 1 < argc; ++i) contiguous &= argv[i + 1] == argv[i] + std::strlen(argv[i]) + 1;
  if (contiguous) {
    g_title = argv[0];
    g_title_len = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
  }
  serve(std::atoi(argv[2]));
}

void reap_spawner() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fd < 0 || g_spawner <= 0) return;
  close(g_fd);
  g_fd = -1;
  waitpid(g_spawner, nullptr, 0);
  g_spawner = -1;
}

pid_t spawn_rank(const std::vector<std::string>& argv, const std::string& stderr_log) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_tried) start_spawner();
  if (g_fd < 0) return -1;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return -1;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  std::string msg;
  put_u32(&msg, static_cast<uint32_t>(getpid()));
  put_str(&msg, cwd);
  put_str(&msg, stderr_log);
  put_list(&msg, argv);
  put_list(&msg, env);
  int32_t pid = -1;
  pollfd pf{g_fd, POLLIN, 0};
  if (!write_all(g_fd, msg.data(), msg.size()) || poll(&pf, 1, kAnswerMs) != 1 ||
      !read_all(g_fd, &pid, sizeof pid)) {
    // the spawner is gone (a signal) or hung: fork and exec from now on
    drop_spawner();
    return -1;
  }
  return pid > 0 ? pid : -1;
}

}  // namespace fg
