"""bench/gpu_bench.py's tables: an energy cell that says "not read" has its
reason under the table, in the main table and in the rounds. The module is
imported with stand-ins for torch and xxhash (its tables need neither): no
GPU, no torch."""
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
import gpu_bench  # noqa: E402

READ = {"forwards": 4000, "mj_per_forward": 180.4, "watts": 691.0, "sm_mhz": 1633}
STEPPED_ONCE = {"forwards": 90, "why": "NVML's energy counter stepped 1 time(s) in the window of 61 ms "
                                       "(it steps about every 100 ms; two steps are needed)"}


def row(name, cls, ms, energy):
    return {"name": name, "class": cls, "ms": ms, "launches": 9, "device_kernels": 7, "rel_err": 3e-3,
            "energy": energy}


class EnergyNotes(unittest.TestCase):
    def test_main_table_says_why_a_cell_was_not_read(self):
        fg = [row("fusegate C max-autotune + CUDA graphs", gpu_bench.GRAPHS, 0.246, READ)]
        th = [row("torch.compile max-autotune", gpu_bench.GRAPHS, 0.271, STEPPED_ONCE),
              row("torch.compile reduce-overhead", gpu_bench.GRAPHS, 0.260, READ)]
        text = "\n".join(gpu_bench.main_table(fg + th, th))
        self.assertIn("| not read |", text)
        self.assertIn("- energy not read for torch.compile max-autotune: NVML's energy counter stepped 1 time(s)", text)
        self.assertEqual(text.count("energy not read for"), 1, text)  # the rows that read have no note
        self.assertIn("180.4 (691 W, 1633 MHz)", text)

    def test_no_note_when_every_cell_read_or_none_was_taken(self):
        fg = [row("fusegate C max-autotune + CUDA graphs", gpu_bench.GRAPHS, 0.246, READ),
              row("fusegate C max-autotune", gpu_bench.HOST, 0.246, None)]  # no warm-up: '-'
        text = "\n".join(gpu_bench.main_table(fg, []))
        self.assertNotIn("energy not read", text)
        self.assertIn("| - |", text)

    def test_a_window_without_a_figure_or_a_reason_is_named(self):
        self.assertEqual(gpu_bench.energy_cell({"forwards": 10}), "not read")
        self.assertEqual(gpu_bench.energy_notes([("x", {"forwards": 10})]),
                         ["- energy not read for x: the window gave no figure"])

    def test_rounds_say_which_side_of_which_round(self):
        fg, th = {"name": "fusegate C max-autotune + CUDA graphs"}, {"name": "torch.compile max-autotune"}
        rounds = [{"order": ["fusegate", "torch"], "fusegate": 0.249, "torch": 0.257,
                   "fusegate_energy": READ, "torch_energy": READ},
                  {"order": ["torch", "fusegate"], "fusegate": 0.244, "torch": 0.257,
                   "fusegate_energy": READ, "torch_energy": STEPPED_ONCE}]
        text = "\n".join(gpu_bench.rounds_lines(fg, th, rounds))
        self.assertIn("- energy not read for round 2, torch: NVML's energy counter stepped 1 time(s)", text)
        self.assertNotIn("round 1, torch", text)
        self.assertNotIn("fusegate: NVML", text)
        self.assertIn("median of 2 rounds", text)


if __name__ == "__main__":
    unittest.main()
