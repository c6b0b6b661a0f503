"""The device probe (worker.probe_devices): a forward run on the CPU as if the module and its input sat on
another device. Each case is a module a student could write; the probe must name the call that would mix
devices on a GPU, and must stay silent for code that follows .to(device) however it is written."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from autograder import worker
from conftest import ROOT


class Attn(nn.Module):
    """A causal attention whose mask handling `how` picks."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.lin = nn.Linear(4, 4)
        self.register_buffer("mask", torch.triu(torch.ones(5, 5), diagonal=1))
        self.plain = torch.triu(torch.ones(5, 5), diagonal=1)  # not registered: .to(device) leaves it behind

    def forward(self, x):
        T = x.shape[1]
        s = self.lin(x) @ x.transpose(1, 2)
        if self.how == "buffer":
            m = self.mask.bool()[:T, :T]
        elif self.how == "plain":
            m = self.plain.bool()[:T, :T]
        elif self.how == "new_cpu":
            m = torch.triu(torch.ones(T, T), diagonal=1).bool()
        elif self.how == "new_on_input_device":
            m = torch.triu(torch.ones(T, T, device=x.device), diagonal=1).bool()
        elif self.how == "moved_to_input":
            m = torch.triu(torch.ones(T, T), diagonal=1).bool().to(x.device)
        elif self.how == "type_as":
            m = torch.triu(torch.ones(T, T), diagonal=1).type_as(s).bool()
        elif self.how == "like":
            m = torch.ones_like(s[0]).triu(1).bool()
        elif self.how == "explicit_cpu":
            m = torch.triu(torch.ones(T, T, device="cpu"), diagonal=1).bool()
        elif self.how == "moved_copy_unused":  # the moved copy is dropped and the CPU original used
            m = torch.triu(torch.ones(T, T), diagonal=1).bool()
            m.to(x.device)
            m.to(s)
        elif self.how == "cpu_index":  # CPU index tensors are fine for a tensor on any device
            keep = torch.arange(T)
            s = s[:, keep][:, :, keep]
            s[:, torch.ones(T, T).triu(1).bool()] = -torch.inf
            m = self.mask.bool()[:T, :T]
        elif self.how == "cpu_value_written":  # a value written into a moved tensor must sit with it
            s[:, torch.ones(T, T).triu(1).bool()] = torch.full((T * (T - 1) // 2,), -torch.inf)
            m = self.mask.bool()[:T, :T]
        elif self.how == "reads_data":  # .item() and an assert on values: the probe runs on real data
            assert float(s.abs().max().item()) >= 0.0
            m = self.mask.bool()[:T, :T]
        s = s.masked_fill(m, -torch.inf) / torch.tensor(2.0)  # a 0-dim CPU tensor may meet any device
        return torch.softmax(s, dim=-1) @ x


class BackToCpu(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).cpu()


class ListHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = [Attn("buffer"), Attn("buffer")]  # a plain list: .to(device) never reaches the heads

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


@pytest.mark.parametrize("how", ["buffer", "new_on_input_device", "moved_to_input", "type_as", "like",
                                 "reads_data", "cpu_index"])
def test_code_that_follows_the_device_is_clean(how):
    for mode in ("eval", "train"):
        assert worker.probe_devices(Attn(how), [[2, 5, 4]], mode) == {"mixed": [], "out_device": "meta",
                                                                      "stay_behind": [], "causal_sdpa": False,
                                                                      "to_cpu": False}


class Sdpa(nn.Module):
    """Causal attention through scaled_dot_product_attention: is_causal=True makes the mask inside, on the inputs'
    device; an attn_mask made on the CPU does not."""

    def __init__(self, how: str):
        super().__init__()
        self.how, self.lin = how, nn.Linear(4, 4)

    def forward(self, x):
        q = self.lin(x)
        if self.how == "is_causal":
            return torch.nn.functional.scaled_dot_product_attention(q, x, x, is_causal=True)
        mask = torch.ones(x.shape[1], x.shape[1]).tril().bool()
        return torch.nn.functional.scaled_dot_product_attention(q, x, x, attn_mask=mask)


def test_sdpa_is_causal_is_reported_and_a_cpu_attn_mask_is_not():
    res = worker.probe_devices(Sdpa("is_causal"), [[2, 5, 4]])
    assert res == {"mixed": [], "out_device": "meta", "stay_behind": [], "causal_sdpa": True, "to_cpu": False}, res
    res = worker.probe_devices(Sdpa("cpu_mask"), [[2, 5, 4]])
    assert not res["causal_sdpa"] and res["mixed"] == [["scaled_dot_product_attention", ["cpu", "meta"]]], res


@pytest.mark.parametrize("how", ["plain", "new_cpu", "explicit_cpu", "moved_copy_unused"])
def test_a_mask_left_on_the_cpu_is_named_at_the_call_that_mixes(how):
    res = worker.probe_devices(Attn(how), [[2, 5, 4]])
    assert res["mixed"] == [["masked_fill", ["cpu", "meta"]]], res


def test_a_cpu_value_written_into_a_moved_tensor_is_caught():
    assert worker.probe_devices(Attn("cpu_value_written"), [[2, 5, 4]])["mixed"] == [["__setitem__",
                                                                                      ["cpu", "meta"]]]


def test_heads_in_a_plain_list_and_an_output_sent_back_to_the_cpu_are_caught():
    assert worker.probe_devices(ListHeads(), [[2, 5, 4]])["mixed"] == [["linear", ["cpu", "meta"]]]
    assert worker.probe_devices(BackToCpu(), [[2, 5, 4]])["out_device"] == "cpu"


def test_the_probe_leaves_the_random_state_and_the_module_alone():
    m = Attn("buffer")
    m.drop = nn.Dropout(0.5)
    before = torch.random.get_rng_state()
    worker.probe_devices(m, [[2, 5, 4]], "train")
    assert torch.equal(before, torch.random.get_rng_state())
    assert m.mask.device.type == "cpu" and m.lin.weight.device.type == "cpu"


def test_the_zygote_warm_up_imports_no_compiler_stack():
    """The meta device's first use imports sympy, dynamo and inductor (seconds, and about 70 MB that every
    worker forked from the zygote copies): the warm-up, device probe included, must not."""
    code = ("import sys; from autograder import worker; worker.warm_up(True); "
            "print(sorted(m for m in ('sympy', 'torch._dynamo', 'torch._inductor') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


class MaskBackToCpu(nn.Module):
    """A registered mask, moved back to the CPU in forward (seen in learners' code: `self.mask.cpu()[...]`)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("mask", torch.triu(torch.ones(5, 5), diagonal=1))

    def forward(self, x):
        s = self.lin(x) @ x.transpose(1, 2)
        return s.masked_fill(self.mask.cpu()[:5, :5].bool(), -torch.inf).softmax(-1) @ x


def test_a_tensor_moved_back_to_the_cpu_is_reported_as_such():
    """The probe says that forward moved a tensor to the CPU, so that the message names `.cpu()` and not
    register_buffer (which the student had used)."""
    res = worker.probe_devices(MaskBackToCpu(), [[2, 5, 4]])
    assert res["to_cpu"] is True and res["mixed"], res


@torch.jit.script
def _hide_made_on_cpu(scores: torch.Tensor, n: int) -> torch.Tensor:
    return scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))


@torch.jit.script
def _hide_made_on_its_device(scores: torch.Tensor, n: int) -> torch.Tensor:
    return scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=scores.device), 1), float("-inf"))


@torch.jit.script
def _hide_moved_and_indexed(scores: torch.Tensor, n: int) -> torch.Tensor:
    keep = torch.arange(n)  # (CPU indices index a tensor on any device)
    mask = torch.triu(torch.ones(n, n), 1).to(torch.bool).to(scores.device)
    return scores.masked_fill(mask, float("-inf"))[:, keep]


class ScriptedMask(nn.Module):
    """A causal attention whose mask is made by a TorchScript helper: the probe sees none of its ops, and took its
    call as one op, so a mask made inside it on the CPU passed (red team, round 22: TorchScript is off in a worker,
    but a submission can turn it on again, and torch.jit.CompilationUnit compiles anyway)."""

    def __init__(self, helper):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.helper = helper

    def forward(self, x):
        s = self.lin(x) @ x.transpose(1, 2)
        return hide_through(self.helper, s, x.shape[1]).softmax(-1) @ x


def hide_through(helper, s, n):  # (a global name the probe finds: the helper's namespace is this module's)
    return globals()[helper](s, n)


@pytest.mark.parametrize("helper, mixed", [("_hide_made_on_cpu", [["masked_fill", ["cpu", "meta"]]]),
                                           ("_hide_made_on_its_device", []), ("_hide_moved_and_indexed", [])])
def test_a_torchscript_helper_that_makes_a_tensor_on_the_cpu_is_caught(helper, mixed):
    res = worker.probe_devices(ScriptedMask(helper), [[2, 5, 4]])
    assert res["mixed"] == mixed, res
