"""bench/rank_wait.py: when the bench's torch ranks are waited for, stopped,
and what is kept of their figures. Fake ranks and a fake clock: no torch, no
waiting."""
import json
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import rank_wait  # noqa: E402


class Proc:
    def __init__(self, alive=True):
        self.alive, self.killed = alive, False

    def is_alive(self):
        return self.alive

    def kill(self):
        self.alive, self.killed = False, True


class Ctx:
    """A spawn context whose ranks never exit (join: False), exit after
    `exit_after` joins (True), or fail (`fail_after`: join raises); `on_join`
    runs at each join (a rank writing its file)."""

    def __init__(self, procs, exit_after=None, fail_after=None, on_join=None):
        self.processes, self.joins = procs, 0
        self.exit_after, self.fail_after, self.on_join = exit_after, fail_after, on_join

    def join(self, timeout=None):
        self.joins += 1
        if self.on_join:
            self.on_join(self.joins)
        if self.fail_after is not None and self.joins >= self.fail_after:
            raise RuntimeError("process 1 terminated with exit code 1\nTraceback ...\nncclInternalError: boom")
        return self.exit_after is not None and self.joins >= self.exit_after


class Clock:
    """Each reading 5 s after the last (one poll)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 5.0
        return self.t


class WaitForRanks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.dir.name, "torch.json")
        self.want = {"reduce-overhead", "default"}

    def tearDown(self):
        self.dir.cleanup()

    def write(self, names):
        self.path.write_text(json.dumps({"rows": [{"name": n, "ms": 0.5} for n in names]}))

    def wait(self, ctx, timeout_s=1000, grace_s=20):
        said = []
        got = rank_wait.wait_for_ranks(ctx, self.path, self.want, timeout_s, grace_s, poll_s=0,
                                       clock=Clock(), log=said.append)
        return got, said

    def test_ranks_that_exit_leave_nothing_to_say(self):
        self.write(self.want)
        (why, teardown), said = self.wait(Ctx([Proc(), Proc()], exit_after=3))
        self.assertIsNone(why)
        self.assertIsNone(teardown)
        self.assertEqual(said, [])

    def test_ranks_hung_after_every_figure_are_stopped_and_named(self):
        procs = [Proc(alive=False), Proc()]
        ctx = Ctx(procs, on_join=lambda n: n == 4 and self.write(self.want))
        (why, teardown), said = self.wait(ctx, grace_s=20)
        self.assertIsNone(why)
        self.assertEqual(teardown, "rank(s) 1 still in their teardown 20 s after the last figure was written: stopped")
        self.assertTrue(procs[1].killed)
        self.assertFalse(procs[0].killed)
        self.assertEqual(said, ["torch: " + teardown])
        # the grace counts from the file's completion, not from the start:
        # 4 polls to write it, then more than 20 s (5 polls of 5 s)
        self.assertEqual(ctx.joins, 4 + 5)

    def test_a_file_missing_a_configuration_is_not_done(self):
        procs = [Proc(), Proc()]
        self.write({"default"})
        (why, teardown), said = self.wait(Ctx(procs), timeout_s=100, grace_s=20)
        self.assertEqual(why, "torch workers stopped after 100 s")
        self.assertIsNone(teardown)
        self.assertTrue(all(p.killed for p in procs))
        self.assertEqual(said, [])

    def test_a_rank_failing_before_its_figures_is_the_reason(self):
        (why, teardown), _ = self.wait(Ctx([Proc(), Proc()], fail_after=2))
        self.assertEqual(why, "torch workers: ncclInternalError: boom")
        self.assertIsNone(teardown)

    def test_a_rank_failing_after_every_figure_keeps_them(self):
        self.write(self.want)
        (why, teardown), _ = self.wait(Ctx([Proc(), Proc()], fail_after=2))
        self.assertIsNone(why)
        self.assertEqual(teardown, "a rank failed in its teardown, after the last figure: ncclInternalError: boom")

    def test_an_unreadable_or_partial_file_reports_nothing(self):
        self.assertEqual(rank_wait.reported(self.path), set())
        self.path.write_text('{"rows": [{"name": "def')
        self.assertEqual(rank_wait.reported(self.path), set())
        self.path.write_text('[1, 2]')
        self.assertEqual(rank_wait.reported(self.path), set())
        self.write({"default"})
        self.assertEqual(rank_wait.reported(self.path), {"default"})


if __name__ == "__main__":
    unittest.main()
