"""The grader-worker channel carries data only: tensors come back as plain torch.Tensor, malformed input is refused."""
import json
import socket
import time

import pytest
import torch

from autograder import protocol
from autograder.safetext import clean


def roundtrip(obj):
    frame = protocol.pack(obj)
    head_len, area_len = protocol._HEAD.unpack(frame[:8])
    return protocol.unpack(frame[8:8 + head_len], frame[8 + head_len:])


def test_tensors_and_containers_round_trip_exactly():
    obj = {"a": torch.randn(2, 3), "b": (1, 2.5, None, "x"), "c": [torch.ones(0), torch.tensor(True)],
           "d": torch.arange(6, dtype=torch.int64).reshape(2, 3).t(), "inf": torch.tensor([-torch.inf, 1.0])}
    back = roundtrip(obj)
    assert type(back["a"]) is torch.Tensor and torch.equal(back["a"], obj["a"])
    assert back["b"] == (1, 2.5, None, "x")
    assert back["c"][0].shape == (0,) and back["c"][1].item() is True
    assert torch.equal(back["d"], obj["d"])
    assert back["inf"][0].item() == -float("inf")


def test_dict_keys_that_look_like_tags_or_are_not_strings_still_round_trip():
    """Plain string-keyed dicts travel as JSON objects; any other dict (a key starting with "$", which the
    decoder reads as a tag, or a non-string key) goes through the tagged form, keys as strings."""
    obj = {"$t": 0, "dtype": "float32", "shape": [1]}
    assert roundtrip(obj) == obj and roundtrip({"$dict": [["a", 1]]}) == {"$dict": [["a", 1]]}
    assert roundtrip({1: "one", "two": 2}) == {"1": "one", "two": 2}
    assert roundtrip({"plain": {"nested": [1, {"x": None}]}}) == {"plain": {"nested": [1, {"x": None}]}}
    frame = protocol.pack({"a": 1})
    assert b'"$dict"' not in frame and frame.endswith(b'[]\n{"a":1}')


def test_a_received_tensor_owns_its_memory():
    frame = bytearray(protocol.pack(torch.arange(4.0)))
    head_len, _ = protocol._HEAD.unpack(frame[:8])
    view = memoryview(frame)
    t = protocol.unpack(view[8:8 + head_len], view[8 + head_len:])
    frame[8 + head_len:] = b"\xff" * (len(frame) - 8 - head_len)  # the receive buffer is reused
    assert torch.equal(t, torch.arange(4.0))
    t += 1  # and writable


def test_tensor_subclasses_and_objects_arrive_as_opaque_descriptions():
    class Sneaky(torch.Tensor):
        def __eq__(self, other):
            return True
    back = roundtrip({"t": torch.ones(2).as_subclass(Sneaky), "o": object()})
    assert isinstance(back["t"], protocol.Opaque) and "subclass" in back["t"].description
    assert isinstance(back["o"], protocol.Opaque)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_tensors_without_dense_values_arrive_as_opaque_descriptions():
    """A sparse or nested tensor (a student's registered buffer) raised inside pack(), in the worker's reply, and the
    worker ended as if the submission had crashed it (red team, round 21)."""
    odd = {"sparse": torch.eye(3).to_sparse(), "csr": torch.eye(3).to_sparse_csr(),
           "nested": torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
           "jagged": torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)}
    back = roundtrip({**odd, "dense": torch.ones(2)})
    assert all(isinstance(back[k], protocol.Opaque) for k in odd), back
    assert "sparse" in back["sparse"].description and "nested" in back["nested"].description, back
    assert torch.equal(back["dense"], torch.ones(2))
    # a lazily negated view (`.imag` of a conjugate) is dense: it travels as its values
    z = torch.tensor([1 + 2j, 3 - 4j])
    assert z.conj().imag.is_neg() and torch.equal(roundtrip(z.conj().imag), torch.tensor([-2.0, 4.0]))


MALFORMED = [
    (b'[4]\n{"$t": 0, "dtype": "float32", "shape": [3]}', b"\0" * 4, "does not match"),  # size mismatch
    (b'[8]\n{"$t": 0, "dtype": "object", "shape": [1]}', b"\0" * 8, "malformed tensor"),  # dtype not allowed
    (b'[4]\n{"$t": 5, "dtype": "float32", "shape": [1]}', b"\0" * 4, "missing blob"),  # no such blob
    (b'[4]\n[{"$t": 0, "dtype": "float32", "shape": [1]}, {"$t": 0, "dtype": "uint8", "shape": [4]}]', b"\0" * 4,
     "already used"),  # one blob named twice: a copy each time (a 3 KB head naming 200 MB 60 times: 12 GB)
    (b'[]\n{"$reduce": "os.system"}', b"", "unknown tag"),  # no pickle-like tags
    (b'[]\n{"a": 1, "$reduce": "os.system"}', b"", "unknown tag"),  # nor beside plain keys
    (b'[]\n[{"x": {"$reduce": 1}}]', b"", "unknown tag"),  # nor nested
    (b'[4,4]\n{"$t": 0, "dtype": "float32", "shape": [1]}', b"\0" * 4, "do not add up"),  # sizes vs area
    (b'{"$t": 0, "dtype": "float32", "shape": [1]}', b"\0" * 4, "no blob sizes"),  # no sizes line
    (b"[]\nnot json", b"", "malformed message"),
    (b'[]\n{"a": 1} {"b": 2}', b"", "malformed message"),  # trailing data
]


@pytest.mark.parametrize("head, area, why", MALFORMED)
@pytest.mark.parametrize("text", ["plain", "non-ascii"])
def test_malformed_messages_are_refused(head, area, why, text):
    """Refused for the right reason, whether or not the text needs cleaning (two decoding paths)."""
    if text == "non-ascii":
        head = head.replace(b"\n[", b'\n[{"k": "\xc3\xa9"},', 1).replace(b"\n{", b'\n{"k": "\xc3\xa9", ', 1)
    with pytest.raises(protocol.ProtocolError, match=why.replace("tag", "tagged")):
        protocol.unpack(head, area)


def test_a_head_naming_millions_of_empty_blobs_is_refused_at_once():
    """A reply that was otherwise right, its blob sizes line padded with 8 million zeros (16 MB), decoded into
    8 million memoryviews: 20 s and 1.7 GB of its grader per reply (red team s9). Refused before any is made."""
    head = b"[" + b",".join([b"0"] * 2_000_000) + b']\n{"ok": true, "value": null}'
    started = time.process_time()
    with pytest.raises(protocol.ProtocolError, match="blobs"):
        protocol.unpack(head, b"")
    assert time.process_time() - started < 1.0
    many = {"t": [torch.zeros(1)] * 1000}  # a thousand tensors still travel
    assert len(roundtrip(many)["t"]) == 1000


def test_oversized_message_is_refused_before_reading_it():
    a, b = socket.socketpair()
    a.sendall(protocol._HEAD.pack(10, 10 ** 9))
    with pytest.raises(protocol.ProtocolError, match="limit"):
        protocol.recv(b, max_bytes=1024)
    a.close(), b.close()


def test_timeout_and_close_are_distinguished():
    a, b = socket.socketpair()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(b, deadline=0)
    a.close()
    with pytest.raises(protocol.ChannelClosed):
        protocol.recv(b, deadline=None)
    b.close()  # our own end closed: still a closed channel, whatever the deadline
    for deadline in (None, time.monotonic() + 1):
        with pytest.raises(protocol.ChannelClosed):
            protocol.recv(b, deadline=deadline)


def test_a_message_that_arrived_is_read_whatever_the_deadline_says_by_the_time_it_is_read():
    """A reply already in the socket is read even when the deadline passed meanwhile (between the poll that saw it
    come and the read): it came in time. Only a channel with nothing to read times out."""
    import threading
    a, b = socket.socketpair()
    protocol.send(a, {"ok": True, "values": [1, 2]})
    assert protocol.recv(b, deadline=time.monotonic() - 1.0) == {"ok": True, "values": [1, 2]}
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(b, deadline=time.monotonic() - 1.0)
    # the rest of a message that began in time gets LATE_REST more: it is read if it comes then, and a peer that
    # never sends it cannot hold the reader longer
    frame = protocol.pack({"s": "late", "x": torch.arange(10.0)})
    a.sendall(frame[:20])
    threading.Timer(0.2, lambda: a.sendall(frame[20:])).start()
    assert protocol.recv(b, deadline=time.monotonic() - 1.0)["s"] == "late"
    a.sendall(frame[:20])
    started = time.monotonic()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(b, deadline=time.monotonic() - 1.0)
    assert time.monotonic() - started < protocol.LATE_REST + 1.0
    a.close(), b.close()


def test_deadlines_hold_for_slow_peers_and_split_messages():
    """A peer that stops reading cannot hold the sender past its deadline; a message that arrives in pieces, and a
    reply that comes late but in time, are read whole (the socket stays blocking between calls)."""
    import threading
    import time
    a, b = socket.socketpair()
    big = {"t": torch.zeros(4 * 1024 * 1024)}  # 16 MB: more than any socket buffer holds
    started = time.monotonic()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.send(a, big, deadline=time.monotonic() + 0.3)
    assert time.monotonic() - started < 5
    a.close(), b.close()
    a, b = socket.socketpair()
    frame = protocol.pack({"x": torch.arange(100000.0), "s": "end"})

    def dribble():
        for i in range(0, len(frame), 70001):
            time.sleep(0.05)
            a.sendall(frame[i:i + 70001])
    threading.Thread(target=dribble).start()
    got = protocol.recv(b, deadline=time.monotonic() + 30)
    assert got["s"] == "end" and torch.equal(got["x"], torch.arange(100000.0))
    assert b.gettimeout() is None and a.gettimeout() is None
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(b, deadline=time.monotonic() + 0.1)
    a.close(), b.close()


@pytest.mark.parametrize("shape", [[2 ** 62, 4, 0], [2 ** 31] * 33, [-1], [1.5]])
def test_impossible_shapes_are_refused_before_any_allocation(shape):
    """(2**62, 4, 0) holds no element, yet torch cannot build it: a malformed reply, never a grader crash."""
    head = b"[0]\n" + json.dumps({"$t": 0, "dtype": "float32", "shape": shape}).encode()
    with pytest.raises(protocol.ProtocolError):
        protocol.unpack(head, b"")


def test_text_from_the_worker_arrives_clean():
    """Escape codes and control characters are stripped and lone surrogates replaced, at the boundary; ordinary
    text (Korean, newlines, tabs) is untouched."""
    back = roundtrip({"\x1b[31mkey": ["a\udcffb", "\x1b]0;title\x07x\x1b[2Jy", "줄\n\t끝", "\x9b31mz\x00"]})
    assert back == {"key": ["a\ufffdb", "xy", "줄\n\t끝", "z"]}
    json.dumps(back, ensure_ascii=False).encode("utf-8")  # encodes: no surrogate left


def test_plain_text_and_text_that_needs_cleaning_decode_alike():
    """Text that is printable ASCII (with newlines and tabs) is decoded without a cleaning pass; anything else is
    cleaned. Both paths give the same values, tuples, tensors and tags; escapes that could hide a control code
    (\\u, \\b, \\f, \\r) or a raw DEL always take the cleaning path."""
    base = {"ok": True, "t": (1, [2, (3,)], {"x": torch.arange(3.0)}), "d": {1: "a", "$k": ("b",)},
            "s": "line\n\ttab \"quoted\" back\\slash/", "n": None, "f": -0.5}
    for extra in ("", "é", "\x1b[31mred", "\x7f", "\r", "\b\f", "\udcff", "\\u001b"):
        obj = {**base, "e": extra}
        back = roundtrip(obj)
        assert back["t"][:2] == (1, [2, (3,)]) and torch.equal(back["t"][2]["x"], torch.arange(3.0))
        assert back["d"] == {"1": "a", "$k": ("b",)} and back["s"] == base["s"]
        assert (back["ok"], back["n"], back["f"]) == (True, None, -0.5)
        assert back["e"] == clean(extra)
    for escape in (b"\\u001b", b"\\u0007", b"\\b", b"\\f", b"\\r", b"\x7f", b"\\ud800"):
        back = protocol.unpack(b'[]\n{"k' + escape + b'": ["a' + escape + b'z"]}', b"")
        want = clean(json.loads(b'"a' + escape + b'z"'))
        assert back == {clean(json.loads(b'"k' + escape + b'"')): [want]} and want.isprintable()


def test_tensors_read_from_a_socket_own_aligned_memory_whatever_precedes_them():
    """The receive path decodes straight from its buffer (one copy per tensor): a tensor whose bytes follow an
    odd-sized one (3 bools) must still arrive equal, contiguous, in memory of its own and aligned."""
    a, b = socket.socketpair()
    obj = {"m": torch.tensor([True, False, True]), "x": torch.randn(3, 5, dtype=torch.float64),
           "y": torch.randn(7), "h": torch.randn(4).bfloat16()}
    protocol.send(a, obj)
    back = protocol.recv(b)
    assert all(torch.equal(back[k], obj[k]) and back[k].is_contiguous() for k in obj)
    assert back["x"].data_ptr() % 8 == 0 and back["y"].data_ptr() % 4 == 0
    back["x"].add_(1)  # writable, and shares nothing: a second message does not change it
    protocol.send(a, {"x": torch.zeros(3, 5, dtype=torch.float64)})
    protocol.recv(b)
    assert torch.equal(back["x"], obj["x"] + 1)
    a.close()
    b.close()


# ---------------------------------------------------------------------------------------------- a call that raised

RAISES_PART_WAY = '''
import torch

def helper(t):
    inner = t * 2
    return inner.view(7)

class M(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        n = 3
        big = torch.zeros(1000)
        odd = torch.zeros(2, dtype=torch.complex64)
        z = helper(y)
        return z
'''


def raising_worker(monkeypatch, tmp_path):
    from autograder import worker
    monkeypatch.chdir(tmp_path)  # the worker writes load.progress in its folder
    a, b = socket.socketpair()
    w = worker.Worker(a)
    assert w.op_load([{"code": RAISES_PART_WAY, "label": "sub.py"}])["errors"] == []
    return w, w.op_new("M", [], {})["handle"], (a, b)


def test_a_raising_call_sends_back_only_its_callees_asked_for_plain_tensors(monkeypatch, tmp_path):
    """`partial`: the callee's own frame (forward, not the helper that raised), its line, and of the names asked
    for only those holding plain tensors of a protocol dtype, within the byte bound; nothing when not asked."""
    w, h, socks = raising_worker(monkeypatch, tmp_path)
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError):
        w.op_call([x], {}, handle=h)
    assert w.frame is None
    monkeypatch.setattr(protocol, "MAX_PARTIAL_BYTES", 2000)  # room for y (24 bytes), not for big (4000)
    with pytest.raises(RuntimeError):
        w.op_call([x], {}, handle=h, partial=["y", "n", "big", "odd", "z", "inner", "x"])
    f = w.frame
    assert (f["function"], f["code"], f["line"]) == ("forward", "z = helper(y)", 14)
    assert sorted(f["locals"]) == ["x", "y"] and torch.equal(f["locals"]["y"], x + 1)
    frame = roundtrip({"type": "RuntimeError", "message": "", "frame": f})["frame"]
    assert type(frame["locals"]["y"]) is torch.Tensor
    for s in socks:
        s.close()


def test_a_failed_calls_frame_is_refused_unless_asked_for_and_made_of_bounded_tensors(monkeypatch):
    from autograder.replies import error_well_formed
    ok = {"type": "RuntimeError", "message": "m",
          "frame": {"function": "forward", "line": 3, "code": "z = y", "locals": {"y": torch.ones(2)}}}
    asked = {"partial": ["y", "z"]}
    assert error_well_formed("call", asked, ok)
    assert error_well_formed("call", {}, {"type": "RuntimeError", "message": "m"})  # no frame: as before
    assert not error_well_formed("call", {}, ok)  # nobody asked
    assert not error_well_formed("new", asked, ok)
    assert not error_well_formed("call", {"partial": ["z"]}, ok)  # a name not asked for
    for bad in ("a string", 3, None, [1.0]):
        assert not error_well_formed("call", asked, {**ok, "frame": {**ok["frame"], "locals": {"y": bad}}})
    assert not error_well_formed("call", asked, {**ok, "frame": {"locals": [torch.ones(1)]}})
    assert not error_well_formed("call", asked, {**ok, "frame": {**ok["frame"], "line": "3"}})
    monkeypatch.setattr(protocol, "MAX_PARTIAL_BYTES", 4)
    assert not error_well_formed("call", asked, ok)  # 8 bytes over a bound of 4


# Bidi override and isolate, zero-width space and joiner, BOM, soft hyphen, word joiner, a tag character.
INVISIBLE = "\u202e\u2066\u2069\u200b\u200d\ufeff\u00ad\u2060\U000e0041"


def test_invisible_format_characters_and_separators_are_removed_and_korean_is_kept():
    """clean() removes Unicode format characters (Cf: bidi controls, zero-width characters, BOM) and turns line
    and paragraph separators into a newline (a space on one line); Korean, accents, emoji and wide spaces stay."""
    text = f"{INVISIBLE[0]}DEIFIREV 001/001{INVISIBLE[1:]}\u2028x\u2029y"
    assert clean(text) == "DEIFIREV 001/001\nx\ny"
    assert clean(text, one_line=True) == "DEIFIREV 001/001 x y"
    for ordinary in ("`MultiHeadAttention`에 `forward`가 정의되어 있지 않습니다.", "한국어\n\t끝", "café ñ",
                     "조합형 한글 \u1112\u1161\u11ab", "넓은\u3000공백", "😀 ✓ α≈β"):
        assert clean(ordinary) == ordinary and clean(ordinary, True) == ordinary.replace("\n", "").replace("\t", "")
    assert clean("👩\u200d💻") == "👩💻"  # a ZWJ sequence falls apart into its emoji: acceptable
    for s in (text, "\x1b\u200b[31mred", "a\u2028\u200b\u2029b", "\u202e\x1b]0;t\x07z"):
        assert clean(clean(s)) == clean(s) and clean(clean(s, True), True) == clean(s, True)  # idempotent


def test_the_invisible_list_covers_every_format_character_of_this_python():
    """The hard-coded list matches every Cf, Zl and Zp code point of the running Python's Unicode database, and
    nothing that is assigned to another category (it may name a few that a later Unicode adds)."""
    import sys
    import unicodedata
    from autograder.safetext import _INVISIBLE, _SEPARATORS
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        hit = bool(_INVISIBLE.match(ch) or _SEPARATORS.match(ch))
        assert hit == (cat in ("Cf", "Zl", "Zp")) or (hit and cat == "Cn"), (hex(cp), cat)


def test_clean_data_cleans_every_string_as_clean_does_and_keeps_clean_structures_as_they_are():
    """clean_data decides with one JSON pass that a structure needs no cleaning (the grader's own results, Korean
    included) and returns it as it is; it must then agree with clean() string by string: every control, escape,
    format, separator and surrogate character, in keys and values, at any depth, is still found (a fast path that
    missed one would let an escape sequence into results.json and the CSV)."""
    import random
    from autograder.safetext import clean_data

    def slow(o):
        if type(o) is str:
            return clean(o)
        if type(o) is list:
            return [slow(x) for x in o]
        if type(o) is tuple:
            return tuple(slow(x) for x in o)
        if type(o) is dict:
            return {slow(k): slow(v) for k, v in o.items()}
        return o

    special = [chr(c) for c in [*range(0x20), 0x7f, *range(0x80, 0xa0)]] + list(INVISIBLE) + \
        ["\u2028", "\u2029", "\ud800", "\udfff", "\x1b[31m", "\x1b]0;t\x07", "\\", "\\r", "\\u00", '"']
    plain = ["a", "한", "é", " ", "😀", "\n", "\t", "x"]
    rng = random.Random(7)
    for _ in range(3000):
        def text(dirty: bool) -> str:
            return "".join(rng.choice(special if dirty and rng.random() < 0.3 else plain) for _ in range(rng.randint(0, 6)))
        dirty = rng.random() < 0.5
        obj = {"name": text(False), text(dirty): [text(dirty), (text(False), 3), {"deep": [text(dirty), 1.5, None]}],
               "n": 2, 7: text(False)}
        got, want = clean_data(obj), slow(obj)
        assert got == want, (obj, got, want)
        if got is obj:  # returned as it was: then nothing in it needed cleaning
            assert slow(obj) == obj
    clean_result = {"name": "`MultiHeadAttention`에 없음\n\t끝", "tests": [{"output": "Passed.", "score": 1.0}]}
    assert clean_data(clean_result) is clean_result


def test_invisible_characters_from_the_worker_arrive_removed():
    """Both decoding paths: raw UTF-8 in the reply, and \\u escapes in ASCII JSON (which skip no cleaning)."""
    obj = {f"key{INVISIBLE}": [f"msg{INVISIBLE}\u2028end", "그대로 한국어"]}
    assert roundtrip(obj) == {"key": ["msg\nend", "그대로 한국어"]}
    body = json.dumps(obj, ensure_ascii=True).encode()
    assert body.isascii() and protocol.unpack(b"[]\n" + body, b"") == {"key": ["msg\nend", "그대로 한국어"]}


# ---------------------------------------------------------------------------------------------- dict subclasses

def test_a_dict_subclass_with_string_keys_travels_as_a_plain_dict():
    """An OrderedDict or a defaultdict (what a forward may return) arrives as the plain dict it holds, tensors and
    "$" keys included; with a key that is not a string it stays an object by description, as before."""
    from collections import OrderedDict, defaultdict
    t = torch.arange(6.0).reshape(2, 3)
    od = OrderedDict([("x", t), ("n", {"inner": OrderedDict(a=1)}), ("l", [OrderedDict(b=(2,))])])
    back = roundtrip({"out": od})["out"]
    assert type(back) is dict and list(back) == ["x", "n", "l"]
    assert type(back["x"]) is torch.Tensor and torch.equal(back["x"], t)
    assert back["n"] == {"inner": {"a": 1}} and type(back["n"]["inner"]) is dict and back["l"] == [{"b": (2,)}]
    dd = defaultdict(list, {"a": [1], "$t": 0})
    assert roundtrip(dd) == {"a": [1], "$t": 0} and "$t" in dd and "b" not in dd  # no __missing__ ran
    for odd in (OrderedDict([(1, "one")]), defaultdict(int, {("a",): 1})):
        back = roundtrip({"o": odd})["o"]
        assert isinstance(back, protocol.Opaque) and type(odd).__name__ in back.description


def test_a_hostile_dict_subclass_cannot_crash_or_hang_the_encoder():
    """The submission's dict subclass may override every method that reads it (to raise, loop or lie) and its
    metaclass may make __name__ a property (the old encoder asked it for the description): the encoder reads the contents with dict's own C-level items() and the
    name with type's own getter, so none of that code runs and the encoding finishes with the real contents; a
    dict that holds itself (no encoding can end) becomes a description, not an exception."""
    called = []

    class Meta(type):
        @property
        def __name__(cls):
            called.append("__name__")
            raise RuntimeError("trap")  # (a real one may loop for ever instead)

    class Hostile(dict, metaclass=Meta):
        def _trap(self, *a, **k):
            called.append("method")
            raise RuntimeError("trap")
        __iter__ = keys = items = values = __getitem__ = __len__ = __contains__ = get = _trap
        __eq__ = __hash__ = __repr__ = __str__ = __bool__ = _trap

    h = Hostile()
    dict.update(h, {"x": torch.ones(2), "k": "v"})
    back = roundtrip({"out": h, "other": [Hostile()]})
    assert type(back["out"]) is dict and sorted(dict.keys(back["out"])) == ["k", "x"]
    assert torch.equal(back["out"]["x"], torch.ones(2)) and back["other"] == [{}]
    bad_key = Hostile()
    dict.__setitem__(bad_key, 1, 2)
    opaque = roundtrip(bad_key)
    assert isinstance(opaque, protocol.Opaque) and "object of type" in opaque.description
    assert called == []
    loop = type("Loop", (dict,), {})()
    dict.__setitem__(loop, "self", loop)
    back = protocol.unpack(*_split(protocol.pack({"loop": loop, "t": torch.zeros(1)})))
    assert back["t"].shape == (1,)
    inner = back["loop"]
    while type(inner) is dict:  # as deep as the recursion limit let it go, then a description
        inner = inner["self"]
    assert isinstance(inner, protocol.Opaque) and "Loop" in inner.description


def _split(frame):
    head_len, _ = protocol._HEAD.unpack(frame[:8])
    return frame[8:8 + head_len], frame[8 + head_len:]


def test_a_worker_returning_a_dict_subclass_replies_with_its_contents(monkeypatch, tmp_path):
    """End to end through the worker's reply: forward returns an OrderedDict, the grader gets the dict."""
    from autograder import worker
    monkeypatch.chdir(tmp_path)
    a, b = socket.socketpair()
    w = worker.Worker(a)
    code = ("import collections, torch\n"
            "class M(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        return collections.OrderedDict(y=x + 1, z=x * 2)\n")
    assert w.op_load([{"code": code, "label": "sub.py"}])["errors"] == []
    h = w.op_new("M", [], {})["handle"]
    protocol.send(a, {"ok": True, "value": w.op_call([torch.ones(3)], {}, handle=h)})
    out = protocol.recv(b)["value"]["out"]
    assert type(out) is dict and torch.equal(out["y"], torch.full((3,), 2.0)) and torch.equal(out["z"], 2 * torch.ones(3))
    a.close(), b.close()


def test_reply_shapes_are_checked_per_request():
    """replies.well_formed: a reply of the shape a genuine worker gives passes, one with a field of another type
    (which only a worker the submission changed sends) does not: per request, and per step of a sequence."""
    from autograder.replies import well_formed
    t = torch.ones(2)
    good = {"call": {"out": t, "records": [{"fn": "softmax", "input": t, "dim": -1}], "grads": None},
            "new": {"handle": 3, "type": "Net"},
            "state": {"params": {"w": t}, "buffers": {}, "persistent": ["mask"]},
            "load_state": {"loaded": ["w"], "missing": [], "unexpected": [], "mismatched": [["b", [2], [3]]]},
            "signature": {"params": [{"name": "d_in", "kind": "POSITIONAL_OR_KEYWORD", "default": None}]},
            "describe": {"type": "Net", "attrs": {}, "modules": [["lin", "Linear"]], "layer_norms": ["norm1"],
                         "params": [["lin.weight", [2, 2], True]], "tensors": []}}
    bad = {"call": [{"out": t}, {"out": t, "records": [{"fn": 1, "input": t}]}, {"out": t, "records": [], "grads": 3}],
           "new": [{"handle": "3"}, {"handle": 3, "type": 4}],
           "state": [{"params": {1: t}, "buffers": {}, "persistent": []}, {"params": {}, "buffers": {}}],
           "load_state": [{"loaded": ["w"], "missing": [], "unexpected": [], "mismatched": [["b", [2]]]}],
           "signature": [{"params": [{"name": "d_in"}]}, {"params": [{"name": "x", "kind": "K", "default": 1}]}],
           "describe": [{"type": "Net", "attrs": {}, "layer_norms": "norm1"},
                        {"type": "Net", "attrs": {}, "params": [["w", [2], "yes"]]}]}
    for op, value in good.items():
        assert well_formed(op, value), op
        assert well_formed("seq", {"values": [value, value]}, {"steps": [{"op": op, "args": {}}] * 2}), op
    for op, values in bad.items():
        for value in values:
            assert not well_formed(op, value), (op, value)
            assert not well_formed("seq", {"values": [good[op], value]}, {"steps": [{"op": op, "args": {}}] * 2})


def test_evidence_records_are_read_for_the_steps_that_watched_and_anything_else_counts_everywhere():
    """protocol.read_evidence: a record names what was seen and the step; one of a watch the step did not ask for is
    left aside; bytes that are not records, a step that watched nothing, a watch begun twice in a step or ended twice
    or before it began, a pipe half full or closed (None) count for every watch of every watched step: only the
    submission's code makes those."""
    T, A = protocol.EVIDENCE[b"T"], protocol.EVIDENCE[b"A"]
    steps = {0: {A}, 2: {A, T}}
    enter = protocol.EVIDENCE_ENTER
    assert protocol.read_evidence(enter + b"\x00\x00" + enter + b"\x00\x02", steps) == {}
    assert protocol.read_evidence(b"A\x00\x02", steps) == {2: {A}}
    assert protocol.read_evidence(b"A\x00\x00A\x00\x00T\x00\x00", steps) == {0: {A}}
    assert protocol.read_evidence(protocol.EVIDENCE_OFF + b"\x00\x02", steps) == {2: {A, T}}
    everything = {0: {A}, 2: {A, T}}
    end = protocol.EVIDENCE_EXIT
    assert protocol.read_evidence(enter + b"\x00\x00" + b"A\x00\x00" + end + b"\x00\x00", steps) == {0: {A}}
    for data in (None, b"A\x00", b"A\x00\x01", b"x\x00\x00", enter + b"\x00\x02" + enter + b"\x00\x02",
                 b"A\x00\x00" * 12000, end + b"\x00\x00",  # (ended before it began, twice, or begun again)
                 enter + b"\x00\x00" + end + b"\x00\x00" + end + b"\x00\x00",
                 enter + b"\x00\x00" + end + b"\x00\x00" + enter + b"\x00\x00"):
        assert protocol.read_evidence(data, steps) == everything, data[:12] if data else data
    assert protocol.evidence_code(A) == b"A" and protocol.evidence_code("softmax") == protocol.EVIDENCE_OFF


def test_every_watch_has_words_for_its_refused_kernel_and_the_grader_uses_them():
    """A call that reaches one of torch's fused kernels, which the worker refuses (worker.refuse_fused, raising
    FusedKernelRefused, whose reply names the watch: "library"), fails saying that the class runs PyTorch's own
    layer, in both languages, not with the refusal's RuntimeError (a check that calls the class before its evidence
    gate, the attention lab's test_mha_shapes, said "raised FusedKernelRefused")."""
    from autograder import proxy, worker
    assert set(proxy._FUSED_WORDS) == set(protocol.EVIDENCE.values()) == {w[0] for w in worker._WATCHES}
    assert {t for w in worker._WATCHES for t in w[3]} == set(worker._FUSED)
    said = proxy._FUSED_WORDS[worker.LIBRARY_ATTENTION]("MultiHeadAttention")
    assert "F.multi_head_attention_forward" in said.en and "직접 작성" in said.ko
    said = proxy._FUSED_WORDS[worker.LIBRARY]("TransformerBlock")
    assert "nn.TransformerEncoderLayer" in said.en and "직접 작성" in said.ko
    e = worker.FusedKernelRefused("_native_multi_head_attention", worker.LIBRARY_ATTENTION)
    assert isinstance(e, RuntimeError)
    assert worker.Worker.describe(type("W", (), {"lines": {}})(), e)["library"] == worker.LIBRARY_ATTENTION


def test_a_refused_kernels_word_in_an_error_reply_is_read_only_as_a_known_watchs_name():
    """The "library" of an error reply comes from the worker, which the submission runs in: a list there (unhashable)
    or an unknown name is ignored, not a crash of the grader's and not a watch's failure."""
    from autograder import proxy
    for word in (["library:attention"], {"a": 1}, "library:nothing", 3, None):
        assert proxy._refused_watch({"type": "RuntimeError", "message": "no", "library": word}) is None, word
    assert proxy._refused_watch({"library": "library:attention"}) == "library:attention"
    assert proxy._refused_watch({}) is None
