"""bench/inductor_parity.py without a GPU: fusegate's counts read from
`explain --batch`, the comparison with Inductor's counts (made up here) and
the divergence classes. FUSEGATE: the binary (argv[1]); no torch."""
import json
import os
import pathlib
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import inductor_parity  # noqa: E402

FUSEGATE = None
MEAN = str(ROOT / "tests/lit/inductor/mean_of_5x5_is_one_kernel.fg")           # 1 generated
GEMM = str(ROOT / "tests/lit/ops/cast_to_its_own_dtype_is_no_kernel.fg")       # 0 generated, 1 extern
BREAK = str(ROOT / "tests/lit/breaks/data_dependent_branch.fg")                # 2 graphs, 1 generated each
EPILOGUE = str(ROOT / "tests/lit/tp/gemm_epilogue_gelu.fg")                  # max-autotune: a GELU in cuBLASLt's epilogue
SHRINK = str(ROOT / "tests/lit/schedule/gemm_operand_with_a_padded_stride_is_copied.fg")  # 6 ops, 3 generated
BAD = """graph bad(%x: f32[4]) {
  %1 = relu(%x) : f32[5]
  return %1
}
"""                                                                               # explain refuses it


def inductor_row(path, triton, kernels=(), ops=()):
    return {"file": path, "set": inductor_parity.set_of(path), "ops": list(ops),
            "counts": {"default": {"generated": triton, "triton": triton, "launches": len(kernels),
                                   "kernels": list(kernels)}}}


class Translator(unittest.TestCase):
    def test_torch_versions_compare_as_numbers(self):
        # 2.11 takes SDPA with enable_gqa (2.5 on); as strings "2.11" < "2.5"
        # and the translation fell back to attention written by hand
        import fg_torch
        self.assertGreaterEqual(fg_torch.version_tuple("2.11.0+cu130"), (2, 5))
        self.assertLess(fg_torch.version_tuple("1.13.0a0"), (2, 5))
        self.assertEqual(fg_torch.version_tuple("2.5.1"), (2, 5))


class FusegateSide(unittest.TestCase):
    def test_counts_are_explains(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.fg")
            with open(bad, "w") as f:
                f.write(BAD)
            out = os.path.join(d, "f.json")
            rc = inductor_parity.fusegate_counts(FUSEGATE, [MEAN, GEMM, BREAK, bad], ["default"], out)
            rows = {os.path.basename(r["file"]): r["counts"]["default"] for r in json.load(open(out))["rows"]}
        self.assertEqual(rc, 0)
        self.assertEqual((rows["mean_of_5x5_is_one_kernel.fg"]["generated"],
                          rows["mean_of_5x5_is_one_kernel.fg"]["extern"]), (1, 0))
        self.assertEqual((rows["cast_to_its_own_dtype_is_no_kernel.fg"]["generated"],
                          rows["cast_to_its_own_dtype_is_no_kernel.fg"]["extern"]), (0, 1))
        # a graph that breaks is explained as a repro in mode B: its graphs' kernels added up
        self.assertEqual((rows["data_dependent_branch.fg"]["generated"], rows["data_dependent_branch.fg"]["graphs"]),
                         (2, 2))
        # a graph explain cannot take is an error with explain's reason, never a count
        self.assertNotIn("generated", rows["bad.fg"])
        self.assertIn("bad.fg", rows["bad.fg"]["error"])


class Departures(unittest.TestCase):
    def test_the_program_inductor_runs_is_the_count_compared(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "f.json")
            rc = inductor_parity.fusegate_counts(FUSEGATE, [EPILOGUE], ["max-autotune", "default"], out)
            row = json.load(open(out))["rows"][0]["counts"]
        self.assertEqual(rc, 0)
        # max-autotune folds one GELU into cuBLASLt's epilogue and batches two
        # GEMMs: fusegate runs 2 generated kernels, Inductor's program 3
        ma = row["max-autotune"]
        self.assertEqual((ma["own_generated"], ma["generated"]), (2, 3))
        self.assertIn("gemm_epilogue 1", ma["departures"])
        self.assertIn("batched_siblings 1", ma["departures"])
        # the default policy departs from nothing: one count, no departures
        self.assertNotIn("departures", row["default"])
        self.assertEqual(row["default"]["generated"], 3)

    def test_a_departure_is_said_in_the_table(self):
        rows = [inductor_row(EPILOGUE, 3, ["triton_poi_a", "triton_poi_b", "triton_poi_c"], ["gelu", "linear"])]
        rows[0]["counts"]["max-autotune"] = rows[0]["counts"].pop("default")
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "f.json")
            inductor_parity.fusegate_counts(FUSEGATE, [EPILOGUE], ["max-autotune"], f)
            i = os.path.join(d, "i.json")
            json.dump({"meta": {"torch": "2.x", "gpu": "test", "date": "today", "policies": ["max-autotune"]},
                       "rows": rows}, open(i, "w"))
            md = os.path.join(d, "p.md")
            inductor_parity.compare(i, f, md)
            text = open(md).read()
        self.assertRegex(text, r"\| tests/lit/tp \| max-autotune \| 1 \| 1 \| 100.0 \|")
        self.assertIn("- max-autotune: 1 graphs (batched_siblings 1, gemm_epilogue 1)", text)


class Minimize(unittest.TestCase):
    def test_a_difference_is_made_small_by_fusegates_minimizer(self):
        import parity_minimize
        # Inductor made up: one kernel for every graph. explain counts 3 for
        # SHRINK, so the minimizer keeps shrinking while explain counts more
        # than 1, each candidate judged through the socket by this process
        one = lambda path, policy: 1  # noqa: E731
        with tempfile.TemporaryDirectory() as d:
            r = parity_minimize.minimize_one(SHRINK, "default", FUSEGATE, one, d, timeout=120)
            self.assertEqual(r["exit"], 1, r.get("log"))
            self.assertEqual(r["before"], {"fusegate": 3, "inductor": 1, "ops": 6})
            self.assertLess(r["after"]["ops"], r["before"]["ops"])
            self.assertGreater(r["after"]["fusegate"], 1)
            self.assertGreater(r["checks"], 2)
            # the file written is the graph last judged to show it: explain agrees
            self.assertEqual(parity_minimize.explain_generated(FUSEGATE, r["out"], "default"), r["after"]["fusegate"])
            self.assertEqual(parity_minimize.op_count(r["out"]), r["after"]["ops"])
            # a graph already equal to Inductor's count: nothing to minimize
            r = parity_minimize.minimize_one(MEAN, "default", FUSEGATE, one, d, timeout=120)
            self.assertEqual(r["exit"], 0)
            self.assertFalse(os.path.exists(r["out"]))
            # a judge that cannot count the graph given: minify cannot test (125)
            r = parity_minimize.minimize_one(SHRINK, "default", FUSEGATE, lambda p, q: None, d, timeout=120)
            self.assertEqual(r["exit"], 125)
            parity_minimize.write_minimized([r], d)
            with open(os.path.join(d, "minimized.md")) as f:
                self.assertIn("not judged", f.read())


class Comparison(unittest.TestCase):
    @staticmethod
    def compared(rows):
        """compare's markdown for Inductor's `rows` (made up) against explain's counts of their graphs"""
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "f.json")
            inductor_parity.fusegate_counts(FUSEGATE, [r["file"] for r in rows], ["default"], f)
            i = os.path.join(d, "i.json")
            json.dump({"meta": {"torch": "2.x", "gpu": "test", "date": "today", "policies": ["default"]},
                       "rows": rows}, open(i, "w"))
            md = os.path.join(d, "p.md")
            inductor_parity.compare(i, f, md)
            return open(md).read()

    def test_equal_different_and_errors_are_counted_apart(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.fg")
            with open(bad, "w") as f:
                f.write(BAD)
            text = self.compared([inductor_row(MEAN, 1, ["triton_per_fused_mean_0"], ["mean"]),
                                  inductor_row(GEMM, 2, ["triton_poi_fused_clone_0", "triton_poi_fused_1",
                                                         "sm90_gemm"], ["cast", "linear"]),
                                  inductor_row(BREAK, 2, ["triton_poi_a", "triton_poi_b"], ["if"]),
                                  inductor_row(bad, 1, ["triton_poi_a"], ["relu"])])
        # inductor: MEAN equal; ops: GEMM differs (fusegate 0, Inductor 2);
        # breaks: two graphs, equal; the bad graph: an error (its set: other)
        # (set | policy | pinned: equal | compared | % | as run: equal | timed | padded | template |
        #  untranslatable | errors)
        self.assertRegex(text, r"\| tests/lit/inductor \| default \| 1 \| 1 \| 100.0 \| 1 \| 0 \| 0 \| 0 \| 0 \| 0 \|")
        self.assertRegex(text, r"\| tests/lit/ops \| default \| 0 \| 1 \| 0.0 \| 0 \| 0 \| 0 \| 0 \| 0 \| 0 \|")
        self.assertRegex(text, r"\| tests/lit/breaks \| default \| 1 \| 1 \| 100.0 \| 1 \| 0 \| 0 \| 0 \| 0 \| 0 \|")
        self.assertRegex(text, r"\| other \| default \| 0 \| 0 \| - \| 0 \| 0 \| 0 \| 0 \| 0 \| 1 \|")
        self.assertRegex(text, r"\| default \| GEMM: Inductor copies an operand to row-major first \| 1 \| "
                               r"cast_to_its_own_dtype_is_no_kernel.fg \(\d+\): 0 / 2 \|")

    def test_a_count_decided_by_timing_is_said_apart(self):
        rows = [inductor_row(MEAN, 1, ["triton_per_fused_mean_0"], ["mean"]),
                inductor_row(GEMM, 2, ["triton_poi_fused_mm_t_0", "triton_poi_fused_1", "sm90_gemm"],
                             ["cast", "linear"])]
        rows[1]["counts"]["default"]["padding_timed"] = 1
        text = self.compared(rows)
        # an older run's counts (no pinned compile): the graph is in the timed class
        self.assertRegex(text, r"\| tests/lit/ops \| default \| 0 \| 1 \| 0.0 \| 0 \| 1 \| 0 \| 0 \| 0 \| 0 \|")
        self.assertIn(f"| default | {inductor_parity.TIMED} | 1 |", text)

    def test_a_timed_padding_is_compared_pinned(self):
        # the timing padded the GEMM (2 kernels); pinned to "not faster",
        # Inductor wrote none, as explain counts: equal pinned, not as run
        rows = [inductor_row(GEMM, 2, ["triton_poi_fused_mm_t_0", "triton_poi_fused_1", "sm90_gemm"],
                             ["cast", "linear"])]
        rows[0]["counts"]["default"].update({"padding_timed": 1, "padding_answers": [True], "unpadded": 0})
        text = self.compared(rows)
        self.assertRegex(text, r"\| tests/lit/ops \| default \| 1 \| 1 \| 100.0 \| 0 \| 1 \| 1 \| 0 \| 0 \| 0 \|")
        self.assertNotIn(inductor_parity.TIMED, text)
        # pinned, Inductor still wrote a kernel: a difference, classed by its kernels
        rows[0]["counts"]["default"]["unpadded"] = 1
        text = self.compared(rows)
        self.assertRegex(text, r"\| tests/lit/ops \| default \| 0 \| 1 \| 0.0 \| 0 \| 1 \| 1 \| 0 \| 0 \| 0 \|")
        self.assertRegex(text, r"cast_to_its_own_dtype_is_no_kernel.fg \(\d+\): 0 / 1 \|")

    def test_a_template_chosen_by_timing_is_compared_with_library_gemms(self):
        # max-autotune's timing chose a Triton template that took the cast as
        # its prologue (no generated kernel); with the library's GEMMs alone
        # Inductor wrote 1. explain's count (0) is compared with the pinned one
        rows = [inductor_row(GEMM, 0, ["triton_tem_fused__to_copy_mm_0"], ["cast", "linear"])]
        rows[0]["counts"]["default"].update({"templates": 1, "unpadded": 1})
        text = self.compared(rows)
        self.assertRegex(text, r"\| tests/lit/ops \| default \| 0 \| 1 \| 0.0 \| 1 \| 0 \| 0 \| 1 \| 0 \| 0 \|")
        self.assertRegex(text, r"cast_to_its_own_dtype_is_no_kernel.fg \(\d+\): 0 / 1 \|")
        # an older run's counts (no pinned compile): said as its own class
        del rows[0]["counts"]["default"]["unpadded"]
        rows[0]["counts"]["default"]["triton"] = 1
        text = self.compared(rows)
        self.assertIn(f"| default | {inductor_parity.TEMPLATE} | 1 |", text)

    def test_classes_read_the_kernels_first(self):
        sdpa = {"ops": ["sdpa", "softmax"]}
        self.assertTrue(inductor_parity.divergence_class(
            sdpa, {"kernels": ["triton_per_fused__safe_softmax_0"]}, {}).startswith("sdpa: Inductor runs the math"))
        self.assertTrue(inductor_parity.divergence_class(
            sdpa, {"kernels": ["triton_poi_fused__scaled_dot_product_flash_attention_constant_pad_nd_0"]},
            {}).startswith("sdpa: Inductor pads"))
        self.assertEqual(inductor_parity.divergence_class({"ops": ["sort", "gather"]}, {"kernels": []}, {}),
                         "sort/topk/cumsum in the graph")
        self.assertEqual(inductor_parity.divergence_class({"ops": ["relu"]}, {"kernels": []}, {}), "pointwise only")
        self.assertTrue(inductor_parity.divergence_class(
            {"ops": ["linear", "permute"]}, {"kernels": ["triton_poi_fused_clone_permute_0", "sm90_gemm"]},
            {}).startswith("GEMM: Inductor copies"))
        self.assertTrue(inductor_parity.divergence_class(
            {"ops": ["linear"]}, {"kernels": ["triton_poi_fused_mm_t_1", "nvjet_gemm"]}, {}).startswith("GEMM: Inductor pads"))
        # a collective the translation dropped (fusegate more) is its own
        # class; one kept (fusegate fewer) is classed by the rest
        coll = {"ops": ["all_reduce", "silu"]}
        self.assertTrue(inductor_parity.divergence_class(
            coll, {"kernels": [], inductor_parity.KEY: 0}, {"generated": 1}).startswith("collective:"))
        self.assertEqual(inductor_parity.divergence_class(
            coll, {"kernels": [], inductor_parity.KEY: 2}, {"generated": 1}), "pointwise only")


if __name__ == "__main__":
    FUSEGATE = sys.argv.pop(1)
    unittest.main()
