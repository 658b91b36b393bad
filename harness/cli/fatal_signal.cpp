#include "harness/cli/process.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fusion/errors.h"

namespace fg::cli {
namespace {

// A process that dies of a memory or arithmetic fault says where, on
// stderr, before it dies of the same signal (its parent, a launcher or a
// fuzz supervisor, still sees the signal). Async-signal-safe calls but for dladdr;
// backtrace() was called once beforehand, so that it loads what it needs
// outside the handler. The executable exports its symbols (ENABLE_EXPORTS)
// for the names; `addr2line -e fusegate ADDR` reads the rest.
void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  char line[320];
  void* pc = nullptr;
#if defined(__x86_64__)
  pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.pc);
#endif
  const long tid = syscall(SYS_gettid);
  int n = std::snprintf(line, sizeof line,
                        "\nfusegate: fatal signal %d (%s) in pid %d, %s thread %ld: address %p, instruction at %p",
                        sig, sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGILL",
                        static_cast<int>(getpid()), tid == getpid() ? "main" : "another", tid,
                        info ? info->si_addr : nullptr, pc);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  // which library the instruction is in (dladdr is not async-signal-safe,
  // but the process is ending either way)
  Dl_info where{};
  if (pc && dladdr(pc, &where) && where.dli_fname) {
    n = std::snprintf(line, sizeof line, " (%s+%#lx%s%s)", where.dli_fname,
                      static_cast<unsigned long>(reinterpret_cast<uintptr_t>(pc) -
                                                 reinterpret_cast<uintptr_t>(where.dli_fbase)),
                      where.dli_sname ? ", in " : "", where.dli_sname ? where.dli_sname : "");
    if (n > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  }
  // a call through a null or wild pointer leaves no frame to unwind: the
  // return address the call pushed names its caller
  void* caller = nullptr;
#if defined(__x86_64__)
  if (!pc || !dladdr(pc, &where)) {
    const auto sp = static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP];
    if (sp) caller = *reinterpret_cast<void* const*>(sp);
  }
#endif
  Dl_info from{};
  if (caller && dladdr(caller, &from) && from.dli_fname) {
    n = std::snprintf(line, sizeof line, "; called from %p (%s+%#lx%s%s)", caller, from.dli_fname,
                      static_cast<unsigned long>(reinterpret_cast<uintptr_t>(caller) -
                                                 reinterpret_cast<uintptr_t>(from.dli_fbase)),
                      from.dli_sname ? ", in " : "", from.dli_sname ? from.dli_sname : "");
    if (n > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  }
  (void)!write(2, "; backtrace:\n", 13);
  if (const char* note = fg::fatal_note(); note[0]) {
    static const char kWhile[] = "fusegate: it was ";
    (void)!write(2, kWhile, sizeof kWhile - 1);
    (void)!write(2, note, std::strlen(note));
    (void)!write(2, "\n", 1);
  }
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_fatal_signal_handlers() {
  void* warm[1];
  (void)backtrace(warm, 1);
  // an alternate stack, so that a stack overflow is reported too
  static std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace fg::cli
