"""Waiting on the bench's PyTorch ranks, which write their figures to a file
before they exit (bench/gpu_bench.py's run_torch). Standard library only, so
that the rules are tested without torch (tests/bench/rank_wait_test.py).

At world size 2 every interleaved round's ranks wrote their figure and then
never left their teardown (the barrier and destroy_process_group after the
last row, with reduce-overhead's graphs alive), until the device call's time
ran out (two H100, 2026-11-26: bench/RESULTS.md, thirteenth step). So once
the file holds every configuration asked for, the ranks get `grace_s` to
exit; then the ones still alive are stopped and named, and the figures are
kept."""
import json
import time


def reported(path):
    """The configuration names the ranks' file holds (empty while it is
    absent or unreadable: the writer renames a whole file into place)."""
    try:
        return {r["name"] for r in json.loads(path.read_text()).get("rows", [])}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return set()


def _kill_alive(ctx):
    stuck = [i for i, p in enumerate(ctx.processes) if p.is_alive()]
    for i in stuck:
        ctx.processes[i].kill()
    return stuck


def _last_line(text):
    lines = [ln for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no message"


def wait_for_ranks(ctx, path, want, timeout_s, grace_s, poll_s=5.0, clock=time.monotonic, log=None):
    """Waits on `ctx` (torch.multiprocessing's spawn context: join(timeout)
    returns True once every process exited and raises when one failed;
    .processes, each with is_alive() and kill()) while the ranks write
    `path` (a pathlib.Path). Returns (why, teardown):
      why       the figures are missing: "torch workers stopped after N s"
                (nothing new after timeout_s; every rank stopped) or
                "torch workers: <error>" (a rank failed before the last one);
      teardown  the figures are all there (every name in `want`) but ranks
                did not exit within grace_s ("rank(s) 0, 1 still in their
                teardown ...: stopped") or failed after writing them.
    Both None: every rank wrote and exited."""
    why, teardown = None, None
    deadline = clock() + timeout_s
    written = None  # when the file first held every configuration
    try:
        while not ctx.join(timeout=poll_s):
            now = clock()
            if written is None and want <= reported(path):
                written = now
            if written is not None and now - written > grace_s:
                stuck = _kill_alive(ctx)
                teardown = (f"rank(s) {', '.join(map(str, stuck))} still in their teardown "
                            f"{grace_s} s after the last figure was written: stopped")
                if log:
                    log(f"torch: {teardown}")
                break
            if now > deadline:
                _kill_alive(ctx)
                why = f"torch workers stopped after {timeout_s} s"
                break
    except Exception as e:  # a rank that failed (join raises)
        if want <= reported(path):
            teardown = f"a rank failed in its teardown, after the last figure: {_last_line(e)}"
        else:
            why = f"torch workers: {_last_line(e)}"
    return why, teardown
