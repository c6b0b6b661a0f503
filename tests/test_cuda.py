"""On a grading machine with a GPU (`grade batch` on a GPU server) the CUDA checks run for real, in the sandboxed
worker, and move some of each question's device points to a run on CUDA against the reference (assignment.toml
`[gpu] points`). Without CUDA every test here is skipped: CI and Gradescope's image have no GPU.

What must hold there: a correct solution keeps 100/100 and earns the GPU points by passing the CUDA runs (not
because they were skipped); a class that computes something else on CUDA loses its question's device points and
no more; the other assignments' correct solutions keep full marks with `device="cuda:0"`.
"""
from __future__ import annotations

import json

import pytest
import torch

from conftest import REFERENCE, grade_sources

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")

REF = REFERENCE.read_text(encoding="utf-8")
QUESTIONS = {"steps": 10, "SelfAttention_v1": 15, "SelfAttention_v2": 15, "CausalAttention": 25,
             "MultiHeadAttentionWrapper": 15, "MultiHeadAttention": 20}


def edit(text: str, old: str, new: str) -> str:
    """The first `old` (CausalAttention's, where MultiHeadAttention has the same line) made `new`."""
    assert old in text, old
    return text.replace(old, new, 1)


# Right on the CPU (and under the grader's simulated device), wrong on a real GPU.
CUDA_ONLY_WRONG = edit(REF, "        return weights @ values  # (b, T, d_out)\n",
                       "        return (weights @ values) * (2.0 if x.is_cuda else 1.0)  # (b, T, d_out)\n")

# A notebook habit: the device picked once at import, the mask sent there in forward. Right wherever the module
# and its input sit on that device; .to() does not move what forward uses.
FILL = "scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
GLOBAL_DEVICE = edit(edit(REF, "import torch.nn as nn\n", "import torch.nn as nn\n"
                          "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"),
                     FILL, FILL.replace("self.mask.bool()", "self.mask.to(device).bool()"))

# Wrong on every device: the value checks charge it; the GPU part of the device points is for running on a GPU.
SOFTMAX_DIM1 = edit(REF, "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                         "        weights = self.dropout(weights)\n",
                    "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=1)\n"
                    "        weights = self.dropout(weights)\n")
# Runs anywhere and computes nothing: no point for running on a GPU as it does on the CPU.
ZEROS = edit(REF, "        return weights @ values  # (b, T, d_out)\n",
             "        return torch.zeros_like(weights @ values)  # (b, T, d_out)\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cuda")
    return tmp, grade_sources(tmp, {"reference.py": REF, "cuda_only_wrong.py": CUDA_ONLY_WRONG,
                                    "global_device.py": GLOBAL_DEVICE, "softmax_dim1.py": SOFTMAX_DIM1,
                                    "zeros.py": ZEROS})


def gpu_lines(r):
    return {c.name: c for c in r.checks if "GPU" in c.name}


def test_reference_earns_the_gpu_points_by_running_on_cuda(graded):
    tmp, results = graded
    r = results["reference"]
    assert r.error is None and r.score == 100, [(c.name, c.staff) for c in r.checks if c.status != "passed"]
    lines = gpu_lines(r)
    assert "GPU: not checked on a real GPU (no GPU on the grading machine)" not in lines, lines
    ran = {n: (c.status, c.points) for n, c in lines.items() if "runs on a real GPU (CUDA)" in n}
    assert ran == {"SelfAttention_v1 runs on a real GPU (CUDA)": ("passed", 0.0),
                   "SelfAttention_v2 runs on a real GPU (CUDA)": ("passed", 0.0),
                   "CausalAttention runs on a real GPU (CUDA)": ("passed", 1.0),
                   "MultiHeadAttentionWrapper runs on a real GPU (CUDA)": ("passed", 0.0),
                   "MultiHeadAttention runs on a real GPU (CUDA)": ("passed", 1.0)}, ran
    assert {q: m for q, (_s, m) in r.by_question().items()} == QUESTIONS
    data = json.loads((tmp / "results" / "reference.json").read_text())
    assert data["score"] == 100 and not any("simulation only" in t.get("output", "") for t in data["tests"])


def test_a_class_wrong_only_on_cuda_loses_its_device_points_there_only(graded):
    _tmp, results = graded
    r = results["cuda_only_wrong"]
    by_q = {q: s for q, (s, _m) in r.by_question().items()}
    lost = {c.name: c.points - c.score for c in r.checks if c.score < c.points}
    assert by_q["CausalAttention"] == QUESTIONS["CausalAttention"] - 2, lost  # its device points, GPU part included
    assert lost["CausalAttention runs on a real GPU (CUDA)"] == 1.0, lost
    spill = {q: s for q, s in by_q.items() if q not in ("CausalAttention", "MultiHeadAttentionWrapper")
             and s != QUESTIONS[q]}
    assert not spill, (spill, lost)
    msg = next(c.message.en for c in r.checks if c.name == "CausalAttention runs on a real GPU (CUDA)")
    assert "CUDA" in msg, msg


@pytest.mark.parametrize("name", ["mha_intermediates", "transformer_block"])
def test_other_assignments_keep_full_marks_on_a_gpu(tmp_path, name):
    src = (REFERENCE.parent / f"{name}.py").read_text(encoding="utf-8")
    r = grade_sources(tmp_path, {"reference.py": src}, name=name)["reference"]
    assert r.error is None and r.score == r.max_score, [(c.name, c.staff, c.message and c.message.en)
                                                        for c in r.checks if c.status != "passed"]


def test_a_notebook_global_device_loses_only_the_simulated_device_point(graded):
    """Its worker sees no GPU, so `device` is the CPU there and every CPU check passes (it failed them all on a
    GPU server: 76/100); the run on a real GPU, in the worker that sees one, passes too (module, mask and input
    all on CUDA). What it loses is what a CPU-only machine charges: .to() leaves its mask's device behind."""
    _tmp, results = graded
    r = results["global_device"]
    lost = {c.name: c.points - c.score for c in r.checks if c.score < c.points}
    assert r.error is None and set(lost) == {"CausalAttention keeps every tensor on the input's "
                                             "device"}, lost
    assert r.score == 99, lost


def test_a_bug_wrong_on_every_device_costs_no_gpu_point(graded):
    """The CUDA run compares the class's output on CUDA with its own on the CPU: a softmax over dim=1 is charged by
    the value checks, once, and not again by the GPU lines (compared with the reference, it lost 2 more points on a
    GPU server than on a CPU-only machine: found on an H200, session 19)."""
    _tmp, results = graded
    r = results["softmax_dim1"]
    lost = {c.name: c.points - c.score for c in r.checks if c.score < c.points}
    assert r.error is None and lost and all(c.startswith("CausalAttention") or c.startswith("MultiHeadAttention")
                                            for c in lost), lost
    assert not [n for n in lost if "GPU" in n or "device" in n], lost
    ran = {n: c.status for n, c in gpu_lines(r).items() if "runs on a real GPU (CUDA)" in n}
    assert ran and set(ran.values()) == {"passed"}, ran


def test_a_class_that_computes_nothing_earns_no_gpu_point(graded):
    """Returning zeros runs on CUDA exactly as on the CPU: the CUDA run, like every device check, pays only a class
    shown to work (the evidence gate)."""
    _tmp, results = graded
    r = results["zeros"]
    c = gpu_lines(r)["CausalAttention runs on a real GPU (CUDA)"]
    assert c.status == "failed" and c.score == 0, (c.status, c.score)
