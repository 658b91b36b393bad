// The rank spawner: a fusegate process (`fusegate _spawner`, exec'd by the
// launcher at its first CPU launch) that forks rank processes on request. A
// rank forked from it starts with LibTorch already loaded and its operators
// already registered, where an exec'd one spends most of a second of CPU on
// them (the dynamic linker's symbol lookups and the operator registry:
// 0.6-0.9 s a process on the CI machine) -- for a small graph, nearly all of
// a rank's time. A launcher pays one start-up for all its ranks (a `check`
// of every repro: one where it paid one a rank).
//
// A spawned rank is what an exec'd one would be: its own argv (what ps and
// /proc/PID/cmdline show too: the spawner's argument area is padded for
// it), the environment the launcher has when it asks (bisect changes
// FUSEGATE_BISECT between runs), its working folder and stderr file; a
// child of the launcher (the spawner forks twice, and the launcher is a
// child subreaper), so that waitpid and the launcher's kills work on it as
// before; in its own process group; killed when the launcher dies.
//
// Only CPU ranks are spawned so. A CUDA rank, a run in a process where the
// spawner cannot start or has died, and every rank under
// FUSEGATE_FAULT=exec_ranks (the test's comparison), is forked and exec'd
// as before.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace fg {

// argv[1] of the spawner process
inline constexpr const char* kSpawnerCommand = "_spawner";

// The spawner's life: serves requests until its launcher closes the socket.
// `entry` is what a spawned rank runs with its argv (fusegate's main, which
// leaves the process itself: harness/cli/entry.cpp); a value it returns is
// the rank's exit code.
int spawner_main(int argc, char** argv, int (*entry)(int argc, char** argv));

// This process's spawner told to leave (its socket closed) and waited for;
// nothing where there is none. Called as the process leaves.
void reap_spawner();

// A rank process started by the spawner (started at the first call):
// `argv` (argv[0] the binary), stderr redirected to `stderr_log`, in its own
// process group. Its pid, a child of this process; -1 when there is no
// spawner (the caller forks and execs instead).
pid_t spawn_rank(const std::vector<std::string>& argv, const std::string& stderr_log);

}  // namespace fg
