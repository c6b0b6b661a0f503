"""Forking workers from a zygote that imported torch is safe: one thread, no stray descriptors, same answers."""
from __future__ import annotations

import os

import torch

from autograder.proxy import Submission
from autograder.sandbox import Limits, Zygote, make_scratch, remove_scratch
from autograder.source import read
from conftest import REFERENCE


def test_zygote_forks_single_threaded_with_only_its_socket_open():
    z = Zygote()
    try:
        sc = make_scratch(None)
        w = z.spawn(Limits(), sc, None)  # returns once the zygote has warmed up and forked
        status = open(f"/proc/{z.proc.pid}/status").read()
        assert status.split("Threads:")[1].split()[0] == "1"  # no thread pool to be cut in half by fork
        targets = [os.readlink(f"/proc/{z.proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{z.proc.pid}/fd")]
        assert sum(t.startswith("socket:") for t in targets) == 1
        assert not [t for t in targets if t.startswith("/") and t != "/dev/null" and not t.startswith("pipe:")
                    and os.path.realpath(t) != os.path.realpath(f"/proc/self/fd/2")], targets
        w.kill()
        remove_scratch(sc)
    finally:
        z.close()


def test_workers_forked_from_one_zygote_give_identical_seeded_results():
    z = Zygote()
    try:
        outs = []
        for _ in range(3):
            sc = make_scratch(None)
            sub = Submission(read(REFERENCE), lambda: z.spawn(Limits(), sc, None), Limits())
            sub.start()
            m = sub.new("MultiHeadAttention", 3, 4, 6, 0.5, num_heads=2, seed=7)
            outs.append(m(torch.ones(2, 6, 3), mode="train", seed=11))  # dropout draws from the worker's RNG
            sub.close()
            remove_scratch(sc)
        assert torch.equal(outs[0], outs[1]) and torch.equal(outs[1], outs[2])
    finally:
        z.close()
