#!/usr/bin/env python3
"""The speed gate without a GPU (ctest ci_speed_gate, label unit): ci/speed_gate.py's rule on
synthetic Google Benchmark JSON read by the real `oomlab compare`, ci/speed_gate.sh end to end
with stand-in benchmark programs (one honours OOMLAB_SLOW_KERNEL), and ci/peers/peer_table.py.

    usage: speed_gate_test.py OOMLAB_BINARY
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OOMLAB = None


def bench_json(rows, gpu="NVIDIA H200"):
    """rows: {run_name: (counter, mean, relative stddev)} as --benchmark_report_aggregates_only writes."""
    entries = []
    for name, (counter, mean, noise) in rows.items():
        for aggregate, value in (("mean", mean), ("median", mean), ("stddev", mean * noise)):
            entries.append({"name": f"{name}_{aggregate}", "run_name": name, "run_type": "aggregate",
                            "repetitions": 5, "threads": 1, "aggregate_name": aggregate, "aggregate_unit": "time",
                            "iterations": 5, "real_time": 1.0 if aggregate != "stddev" else 0.0, "cpu_time": 1.0,
                            "time_unit": "ms", counter: value})
    return {"context": {"date": "2026-12-03T00:00:00+00:00", "gpu": gpu}, "benchmarks": entries}


FWD = "BM_FusedAttention/forward/T:1024/manual_time"
BWD = "BM_FusedAttention/backward/T:1024/manual_time"
GEMM = "BM_CublasGemmBf16/n:8192/manual_time"
TRAIN = "BM_Training/gpt2_bf16_B16/iterations:1/manual_time"


class GateRule(unittest.TestCase):
    def gate(self, base, current, *extra, files=("attention_bench.json",)):
        with tempfile.TemporaryDirectory() as tmp:
            for folder, sets in (("base", base), ("now", current)):
                os.makedirs(os.path.join(tmp, folder))
                for f, data in zip(files, sets if isinstance(sets, list) else [sets]):
                    with open(os.path.join(tmp, folder, f), "w") as out:
                        json.dump(data, out)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "ci", "speed_gate.py"), os.path.join(tmp, "base"),
                                   os.path.join(tmp, "now"), "--oomlab", OOMLAB, *extra],
                                  capture_output=True, text=True)
            return proc.returncode, proc.stdout + proc.stderr

    def test_ten_percent_slower_beyond_noise_fails(self):
        rc, text = self.gate(bench_json({FWD: ("TFLOP/s", 150.0, 0.01), BWD: ("TFLOP/s", 160.0, 0.01)}),
                             bench_json({FWD: ("TFLOP/s", 135.0, 0.01), BWD: ("TFLOP/s", 160.5, 0.01)}))
        self.assertEqual(rc, 1, text)
        self.assertIn("SLOWER", text)
        self.assertIn("-10.0%", text)

    def test_within_noise_passes(self):
        # 2% slower with 1% noise: within 3% + noise.
        rc, text = self.gate(bench_json({FWD: ("TFLOP/s", 150.0, 0.01)}), bench_json({FWD: ("TFLOP/s", 147.0, 0.01)}))
        self.assertEqual(rc, 0, text)
        self.assertIn("speed gate passed", text)

    def test_noise_widens_the_margin(self):
        # 5% slower: beyond the 3% margin alone, but the measured noise (3%) is added to it.
        rc, text = self.gate(bench_json({TRAIN: ("tokens_per_s", 424000.0, 0.03)}),
                             bench_json({TRAIN: ("tokens_per_s", 402800.0, 0.005)}), files=("training_bench.json",))
        self.assertEqual(rc, 0, text)
        rc, text = self.gate(bench_json({TRAIN: ("tokens_per_s", 424000.0, 0.005)}),
                             bench_json({TRAIN: ("tokens_per_s", 402800.0, 0.005)}), files=("training_bench.json",))
        self.assertEqual(rc, 1, text)

    def test_faster_and_library_rows_do_not_fail(self):
        rc, text = self.gate(bench_json({FWD: ("TFLOP/s", 150.0, 0.01), GEMM: ("TFLOP/s", 730.0, 0.01)}),
                             bench_json({FWD: ("TFLOP/s", 180.0, 0.01), GEMM: ("TFLOP/s", 600.0, 0.01)}))
        self.assertEqual(rc, 0, text)
        self.assertIn("faster", text)
        self.assertIn("reference MOVED", text)

    def test_missing_row_fails_unless_partial(self):
        base = bench_json({FWD: ("TFLOP/s", 150.0, 0.01), BWD: ("TFLOP/s", 160.0, 0.01)})
        now = bench_json({FWD: ("TFLOP/s", 150.0, 0.01)})
        self.assertEqual(self.gate(base, now)[0], 1)
        self.assertEqual(self.gate(base, now, "--partial")[0], 0)

    def test_other_gpu_or_no_baseline_is_bad_input(self):
        rc, text = self.gate(bench_json({FWD: ("TFLOP/s", 150.0, 0.01)}),
                             bench_json({FWD: ("TFLOP/s", 150.0, 0.01)}, gpu="NVIDIA A100-SXM4-80GB"))
        self.assertEqual(rc, 2, text)
        rc, text = self.gate(bench_json({FWD: ("TFLOP/s", 150.0, 0.01)}),
                             [bench_json({FWD: ("TFLOP/s", 150.0, 0.01)})] * 2,
                             files=("attention_bench.json", "conv_bench.json"))
        self.assertEqual(rc, 2, text)
        self.assertIn("--update-baseline", text)


# A stand-in benchmark program: Google Benchmark's flags, TFLOP/s rows, slower forward rows under
# OOMLAB_SLOW_KERNEL=attention (as the fused attention forward launched N times).
FAKE_BENCH = r'''#!/usr/bin/env python3
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
reps = int(args.get("benchmark_repetitions", "1"))
slow = os.environ.get("OOMLAB_SLOW_KERNEL", "")
n = (int(slow.split(":")[1]) if ":" in slow else 2) if slow.startswith("attention") else 1
rows = {"BM_FusedAttention/forward/T:1024/manual_time": 150.0 / n,
        "BM_FusedAttention/backward/T:1024/manual_time": 160.0}
entries = []
for name, value in rows.items():
    for i in range(reps):
        entries.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps,
                        "repetition_index": i, "iterations": 10, "real_time": 1.0, "cpu_time": 1.0,
                        "time_unit": "ms", "TFLOP/s": value * (1 + 0.002 * ((i % 3) - 1))})
json.dump({"context": {"gpu": "NVIDIA H200"}, "benchmarks": entries}, open(args["benchmark_out"], "w"))
'''


class GateScript(unittest.TestCase):
    def test_baseline_pass_and_slowed_kernel(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = os.path.join(tmp, "build", "sm90a")
            os.makedirs(os.path.join(build, "bench"))
            exe = os.path.join(build, "bench", "attention_bench")
            with open(exe, "w") as f:
                f.write(FAKE_BENCH)
            os.chmod(exe, os.stat(exe).st_mode | stat.S_IEXEC)
            baseline = os.path.join(tmp, "baseline")
            env = dict(os.environ, OOMLAB_GATE_OOMLAB=OOMLAB, OOMLAB_GATE_BENCHES="attention_bench",
                       OOMLAB_GIT_COMMIT="test")
            env.pop("OOMLAB_SLOW_KERNEL", None)

            def gate(*args, **extra_env):
                proc = subprocess.run(["bash", os.path.join(ROOT, "ci", "speed_gate.sh"), *args],
                                      env=dict(env, **extra_env), capture_output=True, text=True)
                return proc.returncode, proc.stdout + proc.stderr

            rc, text = gate(os.path.join(tmp, "out0"), build, baseline)
            self.assertEqual(rc, 2, text)  # no baseline yet
            rc, text = gate("--update-baseline", os.path.join(tmp, "out1"), build, baseline)
            self.assertEqual(rc, 0, text)
            self.assertTrue(os.path.exists(os.path.join(baseline, "attention_bench.json")), text)
            self.assertTrue(os.path.exists(os.path.join(baseline, "RECORDED")), text)
            rc, text = gate(os.path.join(tmp, "out2"), build, baseline)
            self.assertEqual(rc, 0, text)
            rc, text = gate(os.path.join(tmp, "out3"), build, baseline, OOMLAB_SLOW_KERNEL="attention:3")
            self.assertEqual(rc, 1, text)
            self.assertIn("SLOWER", text)
            rc, text = gate("--expect-fail", os.path.join(tmp, "out4"), build, baseline,
                            OOMLAB_SLOW_KERNEL="attention:3")
            self.assertEqual(rc, 0, text)
            rc, text = gate("--update-baseline", os.path.join(tmp, "out5"), build, baseline,
                            OOMLAB_SLOW_KERNEL="attention")
            self.assertEqual(rc, 2, text)  # never a baseline from a slowed kernel


class PeerTable(unittest.TestCase):
    def test_ours_beside_the_peers(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = os.path.join(tmp, "ours.json")
            with open(ours, "w") as f:
                json.dump(bench_json({TRAIN: ("tokens_per_s", 411200.0, 0.01), FWD: ("TFLOP/s", 146.7, 0.01)}), f)
            peers = os.path.join(tmp, "peers.json")
            entries = []
            for i, value in enumerate((485000.0, 485200.0)):
                entries.append({"name": "gpt2/compile/gpt2_bf16_B16", "run_name": "gpt2/compile/gpt2_bf16_B16",
                                "run_type": "iteration", "repetition_index": i, "real_time": 33.8, "time_unit": "ms",
                                "tokens_per_s": value, "compile_s": 41.0, "workload": "gpt2",
                                "peer": "torch.compile", "ours": TRAIN, "metric": "tokens_per_s",
                                "label": "GPT-2 124M bf16 B16 T1024"})
            entries.append({"name": "sdpa/forward/T:1024", "run_name": "sdpa/forward/T:1024", "run_type": "iteration",
                            "real_time": 0.028, "time_unit": "ms", "TFLOP/s": 230.3, "workload": "sdpa",
                            "peer": "SDPA (default backend)", "ours": FWD, "metric": "TFLOP/s", "label": "B4"})
            entries.append({"name": "sdpa_cudnn/forward/T:1024", "run_name": "sdpa_cudnn/forward/T:1024",
                            "run_type": "iteration", "error_occurred": True, "error_message": "No available kernel",
                            "workload": "sdpa", "peer": "sdpa_cudnn", "ours": FWD, "metric": "TFLOP/s"})
            entries.append({"name": "generate/*", "run_name": "generate/*", "run_type": "iteration",
                            "error_occurred": True, "error_message": "ImportError: transformers",
                            "workload": "generate", "peer": "-"})
            with open(peers, "w") as f:
                json.dump({"context": {"gpu": "NVIDIA H200", "torch": "2.11"}, "benchmarks": entries}, f)
            text = subprocess.run([sys.executable, os.path.join(ROOT, "ci", "peers", "peer_table.py"), peers, ours],
                                  capture_output=True, text=True, check=True).stdout
            self.assertIn("### gpt2", text)
            self.assertIn("411.2K", text)
            self.assertIn("485.1K", text)
            self.assertIn("0.85x", text)  # 411.2 / 485.1
            self.assertIn("compile 41 s", text)
            self.assertIn("0.64x", text)  # 146.7 / 230.3
            self.assertIn("skipped: No available kernel", text)
            self.assertIn("ImportError: transformers", text)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: speed_gate_test.py OOMLAB_BINARY", file=sys.stderr)
        sys.exit(2)
    OOMLAB = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
