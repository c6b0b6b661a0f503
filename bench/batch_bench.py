"""Throughput and memory of `grade batch` against one `python -m pytest` process per submission, side by side.

    .venv/bin/python bench/batch_bench.py [--n 200] [--baseline-n 200] [--floor-n 40] [--big-n 1000] [--workers 2]

Generates N mixed submissions (correct, buggy, broken), grades them with the baseline (2 pytest processes at a
time, each importing torch and pytest and grading one file with pytest-json-report; half of its sample before
`grade batch` runs and half after, so that a drift of the machine's speed lands on both sides) and with `grade batch`,
and prints submissions per second, the ratio, p50/p95 latency per submission and the peak memory (PSS of
every process in the tree, summed, sampled four times a second). Also measured in the same run: the floor of any
process-per-submission design (`python -c "import torch, pytest"`, two at a time), `grade batch` on --big-n
submissions (throughput and memory should stay flat), `grade check` against `python -c "import torch"`, and
one submission through the Gradescope zip's entry point with everything pinned to one core. Prints; asserts
nothing: speed targets are read here, never in a timed test.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
REF = (ROOT / "reference" / "attention.py").read_text()
SKELETON = (ROOT / "student_template" / "attention.py").read_text()

# (kind, name, text transform); each bug is a change a student really makes
MUTATIONS = [
    ("correct", "reference", lambda s: s),
    ("correct", "reshape", lambda s: s.replace(".view(b, num_tokens", ".reshape(b, num_tokens")),
    ("correct", "sqrt", lambda s: "import math\n" + s.replace("keys.shape[-1] ** 0.5", "math.sqrt(keys.shape[-1])")),
    ("buggy", "softmax_dim1", lambda s: s.replace("dim=-1)\n        weights = self.dropout", "dim=1)\n        weights = self.dropout")),
    ("buggy", "scale_tokens", lambda s: s.replace("keys.shape[-1] ** 0.5", "num_tokens ** 0.5")),
    ("buggy", "tril_mask", lambda s: s.replace("torch.triu(torch.ones(context_length, context_length), diagonal=1)",
                                               "torch.tril(torch.ones(context_length, context_length))")),
    ("buggy", "no_out_proj", lambda s: s.replace("return self.out_proj(context)", "return context")),
    ("buggy", "misnamed", lambda s: s.replace("class CausalAttention(", "class CasualAttention(")),
    ("broken", "skeleton", lambda s: SKELETON),
    ("broken", "syntax", lambda s: s.replace("def forward(self, x: torch.Tensor)", "def forward(self, x: torch.Tensor", 1)),
    ("broken", "empty", lambda s: ""),
    ("broken", "import_error", lambda s: "import matplotlib_not_installed\n" + SKELETON),
]


def generate(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        kind, name, f = MUTATIONS[i % len(MUTATIONS)]
        p = folder / f"s{i:03d}_{kind}_{name}.py"
        p.write_text(f(REF) + f"\n# submission {i}\n")
        paths.append(p)
    return paths


class PeakMemory:
    """Sums PSS over a process and all its descendants four times a second; keeps the peak.

    Not more often: reading smaps_rollup walks a torch process's page tables under its memory lock, and at 50
    samples a second the monitor itself took about a third of the batch's throughput (measured: 2.6 vs 4.2
    submissions per second on the same tree). Memory here moves slowly (one worker per grader at a time)."""

    INTERVAL = 0.25

    def __init__(self, pid: int):
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def tree(self) -> list[int]:
        kids: dict[int, list[int]] = {}
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    with open(f"/proc/{e}/stat", "rb") as f:
                        st = f.read()
                    kids.setdefault(int(st[st.rfind(b")") + 2:].split()[1]), []).append(int(e))
                except (OSError, ValueError, IndexError):
                    pass
        out, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(kids.get(p, []))
        return out

    def run(self) -> None:
        while not self.stop.is_set():
            total = 0
            for p in self.tree():
                try:
                    with open(f"/proc/{p}/smaps_rollup") as f:
                        total += next(int(l.split()[1]) for l in f if l.startswith("Pss:")) * 1024
                except (OSError, StopIteration, ValueError):
                    pass
            self.peak = max(self.peak, total)
            self.stop.wait(self.INTERVAL)

    def done(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.peak


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else 0.0


def baseline(paths: list[Path], workers: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    a = ROOT / "assignments" / "attention"
    lat: list[float] = []
    scores: dict[str, float] = {}

    def one(p: Path) -> None:
        rep = out / f"{p.stem}.json"
        t = time.monotonic()
        subprocess.run([PY, "-m", "pytest", str(a / "public"), str(a / "hidden"), "--submission", str(p), "-q",
                        "-p", "no:cacheprovider", "--json-report", f"--json-report-file={rep}"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lat.append(time.monotonic() - t)
        try:
            tests = json.loads(rep.read_text())["tests"]
            scores[p.stem] = sum(t.get("metadata", {}).get("grade", {}).get("score", 0.0) for t in tests)
        except (OSError, ValueError, KeyError):
            scores[p.stem] = float("nan")

    start = time.monotonic()
    mem = PeakMemory(os.getpid())
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, paths))
    wall = time.monotonic() - start
    peak = mem.done()
    return {"wall": wall, "lat": lat, "peak": peak, "scores": scores, "n": len(paths)}


def batch(folder: Path, workers: int, out: Path) -> dict:
    start = time.monotonic()
    proc = subprocess.Popen([PY, str(ROOT / "cli.py"), "batch", str(folder), "--out", str(out), "--workers",
                             str(workers), "--force"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mem = PeakMemory(proc.pid)
    proc.wait()
    wall = time.monotonic() - start
    peak = mem.done()
    lat, scores = [], {}
    for p in out.glob("*.json"):
        d = json.loads(p.read_text())
        lat.append(d["execution_time"])
        scores[p.stem] = d["score"]
    return {"wall": wall, "lat": lat, "peak": peak, "scores": scores, "n": len(scores), "rc": proc.returncode}


def floor(n: int, workers: int) -> tuple[int, float]:
    """(runs, seconds) of a design that starts one `python` with torch and pytest per submission."""
    def one(_: int) -> None:
        subprocess.run([PY, "-c", "import torch, pytest"], check=True)
    start = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(n)))
    return n, time.monotonic() - start


def gradescope_one_core(tmp: Path) -> float | None:
    """Seconds for `grade gradescope --try` on the reference (build the zip, grade one submission), on one core."""
    taskset = shutil.which("taskset")
    if taskset is None:
        return None
    t = time.monotonic()
    subprocess.run([taskset, "-c", "0", PY, str(ROOT / "cli.py"), "gradescope", "--try",
                    str(ROOT / "reference" / "attention.py"), "-o", str(tmp / "autograder.zip")],
                   cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t


def check_latency(tmp: Path, runs: int = 3) -> tuple[float, float]:
    shutil.copy(ROOT / "reference" / "attention.py", tmp / "attention.py")
    t_import, t_check = [], []
    for _ in range(runs):
        t = time.monotonic()
        subprocess.run([PY, "-c", "import torch"], check=True)
        t_import.append(time.monotonic() - t)
        t = time.monotonic()
        subprocess.run([PY, str(ROOT / "cli.py"), "check"], cwd=tmp, stdout=subprocess.DEVNULL, check=True)
        t_check.append(time.monotonic() - t)
    return statistics.median(t_import), statistics.median(t_check)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="submissions graded by grade batch")
    ap.add_argument("--baseline-n", type=int, default=200, help="of those, how many the baseline grades")
    ap.add_argument("--floor-n", type=int, default=40, help="processes started for the process-per-submission floor")
    ap.add_argument("--big-n", type=int, default=1000, help="submissions of the long run (0: skip)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    try:
        paths = generate(tmp / "subs", args.n)
        step = max(1, args.n // max(1, args.baseline_n))
        sample = paths[::step][:args.baseline_n]
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"{platform.platform()}")
        print(f"corpus: {args.n} submissions ({', '.join(sorted({m[1] for m in MUTATIONS}))}); "
              f"baseline on {len(sample)} of them, half before and half after "
              f"grade batch; {args.workers} workers each\n")
        # The baseline in two halves, one before and one after `grade batch`: this VM's speed drifts by a third
        # within an hour, and a drift during the minutes the baseline takes would otherwise land on one side of
        # the ratio only (a linear drift cancels this way).
        # The floor likewise, its first half before the baseline's and its second after.
        half = len(sample) // 2
        f1 = floor(args.floor_n // 2, args.workers)
        b1 = baseline(sample[:half], args.workers, tmp / "baseline")
        g = batch(tmp / "subs", args.workers, tmp / "batch")
        b2 = baseline(sample[half:], args.workers, tmp / "baseline")
        f2 = floor(args.floor_n - args.floor_n // 2, args.workers)
        b = {"wall": b1["wall"] + b2["wall"], "lat": b1["lat"] + b2["lat"], "peak": max(b1["peak"], b2["peak"]),
             "scores": {**b1["scores"], **b2["scores"]}, "n": b1["n"] + b2["n"]}
        rate_b, rate_g = b["n"] / b["wall"], g["n"] / g["wall"]
        print(f"{'':24}{'subs/s':>9}{'p50 s':>9}{'p95 s':>9}{'peak MiB':>10}{'wall s':>9}")
        for name, r, rate in (("pytest per submission", b, rate_b), ("grade batch", g, rate_g)):
            print(f"{name:24}{rate:9.2f}{pct(r['lat'], .5):9.3f}{pct(r['lat'], .95):9.3f}"
                  f"{r['peak'] / 2 ** 20:10.0f}{r['wall']:9.1f}")
        rate_f = (f1[0] + f2[0]) / (f1[1] + f2[1])
        print(f"{'process-per-sub floor':24}{rate_f:9.2f}   (python -c 'import torch, pytest', {args.workers} at a time,"
              f" {args.floor_n} runs: half before the baseline, half after)")
        print(f"\nthroughput ratio (grade batch / baseline): {rate_g / rate_b:.1f}x   (target >= 35x)")
        print(f"throughput ratio (grade batch / process-per-submission floor): {rate_g / rate_f:.1f}x   "
              f"(target >= 10x)")
        print(f"grade batch p95 per submission: {pct(g['lat'], .95):.3f} s   (target <= 0.5 s)")
        print(f"grade batch peak memory, all processes (PSS): {g['peak'] / 2 ** 30:.2f} GiB   (target <= 1 GiB)")
        same = [s for s in b["scores"] if abs(b["scores"][s] - g["scores"].get(s, -1)) > 1e-6]
        print(f"scores identical in both: {len(b['scores']) - len(same)}/{len(b['scores'])}"
              + (f"  (differ: {', '.join(sorted(same)[:5])})" if same else ""))
        if args.big_n:
            big = batch(tmp / "big_subs" if generate(tmp / "big_subs", args.big_n) else tmp, args.workers,
                        tmp / "big_batch")
            rate_big = big["n"] / big["wall"]
            print(f"\n{args.big_n} submissions: {rate_big:.2f} subs/s ({rate_big / rate_g:.2f} of the "
                  f"{args.n}-submission rate; target >= 0.90), peak PSS {big['peak'] / 2 ** 30:.2f} GiB "
                  f"(vs {g['peak'] / 2 ** 30:.2f} GiB; target: flat)")
        t_imp, t_chk = check_latency(tmp)
        print(f"\ngrade check: {t_chk:.2f} s; python -c 'import torch': {t_imp:.2f} s; "
              f"ratio {t_chk / t_imp:.2f}   (target <= 1.2)")
        t_gs = gradescope_one_core(tmp)
        print("Gradescope entry point, one submission, pinned to one core (taskset -c 0): "
              + (f"{t_gs:.1f} s (zip build included)" if t_gs is not None else "skipped (no taskset)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
