"""bench/gpu_bench.py's tables (the package bench/gpubench/): an energy cell
that says "not read" has its reason under the table, in the main table and
in the rounds; the floor's table says what it leaves under 0.90 of torch's
best, and a floor that failed, was not asked for or never came says so. The
modules are imported with stand-ins for torch and xxhash (their tables need
neither): no GPU, no torch."""
import pathlib
import sys
import types
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
for name in ("torch", "torch.distributed", "torch.multiprocessing", "torch.nn", "torch.nn.functional", "xxhash"):
    sys.modules.setdefault(name, types.ModuleType(name))
torch = sys.modules["torch"]
torch.distributed, torch.multiprocessing, torch.nn = (sys.modules["torch.distributed"],
                                                      sys.modules["torch.multiprocessing"], sys.modules["torch.nn"])
torch.nn.functional = sys.modules["torch.nn.functional"]
from gpubench.config import GRAPHS, HOST, TORCH_SYMM_CONFIGS, torch_configs  # noqa: E402
from gpubench.helpers import all_reduce_kernels  # noqa: E402
from gpubench.results import entry, merge  # noqa: E402
from gpubench.floors import FLOOR_CONFIGS, floor_lines, floor_rows  # noqa: E402
from gpubench.report import energy_cell, energy_notes, main_table, rounds_lines, warmup_line  # noqa: E402

READ = {"forwards": 4000, "mj_per_forward": 180.4, "watts": 691.0, "sm_mhz": 1633}
STEPPED_ONCE = {"forwards": 90, "why": "NVML's energy counter stepped 1 time(s) in the window of 61 ms "
                                       "(it steps about every 100 ms; two steps are needed)"}


def row(name, cls, ms, energy):
    return {"name": name, "class": cls, "ms": ms, "launches": 9, "device_kernels": 7, "rel_err": 3e-3,
            "energy": energy}


class EnergyNotes(unittest.TestCase):
    def test_main_table_says_why_a_cell_was_not_read(self):
        fg = [row("fusegate C max-autotune + CUDA graphs", GRAPHS, 0.246, READ)]
        th = [row("torch.compile max-autotune", GRAPHS, 0.271, STEPPED_ONCE),
              row("torch.compile reduce-overhead", GRAPHS, 0.260, READ)]
        text = "\n".join(main_table(fg + th, th))
        self.assertIn("| not read |", text)
        self.assertIn("- energy not read for torch.compile max-autotune: NVML's energy counter stepped 1 time(s)", text)
        self.assertEqual(text.count("energy not read for"), 1, text)  # the rows that read have no note
        self.assertIn("180.4 (691 W, 1633 MHz)", text)

    def test_no_note_when_every_cell_read_or_none_was_taken(self):
        fg = [row("fusegate C max-autotune + CUDA graphs", GRAPHS, 0.246, READ),
              row("fusegate C max-autotune", HOST, 0.246, None)]  # no warm-up: '-'
        text = "\n".join(main_table(fg, []))
        self.assertNotIn("energy not read", text)
        self.assertIn("| - |", text)

    def test_a_window_without_a_figure_or_a_reason_is_named(self):
        self.assertEqual(energy_cell({"forwards": 10}), "not read")
        self.assertEqual(energy_notes([("x", {"forwards": 10})]),
                         ["- energy not read for x: the window gave no figure"])

    def test_rounds_say_which_side_of_which_round(self):
        fg, th = {"name": "fusegate C max-autotune + CUDA graphs"}, {"name": "torch.compile max-autotune"}
        rounds = [{"order": ["fusegate", "torch"], "fusegate": 0.249, "torch": 0.257,
                   "fusegate_energy": READ, "torch_energy": READ},
                  {"order": ["torch", "fusegate"], "fusegate": 0.244, "torch": 0.257,
                   "fusegate_energy": READ, "torch_energy": STEPPED_ONCE}]
        text = "\n".join(rounds_lines(fg, th, rounds))
        self.assertIn("- energy not read for round 2, torch: NVML's energy counter stepped 1 time(s)", text)
        self.assertNotIn("round 1, torch", text)
        self.assertNotIn("fusegate: NVML", text)
        self.assertIn("median of 2 rounds", text)


GEMMS, ATTN = (label for label, _ in FLOOR_CONFIGS)


def floor_result(ms, kernels=5, energy=READ):
    return {"ms": ms, "energy": energy, "kernels": ["gemm"] * kernels}


def at_limit(mj, mhz, limit=700.0):
    return {"forwards": 5000, "mj_per_forward": mj, "watts": 698.1, "sm_mhz": mhz, "power_limit_w": limit}


class Floor(unittest.TestCase):
    fg = {"name": "fusegate C max-autotune + CUDA graphs", "ms": 0.246}
    th = {"name": "torch.compile default + whole-forward CUDA graph", "ms": 0.258}

    def rows(self, gemms_ms, attn_ms):
        return floor_rows(1, [{GEMMS: floor_result(gemms_ms), ATTN: floor_result(attn_ms, 6)}])

    def test_gemms_above_the_goal_say_no_fusion_reaches_it(self):
        text = "\n".join(floor_lines(self.rows(0.241, 0.252), self.fg, self.th, True))
        self.assertIn("- 0.90 of torch's best is 0.232 ms and the GEMMs alone take 0.241 (0.93 of torch's best): "
                      "no forward that runs these GEMMs reaches 0.90; it needs GEMMs that beat these", text)
        self.assertIn("fusegate's best is 5.0 µs above them", text)
        self.assertIn("| 5 | 0.241 | 0.93 | 1.02 |", text)  # kernels, ms, of torch's best, fusegate over it
        self.assertIn("| 6 | 0.252 | 0.98 | 0.98 |", text)

    def test_gemms_under_the_goal_say_the_room_left(self):
        text = "\n".join(floor_lines(self.rows(0.210, 0.225), self.fg, self.th, True))
        self.assertIn("22.2 µs under 0.90 for all that is not these GEMMs; fusegate's best is 36.0 µs above them",
                      text)
        self.assertNotIn("beat these", text)

    def test_a_floor_failed_on_one_rank_is_a_failed_row_naming_it(self):
        rows = floor_rows(2, [{GEMMS: floor_result(0.1), ATTN: floor_result(0.11)},
                                        {GEMMS: {"error": "RuntimeError: CUDA out of memory"}}])
        self.assertIsNone(rows[0]["ms"])
        self.assertEqual(rows[0]["note"], "failed: RuntimeError: CUDA out of memory (rank 1)")
        self.assertEqual(rows[1]["note"], "failed: no result (rank 1)")  # rank 1 never gave the second
        text = "\n".join(floor_lines(rows, self.fg, self.th, True))
        self.assertIn("| failed |", text)
        self.assertIn("n/a (the GEMMs' floor failed)", text)

    def test_gpu_sh_summary_reads_the_verdict_not_a_note(self):
        # the pattern gpu.sh's last table greps from each bench.md (its
        # bench step, bench/gpu/benches.sh), run on floor_lines' text: a
        # failed attention floor's note must not stand in for the verdict
        import re
        import subprocess
        sh = (pathlib.Path(__file__).resolve().parents[2] / "bench" / "gpu" / "benches.sh").read_text()
        pattern = re.search(r"floor=\$\(grep -m1 -oE '([^']+)'", sh).group(1)

        def summary(lines):
            p = subprocess.run(["grep", "-m1", "-oE", pattern], input="\n".join(lines) + "\n",
                               capture_output=True, text=True)
            return p.stdout.strip()
        failed_attn = floor_rows(1, [{GEMMS: floor_result(0.241), ATTN: {"error": "RuntimeError: x"}}])
        got = summary(floor_lines(failed_attn, self.fg, self.th, True))
        self.assertTrue(got.startswith("- 0.90 of torch's best is 0.232 ms"), got)
        self.assertIn("RuntimeError: x", "\n".join(floor_lines(failed_attn, self.fg, self.th, True)))
        for floors, ran, want in (([], False, "- floor: not asked for"), ([], True, "- floor: asked for and not"),
                                  (self.rows(0.2, 0.21), True, "- 0.90 of torch's best"),
                                  (floor_rows(1, [{}]), True, "- floor against 0.90 of torch's best: n/a")):
            got = summary(floor_lines(floors, self.fg, self.th, ran))
            self.assertTrue(got.startswith(want), (want, got))

    def test_never_a_silent_absence(self):
        self.assertIn("not asked for", "\n".join(floor_lines([], self.fg, self.th, False)))
        self.assertIn("asked for and not measured", "\n".join(floor_lines([], self.fg, self.th, True)))
        text = "\n".join(floor_lines(self.rows(0.2, 0.21), self.fg, None, True))
        self.assertIn("n/a (no torch CUDA-graph configuration ran)", text)


class EnergyFloor(unittest.TestCase):
    # the figures of one H100 at world size 1, h2048 (2026-11-27): torch's
    # best 0.259 ms, so 0.90 of it holds 700 W x 0.2331 ms = 163.2 mJ
    fg = {"name": "fusegate C max-autotune + CUDA graphs", "ms": 0.251, "energy": at_limit(170.8, 1589)}
    th = {"name": "torch.compile default + whole-forward CUDA graph", "ms": 0.259}

    def text(self, gemms, attn, fg=None):
        a = attn if "error" in attn else floor_result(0.242, 6, attn)
        rows = floor_rows(1, [{GEMMS: floor_result(0.227, 5, gemms), ATTN: a}])
        return "\n".join(floor_lines(rows, fg or self.fg, self.th, True))

    def energy_line(self, text):
        got = [ln for ln in text.splitlines() if ln.startswith("- energy at the power limit")]
        self.assertEqual(len(got), 1, text)
        return got[0]

    def test_the_attention_over_the_budget_says_no_forward_reaches_it(self):
        line = self.energy_line(self.text(at_limit(155.9, 1401), at_limit(167.9, 1438)))
        self.assertIn("(700 W), an estimate: 0.90 of torch's best (0.233 ms) holds about 163.2 mJ a forward", line)
        self.assertIn("the GEMMs alone spend 155.9 at 1401 MHz, with the attention 167.9 at 1438 MHz: 4.7 mJ "
                      "(2.9%) over, so no forward that runs these GEMMs and an attention that spends what "
                      "SDPA's does", line)
        self.assertIn("fusegate's best spends 170.8 at 1589 MHz", line)

    def test_the_gemms_over_the_budget_say_so_first(self):
        line = self.energy_line(self.text(at_limit(170.0, 1401), at_limit(180.0, 1438)))
        self.assertIn("6.8 mJ (4.2%) over, so no forward that runs these GEMMs reaches 0.90 at this limit", line)
        self.assertNotIn("attention that spends", line)

    def test_room_under_the_budget_is_counted(self):
        line = self.energy_line(self.text(at_limit(120.0, 1401), at_limit(150.0, 1438)))
        self.assertIn(": 13.2 mJ (8.1%) left for all that is not these kernels", line)
        self.assertNotIn("over", line)
        # the larger of the two, should the attention's read less (noise)
        line = self.energy_line(self.text(at_limit(150.0, 1401), at_limit(149.0, 1438)))
        self.assertIn(": 13.2 mJ (8.1%) left", line)

    def test_within_the_spread_gives_no_verdict(self):
        for attn_mj, sign in ((165.0, "+1.1%"), (161.0, "-1.3%")):
            line = self.energy_line(self.text(at_limit(155.9, 1401), at_limit(attn_mj, 1438)))
            self.assertIn(f"within 2% of it ({sign}), the spread of these figures: no verdict", line)
            self.assertNotIn("reaches 0.90", line)
            self.assertNotIn("left for", line)

    def test_an_attention_floor_that_failed_or_read_nothing_is_named(self):
        line = self.energy_line(self.text(at_limit(120.0, 1401), {"error": "RuntimeError: x"}))
        self.assertIn("the GEMMs alone spend 120.0 at 1401 MHz (the attention's floor failed): 43.2 mJ (26.5%) "
                      "left for all that is not these GEMMs", line)
        line = self.energy_line(self.text(at_limit(120.0, 1401), STEPPED_ONCE))
        self.assertIn("(the attention's floor read no energy): 43.2 mJ", line)

    def test_a_figure_not_read_is_named_never_silent(self):
        no_limit = {k: v for k, v in at_limit(155.9, 1401).items() if k != "power_limit_w"}
        self.assertIn("n/a (NVML gave no enforced power limit)",
                      self.energy_line(self.text(no_limit, no_limit, fg={"name": "f", "ms": 0.251})))
        self.assertIn("n/a (the GEMMs' floor read no energy)",
                      self.energy_line(self.text(STEPPED_ONCE, at_limit(167.9, 1438))))
        # the limit may come from fusegate's own row when the floors lack it
        self.assertIn("(700 W)", self.energy_line(self.text(no_limit, no_limit)))

    def test_gpu_sh_summary_reads_each_line_into_its_own_cell(self):
        # the two greps of gpu.sh's last table (bench/gpu/benches.sh), run
        # as gpu.sh runs them, on floor_lines' text: the floor cell gets the
        # time verdict, the energy cell the energy line from its "(700 W)" on
        import re
        import subprocess
        sh = (pathlib.Path(__file__).resolve().parents[2] / "bench" / "gpu" / "benches.sh").read_text()
        text = self.text(at_limit(155.9, 1401), at_limit(167.9, 1438)) + "\n"

        def cell(var):
            cmd = re.search(var + r"=\$\((grep -m1 -oE '[^']+') \"\$o/bench.md\" 2>/dev/null (\| cut -c[0-9]+-)\)",
                            sh)
            self.assertIsNotNone(cmd, var)
            return subprocess.run(["bash", "-c", cmd.group(1) + " " + cmd.group(2)], input=text,
                                  capture_output=True, text=True).stdout.strip()
        self.assertTrue(cell("energy").startswith("(700 W), an estimate: 0.90 of torch's best"), cell("energy"))
        self.assertTrue(cell("floor").startswith("0.90 of torch's best is 0.233 ms"), cell("floor"))
        self.assertNotIn("energy", cell("floor"))


class AllReduce(unittest.TestCase):
    def test_the_trace_says_which_all_reduce_ran(self):
        ev = [{"name": n} for n in ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "void two_shot_all_reduce_kernel<bf16>",
                                    "void two_shot_all_reduce_kernel<bf16>", "sm90_xmma_gemm", "ncclDevKernel_AllGather",
                                    "triton_poi_fused__unsafe_view_linear_two_shot_mul_silu_2",
                                    "triton_poi_fused__unsafe_view_add_all_reduce_3")]
        self.assertEqual(all_reduce_kernels(ev), "NCCL x1, symm-mem two-shot x2")
        self.assertEqual(all_reduce_kernels([{"name": "sm90_xmma_gemm"}]), "none")

    def test_each_torch_row_names_its_all_reduce(self):
        th = [dict(row("torch.compile default + whole-forward CUDA graph", GRAPHS, 0.228, READ), all_reduce="NCCL x2"),
              dict(row(TORCH_SYMM_CONFIGS[2][0], GRAPHS, 0.198, READ), all_reduce="symm-mem two-shot x2")]
        text = "\n".join(main_table(th, th))
        self.assertIn(TORCH_SYMM_CONFIGS[2][0] + ": symm-mem two-shot x2", text)
        self.assertIn("CUDA graphs: " + TORCH_SYMM_CONFIGS[2][0] + " (0.198 ms)", text)

    def test_symmetric_memory_only_where_there_is_a_peer(self):
        self.assertTrue(all(c not in torch_configs(1) for c in TORCH_SYMM_CONFIGS))
        self.assertTrue(all(c in torch_configs(2) for c in TORCH_SYMM_CONFIGS))
        self.assertTrue(all(c[1] == GRAPHS for c in TORCH_SYMM_CONFIGS))


class Results(unittest.TestCase):
    def rows(self):
        fg = [row("fusegate C max-autotune", HOST, 0.150, READ), row("fusegate C max-autotune + CUDA graphs", GRAPHS,
                                                                   0.168, READ)]
        th = [dict(row("torch.compile default + whole-forward CUDA graph", GRAPHS, 0.224, READ), all_reduce="NCCL x2"),
              dict(row(TORCH_SYMM_CONFIGS[2][0], GRAPHS, 0.191, STEPPED_ONCE), all_reduce="symm-mem two-shot x2"),
              row("torch.compile default", HOST, 0.100, READ)]
        fl = [{"name": n, "kind": k, "class": GRAPHS, "ms": ms, "energy": READ}
              for (n, k), ms in zip(FLOOR_CONFIGS, (0.117, 0.133))]
        return fg, th, fl

    def test_an_entry_is_the_best_graph_row_of_each_side_and_the_floors(self):
        e = entry("NVIDIA H200", "2 x NVIDIA H200", "2026-11-29", 2, "h2048", "2.11.0+cu130", *self.rows())
        self.assertEqual(e["fusegate_best"]["config"], "fusegate C max-autotune + CUDA graphs")
        self.assertEqual(e["torch_best"]["config"], TORCH_SYMM_CONFIGS[2][0])
        self.assertEqual(e["torch_best"]["all_reduce"], "symm-mem two-shot x2")
        self.assertIsNone(e["torch_best"]["mj_per_forward"])  # not read: never a made-up figure
        self.assertEqual(e["fusegate_best"]["mj_per_forward"], READ["mj_per_forward"])
        self.assertEqual(e["fusegate_over_torch"], round(0.168 / 0.191, 4))
        self.assertEqual(e["floor_gemms"]["ms"], 0.117)
        self.assertEqual(e["fusegate_over_floor"], round(0.168 / 0.133, 4))

    def test_a_side_that_never_ran_is_none(self):
        fg, th, fl = self.rows()
        e = entry("NVIDIA H200", "1 x NVIDIA H200", "2026-11-29", 1, "h2048", "2.11", fg, [], [])
        self.assertIsNone(e["torch_best"])
        self.assertIsNone(e["fusegate_over_torch"])
        self.assertIsNone(e["floor_gemms"])

    def test_merge_replaces_an_entry_of_the_same_key(self):
        fg, th, fl = self.rows()
        a = entry("NVIDIA H200", "2 x NVIDIA H200", "2026-11-29", 2, "h2048", "2.11", fg, th, fl)
        b = dict(a, fusegate_over_torch=0.5)
        c = dict(a, block="h4096")
        out = merge([a, c], [b])
        self.assertEqual(len(out), 2)
        self.assertEqual([x["block"] for x in out], ["h2048", "h4096"])
        self.assertEqual(out[0]["fusegate_over_torch"], 0.5)
        with self.assertRaises(ValueError):
            merge([], [dict(a, gpu="")])

    def test_record_results_writes_the_file_or_nothing(self):
        import json
        import subprocess
        import tempfile
        script = pathlib.Path(__file__).resolve().parents[2] / "bench" / "record_results.py"
        fg, th, fl = self.rows()
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "e.json").write_text(json.dumps(entry("NVIDIA H200", "2 x NVIDIA H200", "2026-11-29", 2, "h2048",
                                                       "2.11", fg, th, fl)))
            (d / "bad.json").write_text("{")
            f = d / "results.json"
            r = subprocess.run([sys.executable, str(script), str(d / "e.json"), "--file", str(f)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(json.loads(f.read_text())), 1)
            before = f.read_text()
            r = subprocess.run([sys.executable, str(script), str(d / "e.json"), str(d / "bad.json"), "--file", str(f)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("bad.json", r.stderr)
            self.assertEqual(f.read_text(), before)


class Warmup(unittest.TestCase):
    def test_each_row_says_how_long_it_warmed(self):
        rows = [row("torch.compile reduce-overhead", GRAPHS, 0.256,
                    {**READ, "warmup_forwards": 23438, "warmup_pace_ms": 0.256}),
                row("torch.compile max-autotune-no-cudagraphs", HOST, 0.630,
                    {"why": "NVML's energy counter stepped 0 time(s)", "warmup_forwards": 410,
                     "warmup_pace_ms": 14.634}),
                row("torch eager", HOST, 1.0, None)]  # no warm-up asked: not named
        line = warmup_line(rows)
        self.assertEqual(line, "warm-up (forwards x pace): torch.compile reduce-overhead 23438 x 0.256 ms; "
                               "torch.compile max-autotune-no-cudagraphs 410 x 14.634 ms")
        self.assertEqual(warmup_line([rows[2]]), "")


if __name__ == "__main__":
    unittest.main()
