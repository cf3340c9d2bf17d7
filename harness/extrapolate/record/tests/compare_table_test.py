#!/usr/bin/env python3
"""compare_table.py on a fake manifest and a fake oomlab: PyTorch's peaks beside the prediction,
"0 B (exact)" where they agree, the capped run's outcome compared, a refusal shortened to the
request (no folder, no advice), and the README's prose around the markers kept.

    python3 harness/extrapolate/record/tests/compare_table_test.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare_table  # noqa: E402

MiB = 2**20

# Answers as `oomlab extrapolate --json` gives them; a refusal at 16, as the CLI prints it.
FAKE_OOMLAB = r'''#!/usr/bin/env python3
import json, os, sys
at = int(sys.argv[sys.argv.index("--at") + 1])
folder = os.path.dirname(sys.argv[2])
if at == 16:
    sys.stderr.write("oomlab: error: request 7 of " + folder + "/p-batch4.pickle (trace entry 9: alloc 2.00MiB at "
                     "train.py:3 step) has no counterpart in " + folder + "/p-batch1.pickle (batch=1): the program's "
                     "own code makes other requests at another batch, so its trace cannot be extrapolated\n")
    sys.exit(2)
capped = "--budget" in sys.argv
prediction = {"peak_allocated": 100 * 2**20, "peak_reserved": 120 * 2**20, "kind": "exact", "bound_bytes": 0,
              "outcome": "oom" if capped else "ok", "need_allocated": 900 * 2**20, "need_reserved": 960 * 2**20}
print(json.dumps({"prediction": prediction, "extrapolation": {"unfitted": []}}))
'''


class CompareTable(unittest.TestCase):
    def test_rows_and_refusal(self):
        with tempfile.TemporaryDirectory() as folder:
            oomlab = os.path.join(folder, "oomlab")
            with open(oomlab, "w") as f:
                f.write(FAKE_OOMLAB)
            os.chmod(oomlab, 0o755)
            files = {str(b): {"file": f"p-batch{b}.pickle"} for b in (1, 2, 4)}
            files["8"] = {"file": "p-batch8.pickle", "max_memory_allocated": 100 * MiB,
                          "max_memory_reserved": 122 * MiB}
            files["16"] = {"file": "p-batch16.pickle", "max_memory_allocated": 200 * MiB,
                           "max_memory_reserved": 240 * MiB}
            manifest = {"gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "cap_mib": 512, "programs": {
                "prog": {"knob": "batch", "inputs": [1, 2, 4], "files": files, "truths": [8, 16],
                         "capped_value": 64, "capped": {"outcome": "oom", "cap_bytes": 512 * MiB,
                                                        "max_memory_allocated": 500 * MiB,
                                                        "max_memory_reserved": 510 * MiB}}}}
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                json.dump(manifest, f)
            readme = os.path.join(folder, "README.md")
            with open(readme, "w") as f:
                f.write(f"intro\n{compare_table.TABLE_START}\nold\n{compare_table.TABLE_END}\noutro\n")
            done = subprocess.run([sys.executable, compare_table.__file__, "--manifest",
                                   os.path.join(folder, "manifest.json"), "--oomlab", oomlab, "--readme", readme],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(readme) as f:
                page = f.read()
        self.assertTrue(page.startswith("intro\n") and page.endswith("outro\n"), page)
        self.assertNotIn("\nold\n", page)
        rows = [line for line in page.splitlines() if line.startswith("| prog |")]
        self.assertEqual(len(rows), 3, page)
        self.assertIn("| 8 | 100.00 MiB / 122.00 MiB | 100.00 MiB / 120.00 MiB | 0 B (exact) allocated, "
                      "-2097152 B (-1.639%) reserved | exact |", rows[0])
        self.assertIn("refused: request 7 of p-batch4.pickle (trace entry 9: alloc 2.00MiB at train.py:3 step) "
                      "has no counterpart in p-batch1.pickle (batch=1) | - | - |", rows[1])
        self.assertNotIn(folder, rows[1])
        self.assertIn("| 64 | oom under 512.00 MiB; 500.00 MiB / 510.00 MiB | oom; need 900.00 MiB / 960.00 MiB | "
                      "outcome matches | exact |", rows[2])


if __name__ == "__main__":
    unittest.main()
