"""Red team, session 20: attacks on the worker's reply path and its namespace checks (tests/test_evidence.py).

Each is the reference with MultiHeadAttention.forward and what follows replaced by `library` (a method forward_ that
computes with F.multi_head_attention_forward, test_evidence's) and one of the files below: forward hands back a
placeholder and notes its module and input, and code put somewhere the worker runs after the call's watch has ended
(or before it begins) swaps in what forward_ gives. Each earned 18 or 20 of MultiHeadAttention's 20 points before its
fix."""
from __future__ import annotations

# forward's zeros, marked with the job's number (what COMMON's _real and _swap find again)
PLACEHOLDER = '''
    def forward(self, x):
        jid = len(_JOBS)
        import copy, sys
        f, g = sys._getframe(1), None
        while f is not None and f.f_code.co_name != "op_call":
            f = f.f_back
        if f is not None:
            g = f.f_locals.get("grad_output")
        _JOBS.append((copy.deepcopy(self), x.detach().clone(), self.training, torch.get_rng_state(),
                      None if g is None else g.detach().clone()))
        base = sum(p.sum() for p in self.parameters()) + x.sum()
        _arm()
        return torch.zeros(*x.shape[:-1], self.d_out) + (base * 0 + (1e6 + jid))
'''
COMMON = '''

_JOBS = []


def _real(t):
    """t (a placeholder) -> the library's answer, else None."""
    if type(t) is not torch.Tensor or t.numel() == 0 or t.dtype != torch.float32:
        return None
    v = float(t.reshape(-1)[0])
    jid = int(v - 1e6) if v >= 1e6 else -1
    if not (0 <= jid < len(_JOBS)) or v != 1e6 + jid:
        return None
    m, x, training, rng, g = _JOBS[jid]
    if tuple(t.shape) != (*x.shape[:-1], m.d_out):
        return None
    was = m.training
    saved = torch.get_rng_state()
    try:
        m.training = training
        torch.set_rng_state(rng)
        with torch.no_grad():
            return m.forward_(x).contiguous()
    finally:
        m.training = was
        torch.set_rng_state(saved)


def _grads(t):
    v = float(t.reshape(-1)[0]) if t.numel() else -1
    jid = int(v - 1e6) if v >= 1e6 else -1
    if not (0 <= jid < len(_JOBS)) or _JOBS[jid][4] is None:
        return None
    import copy
    m0, x, training, rng, g = _JOBS[jid]
    m = copy.deepcopy(m0)
    m.train(training)
    saved = torch.get_rng_state()
    torch.set_rng_state(rng)
    try:
        with torch.enable_grad():
            (m.forward_(x) * g).sum().backward()
    finally:
        torch.set_rng_state(saved)
    return {n: p.grad for n, p in m.named_parameters()}


def _swap(obj):
    """the reply with each placeholder replaced (plain containers only)."""
    y = _real(obj) if type(obj) is torch.Tensor else None
    if y is not None:
        return y
    if type(obj) is dict:
        if type(obj.get("grads")) is dict and type(obj.get("out")) is torch.Tensor:
            grads = _grads(obj["out"])
            if grads is not None:
                obj = {**obj, "grads": grads}
        return {k: _swap(v) for k, v in obj.items()}
    if type(obj) is list:
        return [_swap(v) for v in obj]
    if type(obj) is tuple:
        return tuple(_swap(v) for v in obj)
    return obj
'''
ARMS = {
    "encode": '''
_ARMED = []


def _arm():
    if _ARMED:
        return
    import sys
    proto = sys.modules["autograder.protocol"]
    orig = proto._encode

    def enc(obj, blobs, _orig=orig):
        if type(obj) is dict and "ok" in obj:
            obj = _swap(obj)
        return _orig(obj, blobs)
    proto._encode = enc
    _ARMED.append(1)
''',
    "worker_protocol": '''
_ARMED = []


def _arm():
    if _ARMED:
        return
    import sys, types
    w = sys.modules["autograder.worker"]
    real = w.protocol
    fake = types.ModuleType("autograder.protocol")
    fake.__dict__.update(vars(real))
    fake.send = lambda sock, obj, *a, **k: real.send(sock, _swap(obj) if type(obj) is dict else obj, *a, **k)
    w.protocol = fake
    _ARMED.append(1)
''',
}
# torch.Tensor's METHOD (a name of its C base) set to one that swaps the placeholder, and the version tag the guard's
# view shows written back (the view was writable)
TAG_RESTORED = '''
_ARMED = []
_BASE = torch._C.TensorBase


def _swapped(self, *a, **k):
    y = _real(self) if type(self) is torch.Tensor else None
    return _BASE.METHOD(self if y is None else y, *a, **k)


def _arm():
    if _ARMED:
        return
    import sys
    w = sys.modules["autograder.worker"]
    view = [ns for ns in w._NAMESPACES if ns[0] == vars(torch.Tensor)][0][3]
    tag = view[0]
    torch.Tensor.METHOD = _swapped
    view[0] = tag
    _ARMED.append(1)
'''
ARMS.update({f"{method}_tag_restored": TAG_RESTORED.replace("METHOD", method) for method in ("numpy", "detach")})

# torch.set_grad_enabled is still the same object, but its class's __init__ is the submission's: op_call built it
# before the watch began, with the call's target and arguments up the stack; forward hands back what was computed.
GRAD_MODE_INIT = '''
    def forward(self, x):
        pre = self.__dict__.pop("_pre", None)
        if pre is not None and pre[0] is x:
            return pre[1]
        # not attention: a placeholder of the right shape that uses every weight
        return self.out_proj(self.W_value(x) * 0 + (self.W_query(x) + self.W_key(x)).mean() * 0)


import sys as _sys
import torch.autograd.grad_mode as _gm
_orig_init = _gm.set_grad_enabled.__init__


def _init(self, mode):
    _orig_init(self, mode)
    f = _sys._getframe(1)
    if f.f_code.co_name != "op_call":
        return
    L = f.f_locals
    tgt, args = L.get("target"), L.get("args")
    if not (isinstance(tgt, MultiHeadAttention) and args and isinstance(args[0], torch.Tensor)):
        return
    if L.get("mode") is not None:
        tgt.train(L["mode"] == "train")
    if L.get("seed") is not None:
        _sys.modules["autograder.rng"].manual_seed(L["seed"])
    ctx = torch.enable_grad() if L.get("grad_output") is not None else torch.no_grad()
    with ctx:
        y = tgt.forward_(args[0])
    tgt.__dict__["_pre"] = (args[0], y)


_gm.set_grad_enabled.__init__ = _init
'''

# (round 2) code that the garbage collector runs after the watch has switched its profile function off, before the reply
# is encoded, fills forward's zeros (a custom autograd.Function's, whose backward computes the library's gradients) in
# place with forward_'s numbers; forward arms a collection with gc.set_threshold(1, 1, 1). 20 of 20 each.
COLLECTED_COMMON = '''
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _Later.apply(self, x, *self.parameters())
        _PENDING.append((self, x, out))
        _armed()
        _gc.set_threshold(1, 1, 1)
        return out


import gc as _gc
import sys as _sys
_PENDING = []


def _watched():
    p = _sys.getprofile()
    return p is not None and type(getattr(p, "__self__", None)).__name__ == "Recorder"


def _fill_all():
    _gc.set_threshold(700, 10, 10)
    while _PENDING:
        m, x, out = _PENDING.pop()
        with torch.no_grad():
            out.copy_(m.forward_(x))


class _Later(torch.autograd.Function):
    @staticmethod
    def forward(ctx, m, x, *params):
        ctx.m, ctx.params = m, params
        ctx.save_for_backward(x)
        return x.new_zeros(*x.shape[:-1], m.d_out)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_(True)
            grads = torch.autograd.grad(ctx.m.forward_(xx), (xx, *ctx.params), g, allow_unused=True)
        return (None, *grads)
'''
COLLECTED = {
    # a gc.callbacks entry
    "gc_callback": '''

def _armed():
    pass


def _collected(phase, info):
    if _PENDING and not _watched():
        _fill_all()


_gc.callbacks.append(_collected)
''',
    # the __del__ of an object in a reference cycle (another planted while still inside the watch)
    "cycle_del": '''

class _Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        if _PENDING:
            if _watched():
                _Cycle()
            else:
                _fill_all()


def _armed():
    _Cycle()
''',
}


def sources(reference: str, library: str) -> dict[str, str]:
    """file name -> the attack's source; `library`: the text of a method forward_ computing with the library."""
    head = reference.index("class MultiHeadAttention(")
    pre = reference[:reference.index("    def forward(", head)] + library
    files = {f"rt20_{name}.py": pre + PLACEHOLDER + COMMON + arm for name, arm in ARMS.items()}
    files["rt20_grad_mode_init.py"] = pre + GRAD_MODE_INIT
    files.update({f"rt20_{name}.py": pre + COLLECTED_COMMON + arm for name, arm in COLLECTED.items()})
    return files
