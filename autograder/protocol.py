"""Length-prefixed messages between grader and worker: JSON plus raw tensor bytes, never pickle."""
from __future__ import annotations

import json
import re
import select
import socket
import struct
import threading
import time
from typing import Any, Callable

from .safetext import clean

# Only plain numeric dtypes cross the boundary; anything else is refused on decode.
_DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
DTYPES: dict = {}
_NAMES: dict = {}


_SIZES: dict = {}  # dtype -> bytes per element
_NUMPY: dict = {}  # dtype -> numpy's dtype, where numpy has it; None -> the numpy module
_torch_module = None


_MAKERS: dict[str, Any] = {}  # see _torch()


def _torch():
    """torch, imported on first use: launching the zygote must not wait for the grader's own torch import."""
    global _torch_module
    if _torch_module is None:
        import torch
        DTYPES.update({n: getattr(torch, n) for n in _DTYPE_NAMES})
        _NAMES.update({v: k for k, v in DTYPES.items()})
        _SIZES.update({v: torch.empty((), dtype=v).element_size() for v in DTYPES.values()})
        try:  # numpy's frombuffer and torch.from_numpy: the same tensor in about half the time of torch.frombuffer
            import numpy
            _NUMPY.update({v: torch.empty((), dtype=v).numpy().dtype for v in DTYPES.values()
                           if v is not torch.bfloat16})  # (numpy has no bfloat16)
            _NUMPY[None] = numpy
        except Exception:  # noqa: BLE001 - no numpy (or a broken one): torch.frombuffer for every dtype
            _NUMPY.clear()
        # What _tensor() builds tensors with, taken now (the worker loads torch here before any of the submission's
        # code runs, worker.Worker): a submission that rebound torch.from_numpy at import saw every input the worker
        # decoded, before the call it was for began, and ran nn.TransformerEncoderLayer on it there, out of the
        # call's watch (the exam's Q3: 100/100; red team, round 26).
        _MAKERS.update(empty=torch.empty, from_numpy=torch.from_numpy, frombuffer=torch.frombuffer,
                       reshape=torch.Tensor.reshape,
                       np_frombuffer=_NUMPY[None].frombuffer if _NUMPY.get(None) is not None else None)
        _torch_module = torch
    return _torch_module


_SCALARS = (bool, int, float, str)
# The evidence channel: a pipe from each worker to its grader, apart from the request socket. A watched call
# (worker.Recorder) writes a record there the moment it sees what it watches for, before the submission's code runs
# on: bytes written to a pipe cannot be taken back, where the watch's own state in the worker's memory could be
# cleared by the code it watches (red team: a forward that ran F.multi_head_attention_forward and then emptied the
# watch's `ran` set kept all 20 points of MultiHeadAttention). Each record is 3 bytes: what was seen, then the
# step of the request (big-endian, 0 for a request that is not a sequence). Nothing but a watched call that saw
# something writes there, so any byte in it, or the pipe closed, counts against the submission (proxy.py).
EVIDENCE = {b"T": "library:transformer", b"A": "library:attention"}  # worker.LIBRARY, worker.LIBRARY_ATTENTION
EVIDENCE_OFF = b"!"  # the watch was taken off (the profile function switched by someone else): every watch's
EVIDENCE_ENTER = b"("  # a watched step's watch began (once a step: twice, it was ended early and begun again)
EVIDENCE_EXIT = b")"  # ... and ended (once a step, after it began: another, a watch's end run by the submission)
EVIDENCE_RECORD = 3
EVIDENCE_MAX = 1 << 16  # what the grader reads after a request at most (a pipe's default capacity)


def evidence_code(tag: str) -> bytes:
    """The record's first byte for the watch `tag` (EVIDENCE_OFF for one this protocol does not name)."""
    for code, name in EVIDENCE.items():
        if name == tag:
            return code
    return EVIDENCE_OFF


def read_evidence(data: bytes | None, steps: dict[int, set[str]]) -> dict[int, set[str]]:
    """Which watches of which steps the records `data` say ran (`steps`: each watched step's watches). A record of a
    watch the step did not ask for is left aside (a watch writes what any watch looks for: the exam's block may run
    nn.MultiheadAttention). None (the pipe closed), a byte that is not a record, a step that watched nothing, a pipe
    half full (a watched call writes a few records), a watch begun twice in one step, or ended twice, or ended
    before it began: every watch of every step (only the submission's own code can make those, and only against
    itself)."""
    everything = {i: set(tags) for i, tags in steps.items()}
    if data is None or len(data) % EVIDENCE_RECORD or len(data) > EVIDENCE_MAX // 2:
        return everything
    got: dict[int, set[str]] = {}
    begun: set[int] = set()
    ended: set[int] = set()
    for k in range(0, len(data), EVIDENCE_RECORD):
        code, step = data[k:k + 1], int.from_bytes(data[k + 1:k + EVIDENCE_RECORD], "big")
        if step not in steps:
            return everything
        if code == EVIDENCE_ENTER:
            if step in begun:
                return everything
            begun.add(step)
        elif code == EVIDENCE_EXIT:
            # (a watch's end called by the submission's code, on the watch itself or on a Recorder it made, switches
            # the profile function off or on as the watch's own switch: the library run in between earned 100/100,
            # red team, session 21, round 3; it writes one more end, or an end before a beginning)
            if step not in begun or step in ended:
                return everything
            ended.add(step)
        elif code == EVIDENCE_OFF:
            got.setdefault(step, set()).update(steps[step])
        elif code in EVIDENCE:
            if EVIDENCE[code] in steps[step]:
                got.setdefault(step, set()).add(EVIDENCE[code])
        else:
            return everything
    return got


_HEAD = struct.Struct("!II")  # header length, blob area length
MAX_MESSAGE = 256 * 1024 * 1024
MAX_DIMS = 32  # torch allows 64; no check sends more than a handful
MAX_DIM = 1 << 31  # a bound on each dimension, so that shapes multiply without overflow before any allocation
# A call that raised may send back some of its callee's local tensors (worker.op_call's `partial`): at most this many
# names and bytes in all (the notes' demo forward of mha_intermediates holds about 40 MB of intermediates).
MAX_PARTIAL_NAMES = 32
MAX_PARTIAL_BYTES = 64 * 1024 * 1024
# Blobs (tensors) in one message; a correct submission's largest reply has a few hundred. Each costs a Python
# int and a memoryview before the message can be checked: a worker that sent 8 million empty ones in its 16 MB
# head, after a reply that was otherwise right, held its grader 20 s and 1.7 GB per reply, 255 s a submission
# until its wall-clock allowance ran out (red team s9).
MAX_BLOBS = 1 << 16


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class ChannelClosed(ProtocolError):
    """The other side closed the connection (it exited or was killed)."""


class ChannelTimeout(ProtocolError):
    """No complete message arrived before the deadline."""


class MessageTooLarge(ProtocolError):
    """A message to send is over MAX_MESSAGE (the receiver would refuse it): nothing was sent."""

    def __init__(self, size: int):
        super().__init__(f"message of {size} bytes is over the {MAX_MESSAGE}-byte limit")
        self.size = size


class Opaque:
    """A value the worker could not or would not send as data (e.g. a tensor subclass), by description only."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"


def _encode(obj: Any, blobs: list[bytes]) -> Any:
    kind = type(obj)
    if obj is None or kind in _SCALARS:
        return obj
    if kind is list:  # (a scalar item as it is, without a call: most items of a request or reply are)
        return [x if x is None or type(x) in _SCALARS else _encode(x, blobs) for x in obj]
    if kind is dict:
        for k in obj:  # a plain loop: all() over a generator costs more than the encoding it decides on
            if type(k) is not str or k[:1] == "$":
                return {"$dict": [[str(k), _encode(v, blobs)] for k, v in obj.items()]}
        # the usual case: a JSON object as it is
        return {k: v if v is None or type(v) in _SCALARS else _encode(v, blobs) for k, v in obj.items()}
    if kind is tuple:
        return {"$tuple": [_encode(x, blobs) for x in obj]}
    if issubclass(kind, dict):
        return _encode_dict_subclass(obj, kind, blobs)
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        if kind is not torch.Tensor and not isinstance(obj, torch.nn.Parameter):
            return {"$opaque": f"{kind.__name__} (a torch.Tensor subclass)"}
        t = obj.detach()
        name = _NAMES.get(t.dtype)
        if name is None:
            return {"$opaque": f"tensor of dtype {t.dtype}"}
        device = t.device.type
        if device == "meta":
            return {"$opaque": "tensor on the meta device"}
        # Only a dense tensor has its values one after another: a sparse or nested one (a registered
        # `torch.eye(n).to_sparse()` buffer) raised in .contiguous() or .numpy(), out of the worker's reply, and
        # the worker ended ("exited with code 0 (os._exit or a crash)"): every class lost its later checks for the
        # grader's own failure to send it (red team, round 21).
        if t.layout is not torch.strided or t.is_nested:
            return {"$opaque": f"tensor of layout {str(t.layout).replace('torch.', '')}"
                               + (" (nested)" if t.is_nested else "")}
        if device != "cpu":
            t = t.to("cpu")
        if t.is_neg() or t.is_conj():  # (a lazy negation, as `.imag` of a conjugate gives: .numpy() refuses it)
            t = t.resolve_neg().resolve_conj()
        if not t.is_contiguous():
            t = t.contiguous()
        if not t.numel():
            data = b""
        elif t.dtype is torch.bfloat16:  # numpy has no bfloat16: the same bits as int16
            data = t.view(torch.int16).numpy().tobytes()
        else:
            data = t.numpy().tobytes()
        blobs.append(data)
        return {"$t": len(blobs) - 1, "dtype": name, "shape": list(t.shape), "device": device}
    if kind is torch.Size:
        return {"$tuple": [int(d) for d in obj]}
    return {"$opaque": f"object of type {_type_name(kind)}"}


_TYPE_NAME = type.__dict__["__name__"].__get__  # type's own getter: a metaclass's __name__ property runs no code


def _type_name(kind: type) -> str:
    try:
        return _TYPE_NAME(kind)
    except Exception:
        return "(unnamed)"


def _encode_dict_subclass(obj: dict, kind: type, blobs: list[bytes]) -> Any:
    """A dict subclass (OrderedDict, defaultdict, a class of the submission's) with string keys travels as the
    plain dict it holds; with any other key, by description only. Its contents are read with dict's own C-level
    items(), never with its methods (__iter__, keys, items, __getitem__, __len__ may be overridden to raise,
    loop or lie), and taken as a snapshot first, so that the encoding of a value cannot change the dict under
    the loop. Anything odd (a mutation, a value that fails to encode) gives the description, never an exception
    out of the encoder: the worker's reply goes out whatever the submission's class does."""
    opaque = {"$opaque": f"object of type {_type_name(kind)}"}
    try:
        items = list(dict.items(obj))
        for k, _ in items:
            if type(k) is not str:
                return opaque
        start = len(blobs)
        try:
            if any(k[:1] == "$" for k, _ in items):
                return {"$dict": [[k, _encode(v, blobs)] for k, v in items]}
            return {k: _encode(v, blobs) for k, v in items}
        except Exception:
            del blobs[start:]  # the blobs of the values encoded before the failure belong to nothing
            raise
    except Exception:
        return opaque


def _tensor(obj: dict, blobs: list[memoryview | None]) -> Any:
    torch = _torch()
    dtype = DTYPES.get(obj.get("dtype"))
    shape = obj.get("shape")
    idx = obj["$t"]
    if dtype is None or type(shape) is not list or len(shape) > MAX_DIMS \
            or not all(type(s) is int and 0 <= s <= MAX_DIM for s in shape):
        raise ProtocolError("malformed tensor header")
    if type(idx) is not int or not 0 <= idx < len(blobs):
        raise ProtocolError("tensor refers to a missing blob")
    raw = blobs[idx]
    if raw is None:
        # pack() writes each tensor's bytes once: a blob named again would be one more copy of it in the grader (a
        # 3 KB head naming one 200 MB blob 60 times asked it for 12 GB, and the kernel killed the grader)
        raise ProtocolError("tensor refers to a blob already used")
    blobs[idx] = None
    numel = 1
    for s in shape:
        numel *= s
    if len(raw) != numel * _SIZES[dtype]:
        raise ProtocolError("tensor size does not match its shape")
    make = _MAKERS
    if numel == 0:
        return make["empty"](shape, dtype=dtype)
    # One copy: the tensor owns writable memory (its own bytearray) and shares nothing with the receive buffer.
    as_numpy = _NUMPY.get(dtype)
    if as_numpy is not None and make["np_frombuffer"] is not None:
        return make["from_numpy"](make["np_frombuffer"](bytearray(raw), dtype=as_numpy).reshape(shape))
    return make["reshape"](make["frombuffer"](bytearray(raw), dtype=dtype), shape)


_local = threading.local()  # the blobs of the message being decoded, for _tagged


def _tagged(obj: dict) -> Any:
    """The JSON decoder's object hook: every JSON object, innermost first, becomes what it stands for."""
    for k in obj:
        if k[:1] == "$":
            break
    else:
        return obj  # the usual case: a plain object
    if "$t" in obj:
        return _tensor(obj, _local.blobs)
    if "$tuple" in obj:
        return tuple(obj["$tuple"])
    if "$dict" in obj:
        return {k if type(k) is str else str(k): v for k, v in obj["$dict"]}
    if "$opaque" in obj:
        return Opaque(clean(obj["$opaque"])[:200])
    raise ProtocolError("unknown tagged value")


_DECODER = json.JSONDecoder(object_hook=_tagged)
_SIZES_LINE = re.compile(rb"\[((?:0|[1-9][0-9]{0,11})(?:,(?:0|[1-9][0-9]{0,11}))*)?\]")  # what pack writes


def _json(text: str) -> Any:
    value, end = _DECODER.raw_decode(text)
    if end != len(text):
        raise ProtocolError("malformed message: data after the value")
    return value
_ENCODER = json.JSONEncoder(check_circular=False, separators=(",", ":"))  # _encode builds a fresh tree: no cycles
# In JSON text that is ASCII, any escape other than these (\u, \b, \f, \r) or a DEL can stand for something
# clean() removes or replaces: a control character, an escape sequence, a lone surrogate.
_NOT_PLAIN = re.compile(r'\x7f|\\[^nt"\\/]')


def _clean(obj: Any) -> Any:
    """clean() applied to every string (dict keys too) of a decoded message."""
    kind = type(obj)
    if kind is str:
        return clean(obj)  # the boundary: no escape codes or lone surrogates get past the grader's door
    if kind is list:
        return [_clean(x) for x in obj]
    if kind is tuple:
        return tuple(_clean(x) for x in obj)
    if kind is dict:
        return {clean(k): _clean(v) for k, v in obj.items()}
    return obj


def pack(obj: Any) -> bytes:
    """A frame: the two lengths, then the head (the blob sizes as a JSON array, a newline, the JSON body), then
    the blobs (tensor bytes) one after another."""
    blobs: list[bytes] = []
    body = _ENCODER.encode(_encode(obj, blobs))
    head = f"[{','.join([str(len(b)) for b in blobs])}]\n{body}".encode()  # (what _SIZES_LINE reads back)
    area = b"".join(blobs)
    return _HEAD.pack(len(head), len(area)) + head + area


def unpack(head: bytes | memoryview, area: bytes | memoryview) -> Any:
    try:
        raw = bytes(head) if type(head) is memoryview else head
        cut = raw.find(b"\n")
        if cut < 0:
            raise ProtocolError("malformed message: no blob sizes")
        if raw.count(b",", 0, cut) >= MAX_BLOBS:
            raise ProtocolError(f"malformed message: more than {MAX_BLOBS} blobs")
        sizes = _SIZES_LINE.fullmatch(raw, 0, cut)
        if sizes is None:
            raise ProtocolError("malformed message: no blob sizes")
        sizes = [int(s) for s in sizes[1].split(b",")] if sizes[1] else []
        if sum(sizes) != len(area):
            raise ProtocolError("blob sizes do not add up")
        view = memoryview(area)
        blobs, at = [], 0
        for s in sizes:
            blobs.append(view[at:at + s])
            at += s
        _local.blobs = blobs
        try:
            body = raw[cut + 1:]
            if body.isascii():
                text = body.decode("ascii")
                if _NOT_PLAIN.search(text) is None:
                    # Every string in it is printable ASCII, newlines and tabs: clean() would change nothing.
                    return _json(text)
            return _clean(_json(body.decode("utf-8", "surrogatepass")))
        finally:
            _local.blobs = None
    except ProtocolError:
        raise
    except Exception as e:  # torch's RuntimeError, MemoryError, ...: whatever the data does, it is malformed
        raise ProtocolError(f"malformed message: {type(e).__name__}") from None


# Where the platform has per-call non-blocking flags (Linux, macOS), a socket stays in blocking mode and each wait
# for a deadline is one poll: settimeout() before every read costs an ioctl each time, and a socket in timeout
# mode polls again inside every recv and send. Elsewhere (Windows: plainworker.py) the portable path below.
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)
LATE_REST = 1.0  # seconds for the rest of a message whose start arrived by its deadline (recv)
_POLL = hasattr(select, "poll") and bool(_DONTWAIT)


def _wait(sock: socket.socket, event: int, deadline: float | None, look: bool = False) -> None:
    """Block until `sock` is ready for `event` or raise ChannelTimeout at the deadline (None: no deadline, for a
    descriptor someone made non-blocking behind the socket object's back). look: past the deadline, still look once
    without waiting (for the start of a message: one that arrived is read, see recv)."""
    ms = None
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0 and not look:
            raise ChannelTimeout("timed out")
        ms = 0 if left <= 0 else max(1, int(left * 1000 + 0.999))  # milliseconds, rounded up
    p = select.poll()
    try:
        p.register(sock, event)
    except ValueError:  # closed (fileno -1)
        raise ChannelClosed("socket closed") from None
    if not p.poll(ms):
        raise ChannelTimeout("timed out")


def wait_steps(sock: socket.socket, started: float, timeout: float, steps: int,
               progress: Callable[[], str]) -> float:
    """For a request of `steps` steps (the worker's "seq"), sent at `started`: wait until its reply can be read,
    giving every step its own `timeout` as if each were a request of its own. The worker writes "STEP START" (the
    step's index and time.monotonic() as it began) to a scratch file before each step after the first; `progress`
    reads it, only once a deadline has passed. Returns the deadline left for reading the reply; raises
    ChannelTimeout when the step running has had its `timeout`. What the worker writes can stretch a sequence to
    `steps` x `timeout` at most, no further."""
    cap = started + timeout * steps
    deadline, last = started + timeout, 0
    while True:
        try:
            if _POLL:
                _wait(sock, select.POLLIN, deadline)
            else:  # Windows
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([sock], [], [], left)[0]:
                    raise ChannelTimeout("timed out")
            return deadline
        except ChannelTimeout:
            step, began = step_reached(progress, started, steps)
            now = time.monotonic()
            if not (last < step and began <= now and began + timeout > now):
                raise
            last, deadline = step, min(began + timeout, cap)


def step_reached(progress: Callable[[], str], started: float, steps: int) -> tuple[int, float]:
    """The step of a sequence of `steps` requests sent at `started` that the worker last began, and when, from its
    progress file's text (`progress()`, worker.op_seq); (0, started) for a single request (the file is not read)
    and when the file says nothing about this sequence."""
    if steps <= 1:
        return 0, started
    try:
        step_text, began_text = progress().split()[:2]
        step, began = int(step_text), float(began_text)
    except (ValueError, TypeError):
        return 0, started
    return (step, began) if 0 < step < steps and began >= started else (0, started)


def _blocking(sock: socket.socket) -> None:
    if sock.gettimeout() is not None:  # an attribute read; only a change of mode is a system call
        sock.settimeout(None)


def send(sock: socket.socket, obj: Any, deadline: float | None = None) -> None:
    """deadline: a peer that stops reading cannot hold the sender past it (ChannelTimeout). A message the receiver
    would refuse as too long is not sent (MessageTooLarge): it would read as the receiver's crash."""
    data = pack(obj)
    if len(data) > MAX_MESSAGE:
        raise MessageTooLarge(len(data))
    if not _POLL or deadline is None:
        if _POLL:
            _blocking(sock)
        sock.sendall(data)
        return
    _blocking(sock)
    view = memoryview(data)
    sent = 0
    while sent < len(data):
        try:
            sent += sock.send(view[sent:], _DONTWAIT)
        except BlockingIOError:
            _wait(sock, select.POLLOUT, deadline)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None, poll_first: bool = False) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    flags = 0
    if _POLL:
        _blocking(sock)
        if deadline is not None:
            flags = _DONTWAIT  # never blocks: the deadline is kept by _wait
            if poll_first:  # a reply is rarely there the instant after its request
                _wait(sock, select.POLLIN, deadline, look=True)
    elif deadline is None:
        sock.settimeout(None)  # once per read of a message (each change of mode is a system call)
    while got < n:
        if not _POLL and deadline is not None:  # the portable path: the socket's own timeout keeps the deadline
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("timed out")
            sock.settimeout(left)
        try:
            k = sock.recv_into(view[got:], min(n - got, 1 << 20), flags)
        except BlockingIOError:  # (before OSError, of which it and socket.timeout are subclasses)
            _wait(sock, select.POLLIN, deadline)
            continue
        except socket.timeout:
            raise ChannelTimeout("timed out") from None
        except OSError as e:
            raise ChannelClosed(str(e)) from None
        if not k:
            raise ChannelClosed("connection closed")
        got += k
    return buf


def recv(sock: socket.socket, deadline: float | None = None, max_bytes: int = MAX_MESSAGE,
         max_head: int | None = None) -> Any:
    """max_head caps the JSON part alone: a few MB of `[{},{},...]` decode to GBs of Python objects."""
    head_len, area_len = _HEAD.unpack(_recv_exact(sock, _HEAD.size, deadline, poll_first=True))
    if head_len + area_len > max_bytes or (max_head is not None and head_len > max_head):
        raise ProtocolError(f"message of {head_len + area_len} bytes is over the {max_bytes}-byte limit")
    if deadline is not None and time.monotonic() >= deadline:
        # A message that began to arrive in time is read, though the deadline passed before the read (a reply that
        # came in the millisecond the poll before rounded up to, just after a sequence step's deadline, read as a
        # hang: "did not finish within 20 s", of a class whose calls took 5 s each, four of them in a sequence). Its
        # rest gets LATE_REST more, not more: a peer that sends a byte at a time cannot hold the reader.
        deadline = time.monotonic() + LATE_REST
    body = memoryview(_recv_exact(sock, head_len + area_len, deadline))  # one read for both parts
    return unpack(body[:head_len], body[head_len:])
