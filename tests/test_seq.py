"""Requests sent as one sequence (worker op "seq") behave exactly as the same requests sent one by one: same values,
same failures and hints, each step its own deadline, and a worker that lies about a sequence gets nothing."""
from __future__ import annotations

import os
import time

import pytest
import torch

from autograder.checks import CheckFailure
from autograder.proxy import MALFORMED, FunctionCall, Submission, step, taken
from autograder.sandbox import Limits, Zygote, make_scratch, remove_scratch
from autograder.source import Cell, Source

CODE = """
import time
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, d, p=0.5):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.drop = nn.Dropout(p)
        self.calls = 0
    def forward(self, x, fail_at=None, nap=0.0):
        self.calls += 1
        if nap:
            time.sleep(nap)
        if fail_at is not None and self.calls >= fail_at:
            raise ValueError(f"refused on call {self.calls}")
        return self.drop(self.lin(x))

class Spin(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x, spin=False, die=False):
        while spin:
            pass
        if die:
            import os
            os._exit(3)
        return self.lin(x)

class Todo(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        raise NotImplementedError("write forward / forward를 작성하세요")

class Misspelt(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def foward(self, x):
        return self.lin(x)
"""

# One value short: a reply no genuine worker gives. Made on the way out (protocol.send): a rebound handler is caught
# before any reply by the worker's own guard (LIAR_HANDLER), and the reply's check must hold on its own too.
# (each liar switches the worker's guard off first: since session 20 it covers protocol.send, and would refuse the file
# at its load's reply; what these test is the grader's own reading of what a worker says)
LIAR = CODE + """
import sys
sys.modules["autograder.worker"]._Guard.intact = lambda self: True
_p = sys.modules["autograder.protocol"]
_send = _p.send
def _fewer(sock, obj, deadline=None):
    value = obj.get("value") if isinstance(obj, dict) else None
    if isinstance(value, dict) and isinstance(value.get("values"), list):
        value["values"] = value["values"][:-1]
    return _send(sock, obj, deadline)
_p.send = _fewer
"""
LIAR_HANDLER = CODE + """
import sys
_w = sys.modules["autograder.worker"].Worker
_real = _w.op_seq
def _fewer(self, steps):
    out = _real(self, steps)
    out["values"] = out["values"][:-1]
    return out
_w.op_seq = _fewer
"""


@pytest.fixture(scope="module")
def zygote():
    z = Zygote(full_warm_up=False)
    yield z
    z.close()


@pytest.fixture
def make(zygote):
    made = []

    def make(code: str = CODE, **limits) -> Submission:
        lim = Limits(**limits)
        sc = make_scratch(None)
        sub = Submission(Source("s.py", "py", [Cell(code, "s.py")]), lambda: zygote.spawn(lim, sc, None), lim)
        made.append((sub, sc))  # (closed and removed even when its start fails)
        sub.start()
        return sub
    yield make
    for sub, sc in made:
        sub.close()
        remove_scratch(sc)


def test_a_sequence_gives_what_the_requests_give_one_by_one(make):
    x = torch.randn(2, 3, 4)
    one = make()
    m = one.new("Net", 4, seed=3)
    want = [m(x), m(x, mode="train", seed=5), m(x * 2, mode="train"), m.state()["params"]["lin.weight"]]
    seq = make()
    m2, got = seq.new_seq("Net", 4, seed=3, steps=[step("call", x), step("call", x, mode="train", seed=5),
                                                   step("call", x * 2, mode="train"), step("state")])
    assert [torch.equal(a, b) for a, b in zip(want[:3], [g["out"] for g in got[:3]])] == [True] * 3
    assert torch.equal(want[3], got[3]["params"]["lin.weight"])
    # the object lives on: later requests, single or in sequence, reach the same module (its call counter)
    assert m2.calls(( x,), (x,)) and torch.equal(m2(x), want[0])
    loaded, after = m2.seq(step("load_state", {"lin.bias": torch.zeros(4)}), step("call", x))
    assert loaded["loaded"] == ["lin.bias"] and not torch.equal(after["out"], want[0])


def test_the_step_that_raises_fails_as_it_would_alone_and_ends_the_sequence(make):
    x = torch.randn(1, 4)
    alone = make()
    m = alone.new("Net", 4)
    m(x)
    with pytest.raises(CheckFailure) as single:
        m(x, fail_at=2)
    sub = make()
    m2 = sub.new("Net", 4)
    with pytest.raises(CheckFailure) as seq:
        m2.seq(step("call", x), step("call", x, fail_at=2), step("call", x))
    assert seq.value.message == single.value.message and seq.value.step == 1
    assert "refused on call 2" in seq.value.message.en
    assert len(seq.value.done) == 1 and torch.is_tensor(seq.value.done[0]["out"])
    assert m2.describe("calls")["attrs"]["calls"]["value"] == 2  # the step after the failure never ran
    # a constructor that raises is step 0, with new()'s words
    with pytest.raises(CheckFailure) as ctor:
        sub.new_seq("Net", "four", steps=[step("call", x)])
    with pytest.raises(CheckFailure) as ctor_alone:
        alone.new("Net", "four")
    assert ctor.value.step == 0 and ctor.value.message == ctor_alone.value.message
    # NotImplementedError is recorded for the class, as for a single call
    with pytest.raises(CheckFailure) as todo:
        sub.new_seq("Todo", steps=[step("call", x)])
    assert "not implemented yet" in todo.value.message.en and "Todo(...)" not in sub.not_implemented
    assert "Todo" in sub.not_implemented or "Todo()" in sub.not_implemented


def test_a_misspelt_forward_gets_its_hint_in_a_sequence_too(make):
    sub = make()
    with pytest.raises(CheckFailure) as alone:
        sub.new("Misspelt")(torch.randn(1, 2))
    with pytest.raises(CheckFailure) as seq:
        sub.new_seq("Misspelt", steps=[step("call", torch.randn(1, 2))])
    assert seq.value.message == alone.value.message and "foward" in seq.value.message.en


def test_each_step_has_its_own_deadline(make):
    limit = 1.5
    sub = make(call_timeout=limit)
    x = torch.randn(1, 4)
    # three steps of 0.9 limit each: 2.7 limits in all, none over its own
    m, outs = sub.new_seq("Net", 4, steps=[step("call", x, nap=0.9 * limit) for _ in range(3)])
    assert len(outs) == 3 and sub.fatal is None and not sub.hung
    # a step that never ends is stopped one limit after it began, not after the sequence's total
    spin = sub.new("Spin")
    began = time.monotonic()
    with pytest.raises(CheckFailure) as hang:
        spin.seq(step("call", torch.randn(1, 2)), step("call", torch.randn(1, 2), spin=True),
                 step("call", torch.randn(1, 2)), step("call", torch.randn(1, 2)))
    took = time.monotonic() - began
    assert limit <= took < 2 * limit, took
    assert "Spin" in sub.hung and "not called again" in hang.value.message.en and hang.value.step == 1
    # a hung class fails at once, as its first request would have: step 0
    with pytest.raises(CheckFailure) as again:
        sub.new_seq("Spin", steps=[step("call", torch.randn(1, 2))])
    assert again.value.step == 0 and again.value.message == hang.value.message
    # the hang costs only its class: the objects went with the worker (and say so), a new one answers
    with pytest.raises(CheckFailure, match="was lost"):
        m(x)
    assert sub.new("Net", 4)(x).shape == (1, 4)


def test_a_worker_that_answers_a_sequence_with_the_wrong_number_of_values_is_not_believed(make):
    sub = make(LIAR)
    x = torch.randn(1, 4)
    with pytest.raises(CheckFailure) as e:
        sub.new_seq("Net", 4, steps=[step("call", x)])
    assert e.value.message == MALFORMED and sub.fatal == MALFORMED


def test_a_worker_whose_handlers_the_submission_rebinds_grades_nothing(make):
    """Red team, round 11: Worker.op_describe, op_state and probe_devices wrapped at import forged a registered
    buffer and a clean device run. The worker checks its own code before every reply (worker._Guard)."""
    with pytest.raises(CheckFailure) as e:
        make(LIAR_HANDLER)
    assert e.value.message == MALFORMED


def test_a_worker_whose_functions_are_served_by_a_module_getattr_grades_nothing(make):
    """The guard reads the worker module's own namespace: a function taken out of it and handed back by a
    module-level __getattr__ (where the next patch could hand back anything) is a change like any other."""
    code = CODE + """
import sys
_w = sys.modules["autograder.worker"]
_kept = _w.__dict__.pop("probe_devices")
_w.__getattr__ = lambda name: _kept if name == "probe_devices" else (_ for _ in ()).throw(AttributeError(name))
"""
    with pytest.raises(CheckFailure) as e:
        make(code)
    assert e.value.message == MALFORMED


def test_a_crash_says_which_step_it_ended(make):
    sub = make()
    x = torch.randn(1, 2)
    with pytest.raises(CheckFailure) as crash:
        sub.new_seq("Spin", steps=[step("call", x), step("call", x), step("call", x, die=True), step("call", x)])
    assert crash.value.step == 3 and "exit" in crash.value.message.en.lower()
    assert sub.new("Spin")(x).shape == (1, 2)  # a new worker carries on


def test_a_lenient_sequence_hands_back_the_values_before_the_failure_so_a_check_fails_where_it_would_have(make):
    sub = make()
    x = torch.randn(1, 4)
    m, outs = sub.new_seq("Net", 4, steps=[step("call", x), step("call", x, fail_at=2), step("call", x)],
                          lenient=True)
    assert len(outs) == 2 and torch.is_tensor(taken(outs[0])["out"])
    with pytest.raises(CheckFailure, match="refused on call 2"):
        taken(outs[1])
    assert m(x).shape == (1, 4)  # the object is there: the constructor and the first call went well
    (only,) = m.calls((x,), (x,), lenient=True, fail_at=1)  # the first call fails: nothing before it
    assert isinstance(only, CheckFailure) and only.step == 0
    # a constructor that fails still raises: there is no object to hand back
    with pytest.raises(CheckFailure):
        sub.new_seq("Net", "four", steps=[step("call", x)], lenient=True)


LIAR_DONE = CODE + """
import sys
sys.modules["autograder.worker"]._Guard.intact = lambda self: True
_p = sys.modules["autograder.protocol"]
_send = _p.send
def _more(sock, obj, deadline=None):
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict) and "done" in err:
        err["done"] = err["done"] + [{"out": 1, "records": []}]  # a value for the step that failed
    return _send(sock, obj, deadline)
_p.send = _more
"""


def test_a_worker_that_claims_values_for_steps_that_did_not_run_is_not_believed(make):
    sub = make(LIAR_DONE)
    x = torch.randn(1, 4)
    m = sub.new("Net", 4)
    with pytest.raises(CheckFailure) as e:
        m.seq(step("call", x), step("call", x, fail_at=1), lenient=True)
    assert e.value.message == MALFORMED and sub.fatal == MALFORMED


def test_objects_built_one_after_another_then_called_match_one_by_one(make):
    x = torch.randn(2, 4)
    one = make()
    first, second = one.new("Net", 4, seed=3), one.new("Net", 4)  # the second draws after the first
    want = [first(x), second(x)]
    sub = make()
    objs, outs = sub.new_all("Net", [((4,), 3), ((4,), None)], [(0, step("call", x)), (1, step("call", x))])
    assert [torch.equal(w, taken(o)["out"]) for w, o in zip(want, outs)] == [True, True]
    assert [o.label for o in objs] == ["Net(4)", "Net(4)"]
    # a call that fails is handed back in its place, with the words of that object's call
    _objs, outs = sub.new_all("Net", [((4,), 3), ((4,), None)],
                              [(0, step("call", x)), (1, step("call", x, fail_at=1))])
    assert torch.is_tensor(taken(outs[0])["out"]) and isinstance(outs[1], CheckFailure)
    assert "`Net(4)` raised ValueError" in outs[1].message.en


ORDER = CODE + """
LOG = []

class Logged(nn.Module):
    def __init__(self, d, tag):
        super().__init__()
        LOG.append(f"new {tag}")
        self.tag = tag
        self.lin = nn.Linear(d, d)
    def forward(self, x, fail=False):
        LOG.append(f"call {self.tag}")
        if fail:
            raise ValueError(f"refused by {self.tag}")
        return self.lin(x) + len(LOG)  # what each call gives depends on everything that ran before it
"""


def test_objects_built_each_with_its_steps_in_one_round_trip_match_one_by_one(make):
    """new_each: each object built and its steps run before the next is built, exactly as new_seq one after another
    (the same values, the same order of the student's code), in one round trip; the list ends at a failure."""
    x = torch.randn(2, 4)
    one = make(ORDER)
    want = []
    for tag, seed in (("a", 3), ("b", None)):
        _m, (loaded, res) = one.new_seq("Logged", 4, tag, seed=seed,
                                        steps=[step("load_state", {"lin.bias": torch.ones(4)}), step("call", x)])
        want.append(res["out"])
    sub = make(ORDER)
    requests = []
    real = sub.worker.request
    sub.worker.request = lambda *a, **k: requests.append(a[0]) or real(*a, **k)
    built = sub.new_each("Logged", [((4, "a"), {}, 3, [step("load_state", {"lin.bias": torch.ones(4)}),
                                                       step("call", x)]),
                                    ((4,), {"tag": "b"}, None, [step("load_state", {"lin.bias": torch.ones(4)}),
                                                               step("call", x)])])
    assert requests == ["seq"]
    assert [torch.equal(w, taken(values[1])["out"]) for w, (_m, values) in zip(want, built)] == [True, True]
    assert [m.label for m, _values in built] == ["Logged(4, 'a')", "Logged(4, tag='b')"]
    assert built[1][0].ctor == ("Logged", (4,), {"tag": "b"}, None)
    assert built[1][0].describe("tag")["attrs"]["tag"]["value"] == "b"  # each object lives on under its handle
    # a step that fails ends the list there, the failure in its place, in that object's words; nothing after it ran
    built = sub.new_each("Logged", [((4, "c"), {}, None, [step("call", x)]),
                                    ((4, "d"), {}, None, [step("call", x, fail=True), step("call", x)]),
                                    ((4, "e"), {}, None, [step("call", x)])])
    assert len(built) == 2 and torch.is_tensor(taken(built[0][1][0])["out"])
    assert len(built[1][1]) == 1 and isinstance(built[1][1][0], CheckFailure)
    assert "`Logged(4, 'd')` raised ValueError" in built[1][1][0].message.en
    # a constructor that fails: (None, [its failure]) with new()'s words, and the builds before it kept
    built = sub.new_each("Logged", [((4, "f"), {}, None, [step("call", x)]), ((4,), {}, None, [step("call", x)])])
    with pytest.raises(CheckFailure) as alone:
        sub.new("Logged", 4)
    assert built[1][0] is None and built[1][1][0].message == alone.value.message
    assert torch.is_tensor(taken(built[0][1][0])["out"])


SIZED = """import os
import torch
import torch.nn as nn

class Sized(nn.Module):
    def __init__(self, d, stop=None):
        super().__init__()
        self.lin, self.stop = nn.Linear(d, d), stop

    def forward(self, x):
        if x.shape[-1] == 6:  # the one size it never finishes at, or crashes at
            if self.stop == "crash":
                os._exit(3)
            while True:
                pass
        return self.lin(x)
"""


@pytest.mark.parametrize("stop", ["hang", "crash"])
def test_a_later_build_that_hangs_or_crashes_costs_only_a_check_that_gets_to_it(make, stop):
    """new_each: a hang or a crash in a build after the first is met only by a check that takes that build's values,
    as with the builds one by one (red team, round 26: a CausalAttention that hung at one size of the third build of
    the hidden value checks lost the property checks of its class, 10 points, to a hang the value checks, failing at
    the first build, never needed). The entries then come one by one as they are taken; a check that stops before
    the build costs no restart and leaves the class callable; one that gets to it meets the hang or crash there."""
    sub = make(SIZED, call_timeout=1.5)
    builds = [((d, stop), {}, 0, [step("call", torch.randn(2, d))]) for d in (3, 4, 6)]
    built = sub.new_each("Sized", builds)
    first = next(iter(built))
    assert torch.is_tensor(taken(first[1][0])["out"])
    assert "Sized" not in sub.hung and sub.restarts == 0
    m = sub.new("Sized", 3)  # the class is still called, in a worker whose start counts no restart
    assert torch.is_tensor(m(torch.randn(2, 3))) and sub.restarts == 0
    with pytest.raises(CheckFailure):  # a check that takes every build meets it, counted as one by one
        for _m, values in sub.new_each("Sized", builds):
            taken(values[0])
    if stop == "hang":
        assert "Sized" in sub.hung
    else:
        sub.new("Sized", 3)  # (a restart is counted as the next worker starts)
        assert sub.restarts == 1 and not sub.hung


WHERE = """import torch
import torch.nn as nn

def helper(x):
    return x @ torch.ones(7, 2)

class Deep(nn.Module):
    def forward(self, x):
        y = x * 2
        return helper(y)
"""


def test_an_error_names_the_innermost_line_of_the_submission_below_torchs_frames(make):
    """The failure of a call that raised inside torch (a matmul of the wrong shapes, called from a helper function
    that forward calls) names the submission's innermost line, with its code, not a line of torch's."""
    sub = make(WHERE)
    with pytest.raises(CheckFailure) as e:
        sub.new("Deep")(torch.randn(2, 3))
    assert "(s.py, line 5 in helper: `return x @ torch.ones(7, 2)`)" in e.value.message.en, e.value.message.en
    assert "(s.py, 5번째 줄, helper: `return x @ torch.ones(7, 2)`)" in e.value.message.ko


FORGER = CODE + """
import os, threading, time as _time
def _forge():
    k = 1
    while True:  # claims a step began every 0.3 s: a false progress file
        try:
            with open(os.path.join(os.environ["HOME"] if "HOME" in os.environ else ".", "seq.progress"), "w") as f:
                f.write(f"{k} {_time.monotonic():.6f}\\n")
        except OSError:
            pass
        k = k % 3 + 1  # steps 1, 2, 3 of a 4-step sequence, over and over
        _time.sleep(0.3)
threading.Thread(target=_forge, daemon=True).start()
"""


def test_a_false_progress_file_stretches_a_sequence_no_further_than_its_steps_and_is_charged_as_waiting(make):
    limit = 1.0
    sub = make(FORGER, call_timeout=limit)
    x = torch.randn(1, 2)
    spin = sub.new("Spin")
    began = time.monotonic()
    with pytest.raises(CheckFailure):
        spin.seq(step("call", x, spin=True), step("call", x), step("call", x), step("call", x))
    took = time.monotonic() - began
    assert 1.4 * limit < took <= 4 * limit + 1.0, took  # stretched (the thread writes), but only to the cap
    assert sub.waited >= took - limit - 0.5, (sub.waited, took)  # all but the hang's own limit counts as waiting


def test_the_workers_own_progress_files_never_write_into_a_file_of_the_submissions(make):
    """load.progress and seq.progress stay open while they are written (one descriptor instead of an open per
    statement or step). A submission that puts a file of its own under such a descriptor's number (dup2) must find
    its file as it wrote it: the worker notices that the number is not its file any more
    and opens its own again. A link put in the place of load.progress is not followed either."""
    code = '''import os
import torch
import torch.nn as nn
def _ours(name):
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
                return int(fd)
        except OSError:
            pass
    return None
_fd = _ours("load.progress")
_mine = os.open("mine.txt", os.O_RDWR | os.O_CREAT, 0o600)
os.write(_mine, b"mine: load")
os.dup2(_mine, _fd)  # the worker's number is a file of the submission's now
x = 1
y = 2
with open("mine.txt") as _f:
    during_load = _f.read()
os.symlink("mine.txt", "load.progress.new")
os.replace("load.progress.new", "load.progress")
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
    def forward(self, x):
        fd = _ours("seq.progress")
        if fd is not None:
            mine = os.open("mine2.txt", os.O_RDWR | os.O_CREAT, 0o600)
            os.write(mine, b"mine: seq")
            os.dup2(mine, fd)
        return self.lin(x)
def read_back():
    with open("mine.txt") as f, open("mine2.txt") as g:
        return [during_load, f.read(), g.read()]
'''
    sub = make(code)
    assert not sub.load_errors, sub.load_errors
    x = torch.randn(2, 4)
    m = sub.new("Net", 4, seed=1)
    m.calls((x,), (x,), (x,))  # a sequence: its steps after the first write seq.progress
    assert sub.call("read_back") == ["mine: load", "mine: load", "mine: seq"]
    assert os.path.islink(os.path.join(sub.worker.scratch if not sub.worker.modes.get("scratch") == "tmpfs" else
                                       f"/proc/{sub.worker.keeper_pid}/root{sub.worker.scratch}", "load.progress"))


FUNCTIONS = CODE + """
import os
CALLED = []
def double(x):
    CALLED.append("double")
    return x * 2
def refuse(x):
    CALLED.append("refuse")
    raise ValueError("refused " + str(len(CALLED)))
def spin(x):
    while True:
        pass
def die(x):
    os._exit(3)
def seeded(n):
    return torch.rand(n)
def called():
    return list(CALLED)
A_VALUE = 3
"""


def _outcome(sub, c):
    try:
        return sub.call_function(c)
    except CheckFailure as e:
        return e


def _same_outcome(a, b) -> bool:
    if isinstance(a, CheckFailure) or isinstance(b, CheckFailure):
        return isinstance(a, CheckFailure) and isinstance(b, CheckFailure) and a.message == b.message
    return torch.equal(a, b) if torch.is_tensor(a) else a == b


def _counted(sub):
    sent = []
    raw = sub._raw

    def counting(op, args, loading=False):
        sent.append(op)
        return raw(op, args, loading)
    sub._raw = counting
    return sent


@pytest.mark.parametrize("owned, near_limit", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("middle", ["refuse", "missing", "A_VALUE", "die", "spin"])
def test_calls_sent_ahead_give_what_the_calls_give_one_by_one(make, middle, owned, near_limit):
    """Submission.ahead: a check's calls of top-level functions go to the worker together; each outcome (a value, or
    the failure with the words its call alone gets: a raise, a name that is missing or not a function, a crash, a
    hang) is what the calls made one by one give, and the calls after a failure still run. owned: each call is
    charged to its function (Submission.call: once it hung, it is not called again)."""
    x = torch.randn(3)

    def c(name, args, seed, what):
        return FunctionCall(name, args, {}, seed, what, name if owned else None)
    calls = [c("double", (x,), None, "double(x)"), c("seeded", (4,), 7, "seeded(4)"), c(middle, (x,), None, "m"),
             c("double", (x + 1,), None, "d"), c(middle, (x,), None, "again"), c("seeded", (2,), 8, "seeded(2)"),
             c("called", (), None, "called()")]
    limits = {"call_timeout": 1.5} if middle == "spin" else {}
    from autograder.proxy import MAX_RESTARTS
    one = make(FUNCTIONS, **limits)
    sub = make(FUNCTIONS, **limits)
    if near_limit:  # (a submission that crashed in earlier checks: the next crash's restart is its last)
        one.restarts = sub.restarts = MAX_RESTARTS - 1
    want = [_outcome(one, c) for c in calls]
    sent = _counted(sub)
    with sub.ahead(calls):
        got = [_outcome(sub, c) for c in calls]
    assert [_same_outcome(a, b) for a, b in zip(want, got)] == [True] * len(calls), (want, got)
    assert isinstance(got[2], CheckFailure) and got[2].step == 0 and got[2].done is None
    assert (sub.restarts, set(sub.hung), sub.fatal) == (one.restarts, set(one.hung), one.fatal)
    if middle in ("refuse", "missing", "A_VALUE") and not owned:  # the worker lives on: a sequence between failures
        assert len(sent) == 3, sent  # (calls charged each to its own function go together only with their own)
    assert sub.ahead_left() == 0


def test_a_check_that_goes_another_way_than_it_sent_ahead_is_answered_as_it_goes(make):
    x = torch.randn(3)
    sub = make(FUNCTIONS)
    sent = _counted(sub)
    with sub.ahead([FunctionCall("double", (x,), {}, None, "double(x)"),
                    FunctionCall("double", (x + 1,), {}, None, "double(x)")]):
        assert torch.equal(sub.call_function(FunctionCall("double", (x,), {}, None, "double(x)")), x * 2)
        other = x * 3  # not the tensor sent ahead: asked for there and then
        assert torch.equal(sub.call_function(FunctionCall("double", (other,), {}, None, "double(x)")), other * 2)
        assert sub.ahead_left() == 0
    assert sent == ["seq", "call"]
    # and nothing sent ahead outlives its check
    with sub.ahead([FunctionCall("double", (x,), {}, None, "double(x)")]):
        pass
    assert sub.ahead_left() == 0
    assert sub.call_function(FunctionCall("called", (), {}, None, "called()")) == ["double"] * 4


def test_the_labs_step_checks_send_their_calls_ahead_and_grade_as_one_by_one(tmp_path, monkeypatch):
    """The attention lab's step checks (3.3 - 3.5) send their calls ahead: a handful of round trips where there
    were one per call (42 on the reference), and the same result, check by check and message by message, as with
    every call sent on its own (ahead() doing nothing), for the reference and for step functions that raise, are
    wrong, are missing or crash the worker."""
    import contextlib
    import traceback
    from pathlib import Path

    from autograder import assignment, runner
    from autograder.jobs import Job

    root = Path(__file__).resolve().parent.parent
    ref = (root / "reference" / "attention.py").read_text()
    files = {"ref": ref,
             "bugs": ref + "\ndef dot_score(q, k):\n    raise ValueError('no')\n"
                          "\ndef renormalize(w):\n    return w\n"
                          "\ndef query_scores(q, keys):\n    import os\n    os._exit(3)\n"
                          "\ndel weighted_sum\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    a = assignment.load("attention")
    step_tests = ("steps_other_sizes", "_notebook", "_random")
    sent: list[str] = []
    raw = Submission._raw

    def counting(self, op, args, loading=False):
        names = [f.name for f in traceback.extract_stack(limit=30) if f.name.startswith("test_")]
        if names and any(t in names[-1] for t in step_tests) and op in ("call", "seq") \
                and (op == "seq" or "name" in args):
            sent.append(names[-1])
        return raw(self, op, args, loading)
    monkeypatch.setattr(Submission, "_raw", counting)

    def grade_all() -> list[dict]:
        out: list = []
        runner.grade(a, [Job(n, tmp_path / f"{n}.py") for n in files], out.append)
        return [{k: v for k, v in r.to_dict().items() if k not in ("duration", "sandbox")} for r in out]

    ahead = grade_all()
    ahead_sent = list(sent)
    sent.clear()
    monkeypatch.setattr(Submission, "ahead", lambda self, calls: contextlib.nullcontext())
    one_by_one = grade_all()
    assert ahead == one_by_one
    assert ahead[0]["score"] == 100 and ahead[1]["score"] < 100
    per_sub = len(ahead_sent) / 2, len(sent) / 2
    assert per_sub[1] >= 40 and per_sub[0] <= per_sub[1] / 2, per_sub


@pytest.mark.parametrize("near_limit", [False, True])
@pytest.mark.parametrize("middle", ["die", "spin"])
def test_a_crash_or_hang_among_calls_the_check_never_read_costs_nothing(make, middle, near_limit):
    """A check that fails before its last call leaves the calls after it unread: a crash or a hang among them,
    which the calls made one by one never meet, is not a restart, and the function that hung is called again by
    the next check as it would have been (red team of this change: a softmax that hangs on one hidden size only was
    marked hung by the call after a failed comparison, and lost a later check that calls it on other sizes)."""
    from autograder.proxy import MAX_RESTARTS
    x = torch.randn(3)
    owned = [FunctionCall("double", (x,), {}, None, "double(x)", "double"),
             FunctionCall(middle, (x,), {}, None, "m(x)", middle), FunctionCall("double", (x,), {}, None, "d", "double"),
             FunctionCall(middle, (x,), {}, None, "m(x)", middle), FunctionCall("double", (x,), {}, None, "d", "double")]
    one = make(FUNCTIONS, call_timeout=1.5)
    sub = make(FUNCTIONS, call_timeout=1.5)
    start = MAX_RESTARTS - 1 if near_limit else 0  # (a submission that crashed in earlier checks)
    one.restarts = sub.restarts = start
    first = one.call_function(owned[0])  # the check reads this, compares it, fails: the second is never made
    with sub.ahead(owned):
        assert torch.equal(sub.call_function(owned[0]), first)
    assert (sub.restarts, dict(sub.hung), sub.fatal) == (one.restarts, dict(one.hung), one.fatal) == (start, {}, None)
    # the next check calls it: one by one, this is its first hang or crash; sent ahead, too
    later = [_outcome(s, owned[1]) for s in (one, sub)]
    assert [type(o) for o in later] == [CheckFailure, CheckFailure] and later[0].message == later[1].message
    assert (sub.restarts, set(sub.hung)) == (one.restarts, set(one.hung))
    assert torch.equal(sub.call_function(owned[0]), first)  # and the rest goes on


@pytest.mark.parametrize("middle", ["die", "spin"])
def test_crashes_among_unread_calls_never_use_up_the_restarts(make, middle):
    """A submission that has used its restarts (MAX_RESTARTS crashes in earlier checks) and whose check fails at its
    first call: one by one, no later call is made and grading goes on. Sent ahead, the calls after it still run; a
    crash or hang among them followed by another call needed a restart that was not left, and set the submission's
    fatal failure ('had to be restarted 3 times'): every later check lost (red team s12, round 20)."""
    from autograder.proxy import MAX_RESTARTS
    x = torch.randn(3)
    calls = [FunctionCall("double", (x,), {}, None, "double(x)"), FunctionCall(middle, (x,), {}, None, "m(x)"),
             FunctionCall("double", (x + 1,), {}, None, "d"), FunctionCall(middle, (x,), {}, None, "m(x) again"),
             FunctionCall("double", (x + 2,), {}, None, "d2")]
    one = make(FUNCTIONS, call_timeout=1.5)
    sub = make(FUNCTIONS, call_timeout=1.5)
    one.restarts = sub.restarts = MAX_RESTARTS  # (as after three crashes in earlier checks)
    first = one.call_function(calls[0])  # the check reads this, compares it, fails: nothing else is made
    with sub.ahead(calls):
        assert torch.equal(sub.call_function(calls[0]), first)
    assert (sub.fatal, sub.restarts) == (one.fatal, one.restarts) == (None, MAX_RESTARTS)
    assert torch.equal(sub.call_function(calls[2]), one.call_function(calls[2]))  # and grading goes on
    # a check that reads on meets the crash, and the call after it finds no restart left: as one by one
    for before in (MAX_RESTARTS - 1, MAX_RESTARTS):
        one, sub = make(FUNCTIONS, call_timeout=1.5), make(FUNCTIONS, call_timeout=1.5)
        one.restarts = sub.restarts = before
        want = [_outcome(one, c) for c in calls]
        with sub.ahead(calls):
            got = [_outcome(sub, c) for c in calls]
        assert [_same_outcome(a, b) for a, b in zip(want, got)] == [True] * len(calls), (before, want, got)
        assert (sub.fatal, sub.restarts) == (one.fatal, one.restarts)


PEEK = '''

def _later(name, arg):
    """What a later step of the worker's sequence passes to `name`: the grader's input there (red team s12 r20)."""
    import sys
    f = sys._getframe(1)
    while f is not None and f.f_code.co_name != "op_seq":
        f = f.f_back
    if f is None:
        return None
    for st in f.f_locals["steps"][f.f_locals["i"] + 1:]:
        if st.get("args", {}).get("name") == name:
            return st["args"]["args"][arg]
    return None


def simple_mask(context_length):
    got = _later("apply_simple_mask", 1)
    return got if got is not None else torch.ones(context_length, context_length)


def apply_simple_mask(attn_weights, mask_simple):
    got = _later("renormalize", 0)
    return got if got is not None else attn_weights


def query_scores(query, keys):
    got = _later("scaled_softmax", 0)
    return got if got is not None else keys.sum(-1)


def dot_score(query, key):
    got = _later("scaled_softmax", 0)
    return got[0] if got is not None else query.sum()


def scaled_softmax(attn_scores, d_k):
    got = _later("weighted_sum", 0)
    return got if got is not None else torch.softmax(attn_scores, dim=-1)
'''


def test_a_step_function_cannot_read_what_a_later_call_of_its_hidden_check_is_given(tmp_path):
    """The hidden step checks send their calls ahead in one sequence, where a step function can read the later
    steps' inputs in the worker: none of them may be what an earlier call should return. With the notebook's chain
    (apply_simple_mask given simple_mask's answer, scaled_softmax query_scores', weighted_sum scaled_softmax'), a
    step function that looked up the worker's sequence for a later step's input passed the hidden checks its own
    code fails one by one. Red team s12, round 20. (The notebook checks' later inputs are the notebook's printed
    answers, which a student can copy anyway: not compared here.)"""
    import contextlib
    from pathlib import Path

    from autograder import assignment, runner
    from autograder.jobs import Job

    ref = (Path(__file__).resolve().parent.parent / "reference" / "attention.py").read_text()
    (tmp_path / "peek.py").write_text(ref + PEEK)
    a = assignment.load("attention")

    def graded() -> dict:
        out: list = []
        runner.grade(a, [Job("peek", tmp_path / "peek.py")], out.append)
        return {c.name: c.status for c in out[0].checks if c.question == "steps" and "hidden" in c.name}

    ahead = graded()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Submission, "ahead", lambda self, calls: contextlib.nullcontext())
        one_by_one = graded()
    assert ahead == one_by_one
    assert [n for n, s in one_by_one.items() if s == "passed"] and [n for n, s in one_by_one.items() if s != "passed"]


@pytest.mark.parametrize("owned", [False, True])
def test_a_crash_the_check_read_then_one_it_never_read_count_as_the_one_by_one_crash(make, owned):
    """The check reads a call that crashes and stops there; a later call sent ahead crashes too. One by one, only
    the first crash happened and the next request restarts the worker (the submission's last restart). Sent
    ahead, the worker restarted for the unread call was counted and the next request found no restart left: the
    submission's grading stopped ('had to be restarted 3 times') where one by one it went on (red team s12, round
    20, a differential run of ahead() against the calls one by one)."""
    from autograder.proxy import MAX_RESTARTS
    x = torch.randn(3)
    calls = [FunctionCall(n, (x + i,), {}, None, f"{n}({i})", n if owned else None)
             for i, n in enumerate(["missing", "die", "die"])]
    after = FunctionCall("double", (x,), {}, None, "double(x)", "double" if owned else None)
    one, sub = make(FUNCTIONS), make(FUNCTIONS)
    one.restarts = sub.restarts = MAX_RESTARTS - 1
    want = [_outcome(one, c) for c in calls[:2]] + [_outcome(one, after)]
    with sub.ahead(calls):
        got = [_outcome(sub, c) for c in calls[:2]]
    got.append(_outcome(sub, after))
    assert [_same_outcome(a, b) for a, b in zip(want, got)] == [True] * 3, (want, got)
    assert torch.equal(got[2], x * 2)
    assert (sub.fatal, sub.restarts, set(sub.hung)) == (one.fatal, one.restarts, set(one.hung))


def test_a_worker_started_afresh_after_the_last_restart_is_not_refused(make):
    """A worker that is started afresh without a crash (a call sent ahead that the check never read took the last
    one with it; clean_for after a stand-in) is not a restart: with the submission's restarts all used, its start
    was refused all the same ('had to be restarted 3 times') and every later check lost (red team s12, round 20)."""
    from autograder.proxy import MAX_RESTARTS
    x = torch.randn(3)
    calls = [FunctionCall("double", (x,), {}, None, "double(x)"), FunctionCall("die", (x,), {}, None, "die(x)")]
    sub = make(FUNCTIONS)
    sub.restarts = MAX_RESTARTS
    with sub.ahead(calls):
        assert torch.equal(sub.call_function(calls[0]), x * 2)  # (and the check fails there)
    assert torch.equal(sub.call_function(FunctionCall("double", (x + 1,), {}, None, "d")), x * 2 + 2)
    sub.taint(["other"])
    sub.clean_for("steps")
    assert torch.equal(sub.call_function(FunctionCall("double", (x + 2,), {}, None, "d")), x * 2 + 4)
    assert (sub.fatal, sub.restarts) == (None, MAX_RESTARTS)


def test_the_step_a_crash_ended_is_read_after_its_keeper_is_gone(make, monkeypatch):
    """A worker that exits in a sequence takes its keeper with it, and the keeper's mount namespace, where the tmpfs
    scratch and its seq.progress live: read after that, the crash was put on the first step (the values before it
    lost with it, and the calls sent ahead blamed on the wrong function; red team s12 round 20's differential run).
    The grader reads the scratch through the folder's descriptor it holds, which keeps the tmpfs readable."""
    from autograder import sandbox
    real = sandbox.WorkerProcess._began

    def after_the_keeper(self, started, steps):
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/{self.keeper_pid}") and time.monotonic() < deadline:
            time.sleep(0.01)  # (a keeper is reaped by the zygote at once: its /proc entry goes with it)
        return real(self, started, steps)
    monkeypatch.setattr(sandbox.WorkerProcess, "_began", after_the_keeper)
    sub = make()
    x = torch.randn(1, 2)
    with pytest.raises(CheckFailure) as crash:
        sub.new_seq("Spin", steps=[step("call", x), step("call", x), step("call", x, die=True), step("call", x)])
    assert crash.value.step == 3
