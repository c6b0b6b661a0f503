"""Red team, session 21: code of the submission's run inside the library watch's profile function (tests/test_evidence.py).

CPython turns profiling off while a profile function runs, so what the submission gets run in there makes no events:
these files run F.multi_head_attention_forward there, for the call under way, and forward hands back what it gave.
Each is the reference up to MultiHeadAttention's forward and then one of the forwards below with COMMON. Where the
trick gives nothing (an unwatched call: no profile function), forward runs the library itself, in plain sight. Each
earned all 20 of MultiHeadAttention's points (100/100) before session 21's fixes: a code object's constant, its name
(a str subclass) or its co_names (a tuple subclass), which the profile function hashed or measured; a __class__
property, which isinstance asked; an audit hook, run at the profile function's read of frame.f_code; a signal
handler, run at the profile function's first instruction; (round 2) either of the last, or a garbage-collector
callback, carried by a call of the encoder layer's code in an attention-only step; the watch's own saw and
saw_all replaced on its object, from forward; (round 3) the watch's switches made by the submission, through the
__exit__ of a Recorder of its own or the watch's own run early."""
from __future__ import annotations

COMMON = '''

import types as _types
_BOX = {}
_lib_forward = MultiHeadAttention.forward_  # (the library's answer: `library`, see sources)


def _run_job():
    job = _BOX.pop("job", None)
    if job is not None:
        _BOX["out"] = _lib_forward(*job)


def _noop():
    return None


_LINE = torch.nn.functional.multi_head_attention_forward.__code__.co_firstlineno
'''

POKED = '''
    def forward(self, x):
        _BOX["job"] = (self, x)
        _poke()
        out = _BOX.pop("out", None)
        _BOX.pop("job", None)
        return _lib_forward(self, x) if out is None else out
'''

TRIGGERS = {
    # a constant of the submission's in a code object that starts at the library's first line: hashed
    "consts": '''

class _Trigger:
    def __hash__(self):
        _run_job()
        return 12345

    def __eq__(self, other):
        return self is other


_poke = _types.FunctionType(_noop.__code__.replace(co_firstlineno=_LINE,
                                                   co_consts=_noop.__code__.co_consts + (_Trigger(),)), globals())
''',
    # the code object's name a str subclass: hashed with the code
    "name": '''

class _Name(str):
    def __hash__(self):
        _run_job()
        return str.__hash__(self)

    def __eq__(self, other):
        return str.__eq__(self, other)


_poke = _types.FunctionType(_noop.__code__.replace(co_firstlineno=_LINE, co_name=_Name("_noop")), globals())
''',
    # its co_names a tuple subclass: measured (len) at every call event
    "names": '''

class _Names(tuple):
    def __len__(self):
        _run_job()
        return tuple.__len__(self)


_poke = _types.FunctionType(_noop.__code__.replace(co_names=_Names(_noop.__code__.co_names)), globals())
''',
}

# a property named __class__, which isinstance() asks of the module at its _call_impl's profile event
CLASS_PROPERTY = '''
    @property
    def __class__(self):
        import sys
        f = sys._getframe(1)
        if f.f_code.co_name == "_profile":
            call = f.f_locals.get("frame")
            args = call.f_locals.get("args") if call is not None else None
            if args and isinstance(args[0], torch.Tensor):
                self.__dict__["_pending"] = (args[0], _lib_forward(self, args[0]))
        return type(self)

    def forward(self, x):
        pending = self.__dict__.pop("_pending", None)
        if pending is not None and pending[0] is x:
            return pending[1]
        return _lib_forward(self, x)
'''


# any module call of forward's (its _call_impl event), with the job set: an audit hook of the submission's ran at the
# frame.f_code the profile function read
AUDITED = '''
    def forward(self, x):
        _BOX["job"] = (self, x)
        self.W_query(x)
        out = _BOX.pop("out", None)
        _BOX.pop("job", None)
        return _lib_forward(self, x) if out is None else out
'''
AUDIT_HOOK = '''

import sys as _sys


def _hook(event, args):
    if event == "object.__getattr__" and len(args) > 1 and args[1] == "f_code":
        _run_job()


_sys.addaudithook(_hook)
'''

# a timer every 20 us while forward makes module calls: its handler runs wherever the interpreter is, and does the
# job when that is inside the profile function (known gap without the C filter: the profile function is Python code)
SIGNALLED = '''
    def forward(self, x):
        import signal
        _BOX["job"] = (self, x)
        signal.setitimer(signal.ITIMER_REAL, 2e-5, 2e-5)
        for _ in range(3000):
            self.W_query(x)
            if "out" in _BOX:
                break
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        out = _BOX.pop("out", None)
        _BOX.pop("job", None)
        return _lib_forward(self, x) if out is None else out
'''
SIGNAL_HANDLER = '''

import signal as _signal


def _handler(signum, frame):
    if frame is not None and frame.f_code.co_name == "_profile":
        _run_job()


_signal.signal(_signal.SIGALRM, _handler)
'''


# (round 2) a call of the encoder layer's own code, which the transformer watch notes and an attention-only step
# does not ask for, as the carrier: the profile function ran for it, and a garbage-collector callback, or the signal
# handler above, ran the job inside it
CARRIED = '''
    def forward(self, x):
        import gc, signal
        _BOX["job"] = (self, x)
        old = gc.get_threshold()
        gc.callbacks.append(_gc_cb)
        gc.set_threshold(1)
        signal.setitimer(signal.ITIMER_REAL, 2e-5, 2e-5)
        try:
            for _ in range(300):
                _carrier()
                if "out" in _BOX:
                    break
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            gc.set_threshold(*old)
            gc.callbacks.remove(_gc_cb)
        out = _BOX.pop("out", None)
        _BOX.pop("job", None)
        return _lib_forward(self, x) if out is None else out
'''
CARRIER = '''

import sys as _sys


class _Fake:
    pass


def _carrier():
    try:
        torch.nn.TransformerEncoderLayer._ff_block(_Fake(), None)
    except AttributeError:
        pass


def _in_profile(frame):
    while frame is not None:
        if frame.f_code.co_name == "_profile":
            return True
        frame = frame.f_back
    return False


def _gc_cb(phase, info):
    if phase == "start" and "job" in _BOX and _in_profile(_sys._getframe(1)):
        _run_job()
'''

# the watch's own methods replaced on its object, from forward (no trick inside the profile function at all)
UNSAW = '''
    def forward(self, x):
        import sys
        watch = getattr(sys.getprofile(), "__self__", None)
        if watch is not None:
            watch.saw = lambda tag: None
            watch.saw_all = lambda: None
        return _lib_forward(self, x)
'''


# (round 3) the watch's own switches, made by the submission: a Recorder of its own (the watch's class) whose
# __exit__ switches the profile function off as the watch's own switch, and another that puts the watch's back; or
# the watch's own __exit__ run early, and it put back by such a Recorder
EXIT_GADGET = '''
    def forward(self, x):
        import sys
        hook = sys.getprofile()
        watch = getattr(hook, "__self__", None)
        if watch is None or not hasattr(watch, "names"):
            return _lib_forward(self, x)
        R = type(watch)
        off = R(list(watch.names), 0)
        off.hook, off.was = hook, None
        off.__exit__(None, None, None)
        try:
            out = _lib_forward(self, x)
        finally:
            _rearm(watch, hook)
        return out
'''
EXIT_EARLY = '''
    def forward(self, x):
        import sys
        hook = sys.getprofile()
        watch = getattr(hook, "__self__", None)
        if watch is None or not hasattr(watch, "names"):
            return _lib_forward(self, x)
        watch.__exit__(None, None, None)
        try:
            out = _lib_forward(self, x)
        finally:
            on = _rearm(watch, hook)
            watching = on.__exit__.__func__.__globals__["_WATCHING"]
            if watch not in watching:
                watching.append(watch)
        return out
'''
# (the watch's hook put back by the __exit__ of another Recorder of the submission's)
REARM = '''

def _rearm(watch, hook):
    on = type(watch)(list(watch.names), 0)
    on.hook, on.was = None, hook
    on.__exit__(None, None, None)
    return on
'''


def sources(reference: str, library: str) -> dict[str, str]:
    """{file name: source}: the reference's MultiHeadAttention.forward and what follows it replaced; `library`: the
    text of a method forward_ computing with the library (test_evidence's LIBRARY_FORWARD_)."""
    forward = reference.index("    def forward(", reference.index("class MultiHeadAttention("))
    head = reference[:forward] + library
    files = {f"rt21_{name}.py": head + POKED + COMMON + trigger for name, trigger in TRIGGERS.items()}
    files["rt21_class_property.py"] = head + CLASS_PROPERTY + COMMON
    files["rt21_audit_hook.py"] = head + AUDITED + COMMON + AUDIT_HOOK
    files["rt21_signal.py"] = head + SIGNALLED + COMMON + SIGNAL_HANDLER
    files["rt21_carried.py"] = head + CARRIED + COMMON + SIGNAL_HANDLER + CARRIER
    files["rt21_unsaw.py"] = head + UNSAW + COMMON
    files["rt21_exit_gadget.py"] = head + EXIT_GADGET + COMMON + REARM
    files["rt21_exit_early.py"] = head + EXIT_EARLY + COMMON + REARM
    return files
