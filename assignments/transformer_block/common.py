"""Check logic shared by the public and hidden checks of transformer_block.

Public: no reference code and no hidden value; only how to build and call the student's classes, the
parameter names the template fixes, and properties every correct block has.
"""
from __future__ import annotations

import ast
import re
import warnings

import torch

from autograder.bugtable import Call
from autograder.checks import CheckFailure, diagnosis, expect_shape, expect_tensor, fail
from autograder.messages import Message, near_miss
from autograder.proxy import renamed_name
from autograder.sourcecode import dropped_masked_fill, method_node, unfinished
from autograder.worker import LIBRARY, LIBRARY_ATTENTION

# nn.Transformer's advice on its fast path ("enable_nested_tensor is True, but ..."), raised while the grader builds
# its own nn.Transformer (the references, and the public check of make_transformer's parameter shapes): it went to
# the terminal once per grader process, above `grade check`'s table too, with the grader's install path, and says
# nothing about a student.
warnings.filterwarnings("ignore", message="enable_nested_tensor is True", category=UserWarning)

# The parameter names and shapes the template fixes (what the grader copies PyTorch's weights into).
def attn_params(d: int) -> dict[str, tuple[int, ...]]:
    return {f"W_{r}.{t}": ((d, d) if t == "weight" else (d,)) for r in "qkvo" for t in ("weight", "bias")}


def ffn_params(d: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    return {"linear1.weight": (d_ff, d), "linear1.bias": (d_ff,), "linear2.weight": (d, d_ff), "linear2.bias": (d,)}


def block_params(d: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    out = {f"attn.{k}": v for k, v in attn_params(d).items()}
    out.update({f"ff.{k}": v for k, v in ffn_params(d, d_ff).items()})
    out.update({f"norm{i}.{t}": (d,) for i in (1, 2) for t in ("weight", "bias")})
    return out


def randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------- building, calling

def build_attn(sub, d: int, h: int, dropout: float = 0.0, seed: int = 0):
    return _build_part(sub, "MultiHeadSelfAttention", d, h, dropout, seed)


def build_ffn(sub, d: int, d_ff: int, dropout: float = 0.0, seed: int = 0):
    return _build_part(sub, "FeedForward", d, d_ff, dropout, seed)


# What the template's parts do with their dropout (said where a part takes none).
PART_DROPOUT = {
    "MultiHeadSelfAttention": ("takes dropout after n_heads and applies self.dropout = nn.Dropout(dropout) to the "
                               "attention weights after the softmax",
                               "n_heads 다음에 dropout을 받아 softmax 뒤의 어텐션 가중치에 self.dropout = "
                               "nn.Dropout(dropout)을 적용합니다"),
    "FeedForward": ("takes dropout after d_ff and applies self.dropout = nn.Dropout(dropout) between the ReLU and "
                    "linear2",
                    "d_ff 다음에 dropout을 받아 ReLU와 linear2 사이에 self.dropout = nn.Dropout(dropout)을 적용합니다"),
}


# The template's constructors and forwards, said where the student's cannot take the checks' calls.
TEMPLATE_INIT = {
    "MultiHeadSelfAttention": "MultiHeadSelfAttention(d_model, n_heads, dropout=0.1)",
    "FeedForward": "FeedForward(d_model, d_ff, dropout=0.1)",
    "TransformerBlock": "TransformerBlock(d_model, n_heads, d_ff, dropout=0.1, norm_first=False, use_ffn=True, "
                        "use_norm=True, use_residual=True)",
}
# What the book's configuration dict holds for each of the template's arguments (Raschka's GPT_CONFIG_124M keys).
BOOK_CFG = {
    "MultiHeadSelfAttention": ('d_model = cfg["emb_dim"], n_heads = cfg["n_heads"], dropout = cfg["drop_rate"]'),
    "FeedForward": 'd_model = cfg["emb_dim"], d_ff = 4 * cfg["emb_dim"], dropout = cfg["drop_rate"]',
    "TransformerBlock": ('d_model = cfg["emb_dim"], n_heads = cfg["n_heads"], d_ff = 4 * cfg["emb_dim"], '
                         'dropout = cfg["drop_rate"]'),
}
PLACED = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


def params_text(params: list[dict]) -> str:
    """A signature as the student wrote it, without self: (cfg), (query, key, value, mask=None)."""
    out = []
    for p in params:
        star = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(p.get("kind"), "")
        if p.get("kind") == "KEYWORD_ONLY" and not any(o.startswith("*") for o in out):
            out.append("*")
        out.append(f"{star}{p.get('name')}" + (f"={p['default']}" if p.get("default") is not None else ""))
    return f"({', '.join(out)})"


def takes_placed(params: list[dict], n: int) -> bool:
    """Whether a callable of these parameters (Submission.signature's) can be called with n arguments by position
    and nothing else."""
    placed = [p for p in params if p.get("kind") in PLACED]
    required = [p for p in params if p.get("default") is None and p.get("kind") in (*PLACED, "KEYWORD_ONLY")]
    spare = any(p.get("kind") == "VAR_POSITIONAL" for p in params)
    return (len(placed) >= n or spare) and len([p for p in required if p.get("kind") in PLACED]) <= n \
        and not [p for p in required if p.get("kind") == "KEYWORD_ONLY"]


def init_misfit(sub, cls: str, n: int) -> Message | None:
    """Where the student's `cls.__init__` cannot take the n arguments by position that every check builds it with
    (MultiHeadSelfAttention(d_model, n_heads), TransformerBlock(d_model, n_heads, d_ff)), what to say: the
    template's constructor and the student's. The book's TransformerBlock(cfg), one configuration dict (emb_dim,
    context_length, n_heads, drop_rate, qkv_bias), raised "takes 2 positional arguments but 4 were given" in every
    check of the block and of exercise 3 (learners round tb16). None where it can, or its signature cannot be read.
    Decided once per class."""
    key = f"init_misfit:{cls}"
    if key not in sub.memo:
        sub.memo[key] = None
        try:
            params = sub.signature(cls)
        except CheckFailure:
            params = None
        if params is not None and not takes_placed(params, n):
            theirs = params_text(params)
            placed = [p.get("name") for p in params if p.get("kind") in PLACED]
            book_en = book_ko = ""
            if len(placed) == 1 and re.search(r"cfg|conf", str(placed[0]), re.IGNORECASE):
                book_en = (f" One configuration dict is how the book builds its GPT model; this lab passes the sizes one "
                           f"by one ({BOOK_CFG[cls]}).")
                book_ko = (f" 설정 딕셔너리 하나로 만드는 것은 책의 GPT 모델 방식입니다; 이 과제는 크기를 하나씩 "
                           f"넘깁니다 ({BOOK_CFG[cls]}).")
            count = f"{len(placed)} positional argument{'' if len(placed) == 1 else 's'}"
            sub.memo[key] = Message(
                f"`{cls}.__init__` takes {count}, {theirs}, so the checks cannot build it: this lab builds "
                f"{TEMPLATE_INIT[cls]}, the template's constructor.{book_en} Write `__init__` with the template's "
                "arguments, in that order.",
                f"`{cls}.__init__`이(가) 위치 인자 {len(placed)}개 {theirs}을(를) 받으므로 검사가 만들 수 없습니다: 이 과제는 템플릿의 생성자 "
                f"{TEMPLATE_INIT[cls]}로 만듭니다.{book_ko} 템플릿의 인자를 같은 순서로 받도록 `__init__`을 "
                "작성하세요.")
    return sub.memo[key]


# How the checks call each class (said by forward_misfit).
FORWARD_CALLS = {
    "MultiHeadSelfAttention": (
        "forward(x, causal=False), self-attention on one input x of shape (batch, tokens, d_model): the queries, keys "
        "and values are all projected from x (W_q(x), W_k(x), W_v(x)), and causal=True hides each token's future. "
        "Take x (and causal) instead of separate query, key and value inputs and a mask.",
        "forward(x, causal=False)로 호출합니다. (batch, tokens, d_model) shape의 입력 x 하나에 대한 셀프 어텐션이므로 "
        "쿼리, 키, 값을 모두 x에서 투영하고 (W_q(x), W_k(x), W_v(x)), causal=True이면 각 토큰의 미래를 가립니다. "
        "쿼리, 키, 값 입력과 mask를 따로 받는 대신 x(와 causal)를 받으세요."),
    "FeedForward": ("forward(x), one input of shape (batch, tokens, d_model).",
                    "(batch, tokens, d_model) shape의 입력 하나로 forward(x)를 호출합니다."),
    "TransformerBlock": (
        "forward(x, causal=False), one input x of shape (batch, tokens, d_model), and the block passes causal on to "
        "its attention, self.attn(x, causal).",
        "(batch, tokens, d_model) shape의 입력 x 하나로 forward(x, causal=False)를 호출하고, 블록은 causal을 "
        "어텐션에 self.attn(x, causal)로 넘깁니다."),
}


def forward_misfit(sub, cls: str) -> Message | None:
    """Where the student's `cls.forward` cannot be called with the input x alone (forward(query, key, value,
    mask), as the Annotated Transformer and the notes' MultiHeadedAttention write it: every call raised "missing 2
    required positional arguments: 'key' and 'value'", learners round tb16), what a call that raised says instead
    (Remote.call_misfit): the template's forward and the student's. Decided once per class."""
    key = f"forward_misfit:{cls}"
    if key not in sub.memo:
        sub.memo[key] = None
        try:
            params = sub.signature(cls, "forward")
        except CheckFailure:
            params = None
        if params is not None and not takes_placed(params, 1):
            theirs = params_text(params)
            en, ko = FORWARD_CALLS[cls]
            sub.memo[key] = Message(f"`{cls}.forward` takes {theirs}, so the checks cannot call it: this lab calls {en}",
                                    f"`{cls}.forward`가 {theirs}을(를) 받으므로 검사가 호출할 수 없습니다: 이 과제는 {ko}")
    return sub.memo[key]


def part_dropout(sub, cls: str) -> str:
    """How the student's `cls.__init__` (a part: MultiHeadSelfAttention, FeedForward) takes dropout: "position"
    (a third argument under any name, or *args; also where the signature cannot be read or places fewer than two),
    "keyword" (two placed arguments, and `dropout` keyword-only or **kwargs), or "none". A part written (d_model, n_heads)
    or (d_model, d_ff), as tutorials without dropout write it (learners round rl12: FeedForward(d_model, d_ff)), was
    refused every call ("takes 3 positional arguments but 4 were
    given") and lost every check of its question; it is built without dropout where the check's dropout is 0, and a
    check that needs another dropout says that it takes none (as TransformerBlock's takes_dropout). Decided once per
    submission and class."""
    key = f"part_dropout:{cls}"
    if key not in sub.memo:
        try:
            params = sub.signature(cls)
        except CheckFailure:
            params = None
        placed = [p for p in params or () if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
        # (fewer than two, as FeedForward(cfg): the call by position shows what it takes instead)
        if params is None or len(placed) != 2 or any(p.get("kind") == "VAR_POSITIONAL" for p in params):
            sub.memo[key] = "position"
        elif any(p.get("name") == "dropout" or p.get("kind") == "VAR_KEYWORD" for p in params):
            sub.memo[key] = "keyword"
        else:
            sub.memo[key] = "none"
    return sub.memo[key]


# The attention's checks compare it with nn.MultiheadAttention: one that runs that layer's code (F.multi_head_attention_
# forward with its own W_q, W_k, W_v and W_o, an nn.MultiheadAttention loaded with them, its fused kernel) has
# PyTorch compute the question, and earned all 20 points (red team, round 21). F.scaled_dot_product_attention stays
# the student's to use: the projections, the heads and their joining are still theirs.
OWN_ATTENTION = Message(
    "`MultiHeadSelfAttention` runs PyTorch's own multi-head attention (nn.MultiheadAttention, "
    "F.multi_head_attention_forward or its kernel): this question asks you to write it yourself, the projections, "
    "the split into heads, the scaled scores, the softmax and the joined heads, so what PyTorch computes for it earns "
    "nothing.",
    "`MultiHeadSelfAttention`이(가) PyTorch의 멀티 헤드 어텐션(nn.MultiheadAttention, "
    "F.multi_head_attention_forward 또는 그 커널)을 그대로 실행합니다: 이 문제는 투영, 헤드 나누기, 스케일된 점수, "
    "softmax, 헤드 합치기를 직접 작성하는 문제이므로 PyTorch가 계산한 결과로는 점수를 받을 수 없습니다.")


def _build_part(sub, cls: str, a: int, b: int, dropout: float, seed: int):
    misfit = init_misfit(sub, cls, 2)
    if misfit is not None:
        raise CheckFailure(misfit)
    how = part_dropout(sub, cls)
    if how == "position":
        m = sub.new(cls, a, b, dropout, seed=seed)
        m.renamed = part_renames(sub, cls, m)
        return _watched(m)
    if how == "keyword":
        m = sub.new(cls, a, b, seed=seed, dropout=dropout)
    elif dropout:
        en, ko = PART_DROPOUT[cls]
        fail(f"`{cls}.__init__` takes no dropout argument, so `{cls}({a}, {b}, {dropout})` cannot be built: the "
             f"template's {cls} {en}.",
             f"`{cls}.__init__`에 dropout 인자가 없어서 `{cls}({a}, {b}, {dropout})`을(를) 만들 수 없습니다: 템플릿의 "
             f"{cls}는 {ko}.")
    else:
        m = sub.new(cls, a, b, seed=seed)
    m.ctor = (m.ctor[0], (a, b, dropout), {}, m.ctor[3])  # (the diagnosis builds the reference from these)
    m.renamed = part_renames(sub, cls, m)
    return _watched(m)


def _watched(m):
    """The student's part `m`, its calls watched for PyTorch's multi-head attention where it is the attention (and
    a call its forward cannot take told so: forward_misfit)."""
    if m.ctor and m.owner is not None:
        m.call_misfit = forward_misfit(m.sub, m.ctor[0])
    if m.ctor and m.ctor[0] == "MultiHeadSelfAttention":
        m.own_work = (LIBRARY_ATTENTION, OWN_ATTENTION)
    return m


# The block's checks compare it with nn.TransformerEncoderLayer: a block that runs that layer's code (holds one and
# loads its own parts' weights into it, subclasses it, borrows its forward or its fused kernel) has PyTorch compute
# what the question asks the student to assemble, and earned 34 of the block's 36 points as a wrapper that loaded its
# parts' weights into a fresh layer at each call (red team, round 21; the exam's Q3 was closed the same way in
# round 17). Every call of a block built here is watched for it (proxy.Remote.own_work).
OWN_BLOCK = Message(
    "`TransformerBlock` runs PyTorch's own nn.TransformerEncoderLayer (your class subclasses it, holds one, or calls "
    "its forward or its kernel): this question asks you to assemble the block yourself from your attention, "
    "feed-forward network, LayerNorms, dropouts and residual connections, so what PyTorch's layer computes for it "
    "earns nothing.",
    "`TransformerBlock`이(가) PyTorch의 nn.TransformerEncoderLayer를 그대로 실행합니다 (클래스가 그것을 상속하거나, "
    "가지고 있거나, 그 forward나 커널을 호출함): 이 문제는 여러분의 어텐션, 피드포워드 네트워크, LayerNorm, dropout, "
    "잔차 연결로 블록을 직접 조립하는 문제이므로 PyTorch의 레이어가 계산한 결과로는 점수를 받을 수 없습니다.")


# The template's names of each part's linear layers, in the order the template makes them.
PART_LAYERS = {"MultiHeadSelfAttention": ("W_q", "W_k", "W_v", "W_o"), "FeedForward": ("linear1", "linear2")}

# The words of a layer's name that say which of the attention's projections it is (W_o's only where it names none
# of the others: q_proj is the query's). Red team, round 22: nanoGPT's Head makes key before query, and a right
# attention with key/query/value/proj made in that order was given W_q's weights in its keys (the scores
# transposed): 5.6 of 20.
ROLE_WORDS = {"W_q": {"q", "query", "queries"}, "W_k": {"k", "key", "keys"}, "W_v": {"v", "value", "values"},
              "W_o": {"o", "out", "output", "proj", "projection"},
              # the feed-forward's layers and the block's LayerNorms, by the same rule (correct variants round 6:
              # w_down made before w_up, norm_ffn before norm_attn, went by the order made)
              "linear1": {"up", "in", "expand", "inner"}, "linear2": {"down", "out", "output", "proj", "contract"},
              "norm1": {"attn", "attention", "sa", "mha"}, "norm2": {"ff", "ffn", "ffwd", "mlp", "feedforward"}}


def name_words(name: str) -> set[str]:
    """The words of a layer's own name (its last dotted part), lower case: split at what is not a letter and where
    camelCase starts a word (queryProj: query, proj), with a letter after a leading w also its own word (Llama's
    wq, wk, wv, wo; Wq: q). Correct variants round 6: wk, wq, wv, wo and keyProj, queryProj made in that order named
    no role and went by the order made, W_q's weights into the keys (5.6 of 20)."""
    last = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.rsplit(".", 1)[-1])
    words = set(re.split(r"[^a-z]+", last.lower())) - {""}
    return words | {w[1:] for w in words if len(w) == 2 and w[0] == "w"}


def _by_role(want: tuple[str, ...], linears: list[str]) -> dict[str, str] | None:
    """The template's layer of `want` each of `linears` names by its words (ROLE_WORDS), where every one names
    exactly one and no two the same; None otherwise (then the order made decides)."""
    roles: dict[str, str] = {}
    last = want[-1]  # (W_o, linear2, norm2: named so only where the name says none of the others: q_proj is W_q)
    for name in linears:
        words = name_words(name)
        named = [w for w in want if w != last and ROLE_WORDS.get(w, set()) & words]
        if not named and ROLE_WORDS.get(last, set()) & words:
            named = [last]
        if len(named) != 1 or named[0] in roles:
            return None
        roles[named[0]] = name
    return roles if len(roles) == len(want) else None


def forward_uses(sub, owner: str, linears: list[str]) -> dict[str, str] | None:
    """The attention's template layer each of `linears` (the names of the student's nn.Linear modules of class
    `owner`, relative to it: `linears.1`) serves, read from the student's forward (parsed, not run) where the names
    themselves say no role: the variable its output is assigned to (`q = self._heads(self.linears[1](x), b, n)`, `k`,
    `v`: the words ROLE_WORDS reads in a layer's own name) and the layer whose output forward returns (W_o). None
    unless each layer is used so exactly once and the words give each a role of its own. Red team round 22's known
    gap, learners round tb16: `self.linears = nn.ModuleList(...)` used as out, q, k, v got the weights in the order
    made (5.6 of 20)."""
    node = method_node(sub, owner, "forward")
    if node is None:
        return None
    lists: dict[str, int] = {}
    for n in linears:
        head, _, last = n.rpartition(".")
        if head and last.isdigit():
            lists[head] = lists.get(head, 0) + 1

    def layer(call) -> str | None:
        f = call.func
        index = None
        if isinstance(f, ast.Subscript):
            i = f.slice
            if isinstance(i, ast.UnaryOp) and isinstance(i.op, ast.USub) and isinstance(i.operand, ast.Constant):
                index = -i.operand.value if type(i.operand.value) is int else None
            elif isinstance(i, ast.Constant) and type(i.value) is int:
                index = i.value
            if index is None:
                return None
            f = f.value
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"):
            return None
        if index is None:
            name = f.attr
        elif f.attr in lists and -lists[f.attr] <= index < lists[f.attr]:
            name = f"{f.attr}.{index % lists[f.attr]}"
        else:
            return None
        return name if name in linears else None

    def layers_in(expr) -> set[str]:
        return {n for c in ast.walk(expr) if isinstance(c, ast.Call) for n in [layer(c)] if n is not None}

    uses: dict[str, set[str]] = {}
    assigned: dict[str, str] = {}  # variable -> the one layer its value came from
    for st in ast.walk(node):
        pairs = []
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t = st.targets[0]
            if isinstance(t, ast.Name):
                pairs = [(t.id, st.value)]
            elif isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(t.elts) == len(st.value.elts):
                pairs = [(e.id, v) for e, v in zip(t.elts, st.value.elts) if isinstance(e, ast.Name)]
        elif isinstance(st, ast.Return) and st.value is not None:
            if isinstance(st.value, ast.Name) and st.value.id in assigned:
                uses.setdefault(assigned[st.value.id], set()).add("out")
            else:
                pairs = [("out", st.value)]
        for var, value in pairs:
            found = layers_in(value)
            if len(found) == 1:
                uses.setdefault(next(iter(found)), set()).add(var)
                assigned[var] = next(iter(found))
    if set(uses) != set(linears):
        return None
    named = {}
    for n, vars_ in uses.items():
        roles = {w for v in vars_ for w in PART_LAYERS["MultiHeadSelfAttention"]
                 if ROLE_WORDS[w] & name_words(v)}
        if len(roles) > 1 and "W_o" in roles:  # (W_o only where the words name none of the others)
            roles.discard("W_o")
        if len(roles) != 1:
            return None
        named[roles.pop()] = n
    return named if len(named) == len(linears) else None


def part_layers(modules: list, under: str, cls: str, uses=None) -> dict[str, str]:
    """The template's names of a part's linear layers -> the student's, relative to the part (`under`, its name in
    describe()'s `modules`, "" for the part itself), where the part uses none of the template's names: its
    nn.Linear modules in the order made, when there are exactly as many (query, key, value, out; fc1, fc2; net.0,
    net.3 of an nn.Sequential), or by the words of their names where each says its role (_by_role: key made before
    query, w_down before w_up), or by the number each name ends with (by_number: fc2 made before fc1). Learners round
    rl13: a right attention with query/key/value/out got 4 of 20."""
    want = PART_LAYERS[cls]
    prefix = f"{under}." if under else ""
    inner = [n[len(prefix):] for n, _c in modules if n.startswith(prefix)]
    linears = [n[len(prefix):] for n, c in modules if n.startswith(prefix) and c == "Linear"]
    if any(w in inner for w in want) or len(linears) != len(want):
        return {}
    by_use = uses(linears) if uses is not None and cls == "MultiHeadSelfAttention" else None
    return _by_role(want, linears) or by_use or dict(zip(want, by_number(linears)))


def by_number(names: list[str]) -> list[str]:
    """`names` in the order of the number each ends with (fc1, fc2; ln_1, ln_2), where each ends with its own;
    else as they are (the order made). Correct variants round 6: fc2 made before fc1 got linear1's weights, which
    did not fit (the feed-forward kept 1.6 of 12), and ln_2 made before ln_1 was taken as norm1 (13.5 of 36)."""
    ends = [re.search(r"(\d+)$", n.rsplit(".", 1)[-1]) for n in names]
    if any(e is None for e in ends) or len({int(e.group(1)) for e in ends}) != len(names):
        return names
    return [n for _k, n in sorted(zip([int(e.group(1)) for e in ends], names))]


def fused_qkv(info: dict, under: str, cls: str) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Where the attention (`under`: its name in describe()'s `modules`, "" for the part itself) holds one fused
    query/key/value projection instead of W_q, W_k, W_v (nanoGPT's c_attn, `self.qkv = nn.Linear(d_model,
    3 * d_model)`, split into q, k, v in that order): ({its name: ("W_q", "W_k", "W_v")}, {"W_o": the other layer's
    name}) for Remote.fused and renamed, relative to the part; ({}, {}) otherwise. Its evidence is the layers'
    shapes: exactly two nn.Linear modules, one of (3 d, d) and one of (d, d). Such a right attention kept 4.8 of 20:
    every check that copies PyTorch's weights in failed (learners round tb16); now the parameter check alone
    charges it, saying so."""
    if cls != "MultiHeadSelfAttention":
        return {}, {}
    prefix = f"{under}." if under else ""
    modules = info.get("modules", [])
    inner = [n[len(prefix):] for n, _c in modules if n.startswith(prefix)]
    linears = [n[len(prefix):] for n, c in modules if n.startswith(prefix) and c == "Linear"]
    if any(w in inner for w in ("W_q", "W_k", "W_v")) or len(linears) != 2:
        return {}, {}
    shapes = {n[len(prefix):-len(".weight")]: tuple(shape) for n, shape, *_ in info.get("params", [])
              if n.startswith(prefix) and n.endswith(".weight")}
    both = [shapes.get(n) for n in linears]
    if any(sh is None or len(sh) != 2 for sh in both):
        return {}, {}
    for qkv, out in (linears, linears[::-1]):
        (r, c), (ro, co) = shapes[qkv], shapes[out]
        if r == 3 * c and ro == co == c:
            return {qkv: ("W_q", "W_k", "W_v")}, ({} if out == "W_o" else {"W_o": out})
    return {}, {}


def part_renames(sub, cls: str, m) -> dict[str, str]:
    """part_layers for the student's own part built alone (none for the grader's stand-in), or the output layer's
    name beside a fused query/key/value projection (fused_qkv, which also sets m.fused). Decided once per
    class; the structure check (check_params) alone charges the names."""
    if m.owner is None:
        return {}
    key = f"part_renames:{cls}"
    if key not in sub.memo:
        info = m.describe()
        fused, renames = fused_qkv(info, "", cls)
        sub.memo[key] = renames if fused else part_layers(info.get("modules", []), "", cls,
                                                           lambda linears: forward_uses(sub, m.owner, linears))
        sub.memo[f"part_fused:{cls}"] = fused
    m.fused = dict(sub.memo[f"part_fused:{cls}"])
    return sub.memo[key]


def build_block(sub, d: int, h: int, d_ff: int, dropout: float = 0.0, norm_first: bool = False, seed: int = 0,
                stand_in: dict[str, str] | None = None, **switches: bool):
    """The student's TransformerBlock(d, h, d_ff, dropout, norm_first=..., **switches): norm_first under the
    student's own name for it (norm_first_name), and built over the grader's stand-in attention where the student's
    own does not run (attn_stand_in)."""
    args, kw, own, takes = _block_call(sub, d, h, d_ff, dropout)
    misfit = init_misfit(sub, "TransformerBlock", 3)
    if misfit is not None:
        raise CheckFailure(misfit)
    spec = stand_in or block_stand_in(sub)
    m = sub.new("TransformerBlock", *args, seed=seed, stand_in=spec,
                **({own or "norm_first": norm_first} if takes else {}), **kw, **switches)
    m.own_work = (LIBRARY, OWN_BLOCK)
    m.call_misfit = forward_misfit(sub, "TransformerBlock")
    m.renamed = block_renames(sub, m, spec)
    if own or not takes or len(args) < 4:  # (the diagnosis builds the reference's block from these: the mode the
        # check asked for, under the template's name)
        m.ctor = (m.ctor[0], (d, h, d_ff, dropout),
                  {**{("norm_first" if k == own else k): v for k, v in m.ctor[2].items()}, "norm_first": norm_first},
                  m.ctor[3])
    return m


def _block_call(sub, d: int, h: int, d_ff: int, dropout: float) -> tuple[tuple, dict, str | None, bool]:
    """How build_block passes the student's TransformerBlock its sizes and dropout: (args, keyword arguments, the
    student's name for norm_first or None, whether it takes norm_first at all)."""
    own = norm_first_name(sub)
    takes = own is not None or takes_norm_first(sub)
    args: tuple = (d, h, d_ff, dropout)
    kw: dict = {}
    if not takes_dropout(sub) and dropout_keyword(sub):  # dropout keyword-only, or placed after norm_first
        args, kw = (d, h, d_ff), {"dropout": dropout}
    elif not takes_dropout(sub):  # (d_model, n_heads, d_ff): a block with no dropout of its own
        if dropout:
            fail(f"`TransformerBlock.__init__` takes no dropout argument, so `{block_text(d, h, d_ff, dropout)[:-3]}` "
                 "cannot be built: the template's block takes dropout after d_ff, gives it to its attention and "
                 "feed-forward network, and keeps self.dropout1, self.dropout2 = nn.Dropout(dropout), "
                 "nn.Dropout(dropout).",
                 f"`TransformerBlock.__init__`에 dropout 인자가 없어서 `{block_text(d, h, d_ff, dropout)[:-3]}`을(를) "
                 "만들 수 없습니다: 템플릿의 블록은 d_ff 다음에 dropout을 받아 어텐션과 피드포워드 네트워크에 넘기고 "
                 "self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)을 둡니다.")
        args = (d, h, d_ff)
    return args, kw, own, takes


def block_renames(sub, m, spec: dict | None = None) -> dict[str, str]:
    """The student's names for the block's parts where the template's are not used: {"attn": "attention", "ff":
    "ffn", "norm1": "ln1", "norm2": "ln2"}: the one top-level module of the attention's class (the student's, or
    its misspelt name, or the grader's stand-in) and of FeedForward's, and the two top-level LayerNorms by their
    names' words or numbers where they say which is which (attention_norm, ffn_norm; ln_1, ln_2), else in the order
    they were made. A right block with `self.attention` and `self.ffn` got 58.75 of 100: PyTorch's weights went to
    attn.* and ff.* only (learners round rl13: tutorials name them so). The weights are copied in under the
    student's names (Remote.renamed); the structure check alone charges the names. With them, the parts' linear
    layers named otherwise (part_layers: attn.W_q -> attention.query). Decided once per submission and set of
    stand-in parts (`spec`)."""
    key = f"block_renames:{(spec or {}).get('name')}"  # (over the grader's stand-in parts: their names)
    if key not in sub.memo:
        info = m.describe()
        top = [(n, c) for n, c in info.get("modules", []) if "." not in n]
        names = {n for n, _c in top}
        classes = [n for n, kind in sub.names.items() if kind == "class"]
        renames: dict[str, str] = {}
        for want, cls in (("attn", "MultiHeadSelfAttention"), ("ff", "FeedForward")):
            own = cls if cls in sub.names else near_miss(cls, classes)
            held = [n for n, c in top if c in (cls, own)]
            if want not in names and len(held) == 1:
                renames[want] = held[0]
        if "ff" not in names and "ff" not in renames:
            inline = inline_feed_forward(info.get("modules", []), top)
            if inline is not None:
                renames["ff"] = inline
        norms = [n for n in info.get("layer_norms") or [] if "." not in n]
        if not norms:  # (LayerNorms of the student's own class, the book's, under other names: ln1, ln2)
            norms = [n for n, c in top if c == "LayerNorm"]
        if not {"norm1", "norm2"} & names and len(norms) == 2:
            renames.update(_by_role(("norm1", "norm2"), norms) or dict(zip(("norm1", "norm2"), by_number(norms))))
        fused: dict[str, tuple[str, ...]] = {}
        for want, cls in (("attn", "MultiHeadSelfAttention"), ("ff", "FeedForward")):
            held = renames.get(want, want if want in names else None)
            joined, layers = fused_qkv(info, held, cls) if held else ({}, {})
            fused.update({f"{held}.{mine}": tuple(f"{want}.{t}" for t in theirs) for mine, theirs in joined.items()})
            owner = dict(top).get(held) if held else None  # (the part's class: its forward says how it is used)
            uses = (lambda linears, owner=owner: forward_uses(sub, owner, linears)) if owner in sub.names else None
            for theirs, mine in ((layers if joined else part_layers(info.get("modules", []), held, cls, uses))
                                 if held else {}).items():
                renames[f"{want}.{theirs}"] = f"{held}.{mine}"
        renames.update(own_norm_params(info, {n: renames.get(n, n) for n in ("norm1", "norm2")}))
        theirs = (renames.get("norm1", "norm1"), renames.get("norm2", "norm2"))
        if set(theirs) <= set(norms) and theirs[0] != theirs[1] and norms_used_the_other_way(
                sub, m, renames, fused, spec, theirs):
            renames.update({"norm1": theirs[1], "norm2": theirs[0]})
        sub.memo[key] = renames
        sub.memo[f"block_fused:{(spec or {}).get('name')}"] = fused
    m.fused = dict(sub.memo[f"block_fused:{(spec or {}).get('name')}"])
    return sub.memo[key]


# A LayerNorm of the student's own writes its two parameters under these names (the book's chapter 4: scale, shift).
NORM_PARAMS = (("scale", "shift"), ("gamma", "beta"), ("alpha", "beta"), ("g", "b"))


def own_norm_params(info: dict, held: dict[str, str]) -> dict[str, str]:
    """The template's norm1.weight / norm1.bias -> the student's own LayerNorm's parameters where it is no
    nn.LayerNorm but a class of their own holding exactly two vectors named as NORM_PARAMS says (the book's chapter 4
    LayerNorm: self.scale = nn.Parameter(torch.ones(emb_dim)), self.shift = ...; `held`: the template's name -> the
    student's module). Learners round rl16: a right block reusing the book's LayerNorm for norm1 and norm2 got 6 of
    36 and 6 of 12, PyTorch's weights having no norm1.weight to go to. Whether it computes nn.LayerNorm (biased
    variance, eps 1e-5) is for the value checks to say."""
    kinds = dict(info.get("modules", []))
    out: dict[str, str] = {}
    for theirs, mine in held.items():
        if mine not in kinds or mine in (info.get("layer_norms") or []):
            continue
        params = {n[len(mine) + 1:]: shape for n, shape, *_ in info.get("params", []) if n.startswith(f"{mine}.")}
        pair = next((pp for pp in NORM_PARAMS if set(params) == set(pp)), None)
        if pair and all(len(params[n]) == 1 for n in pair):
            out.update({f"{theirs}.weight": f"{mine}.{pair[0]}", f"{theirs}.bias": f"{mine}.{pair[1]}"})
    return out


def inline_feed_forward(modules: list, top: list) -> str | None:
    """The block's feed-forward network written in place, with no class of its own: the one top-level nn.Sequential
    that holds exactly two nn.Linear layers (`self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(),
    nn.Dropout(dropout), nn.Linear(d_ff, d_model))`, as tutorials write it, also as `mlp` or `feed_forward`), else
    None. Learners round rl16: a right block with such an `ffn` got 3.75 of 36 and 6 of 12 (PyTorch's weights had no
    ff.linear1 to go to), where the same block naming it `ff` kept 33.75; part_layers then maps its two layers in
    the order made. The structure check alone charges it (ff should be a FeedForward)."""
    held = [n for n, c in top if c == "Sequential"
            and sum(1 for m, k in modules if m.startswith(f"{n}.") and k == "Linear") == 2]
    return held[0] if len(held) == 1 else None


def norms_used_the_other_way(sub, m, renames: dict, fused: dict, spec: dict | None, norms: tuple[str, str]) -> bool:
    """Whether the student's post-norm block applies `norms[1]` (the LayerNorm read as norm2) around the attention
    sub-layer and `norms[0]` around the feed-forward one: its names swapped, its computation right once each gets
    the weights of its role. Shown on a block of its own (norm_first=False, dropout 0, eval mode) whose two
    LayerNorms hold different weights and whose feed-forward output layer is zero: then the second LayerNorm call's
    input is the first call's output, and the output the second call's; the first LayerNorm called is the
    attention's. Learners round tb16: a right block with norm1 and norm2 used the other way round was judged as
    "norms swapped" in every comparison and lost 26.25 points of the block and exercise 3; the template fixes which
    is which, so the structure check alone charges the names."""
    d, h, d_ff = m.ctor[1][:3] if m.ctor and len(m.ctor[1]) >= 3 else (None, None, None)
    if not all(type(v) is int for v in (d, h, d_ff)):
        return False
    try:
        args, kw, own, takes = _block_call(sub, d, h, d_ff, 0.0)
        e = sub.new("TransformerBlock", *args, seed=0, stand_in=spec,
                    **({own or "norm_first": False} if takes else {}), **kw)
        e.renamed, e.fused = dict(renames), dict(fused)
        g = torch.Generator().manual_seed(7)
        ln = {n: (1.0 + 0.5 * torch.rand(d, generator=g), 0.3 * torch.randn(d, generator=g)) for n in ("norm1", "norm2")}
        state = {f"{n}.{t}": v for n, (w, b) in ln.items() for t, v in (("weight", w), ("bias", b))}
        state.update({"ff.linear2.weight": torch.zeros(d, d_ff), "ff.linear2.bias": torch.zeros(d)})
        report = e.load_state(state)
        if report.get("missing") or report.get("mismatched"):
            return False
        res = e.run(randn(5, 2, 5, d), record=["layer_norm"])
    except CheckFailure:
        return False
    seen = [r["input"] for r in res.get("records") or [] if r.get("fn") == "layer_norm"
            and type(r.get("input")) is torch.Tensor]
    y = res.get("out")
    if len(seen) != 2 or type(y) is not torch.Tensor or seen[0].shape != seen[1].shape or y.shape != seen[1].shape:
        return False

    def norm(t, which):
        return torch.nn.functional.layer_norm(t, (d,), *ln[which])

    def near(a, b):
        return bool(((a - b).abs() <= 1e-5 + 1e-5 * b.abs()).all())
    return near(seen[1], norm(seen[0], "norm2")) and near(y, norm(seen[1], "norm1")) \
        and not near(seen[1], norm(seen[0], "norm1"))


def as_template(m, params: dict) -> dict:
    """A module's parameters (m.state()["params"], or its gradients) under the template's names (block_renames,
    part_renames undone), as the checks name them; load_state takes them so."""
    back = {mine: theirs for theirs, mine in m.renamed.items()}
    out = {}
    for n, t in params.items():
        head, _, leaf = n.rpartition(".")
        theirs = m.fused.get(head)
        if theirs and type(t) is torch.Tensor and t.dim() and t.shape[0] % len(theirs) == 0:
            # (a fused query/key/value projection: its rows in thirds, as Remote.load_state joins them)
            out.update({f"{part}.{leaf}": piece for part, piece in zip(theirs, t.chunk(len(theirs), dim=0))})
        else:
            out[renamed_name(n, back)] = t
    return out


def block_signature(sub) -> list[dict] | None:
    """The parameters of the student's TransformerBlock.__init__ (Submission.signature, asked once per submission),
    None where they cannot be read (no such class, a signature inspect cannot give)."""
    try:
        return sub.signature("TransformerBlock")
    except CheckFailure:
        return None


def takes_dropout(sub) -> bool:
    """Whether the student's TransformerBlock.__init__ takes a fourth argument (dropout, under any name) or *args.
    A block written (d_model, n_heads, d_ff), as tutorials without dropout write it (learners round rl11), was
    refused every call ("takes 4 positional arguments but 5 were given"): it is built without dropout where the
    check's dropout is 0, and a check that needs another dropout says that it takes none. Decided once."""
    key = "takes_dropout"
    if key not in sub.memo:
        params = block_signature(sub)
        placed = [p.get("name") for p in params or () if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
        # (a fourth argument under any name, unless it is one the template places after dropout)
        sub.memo[key] = params is None or any(p.get("kind") == "VAR_POSITIONAL" for p in params) \
            or (len(placed) >= 4 and placed[3] not in BLOCK_ARGS[4:] and placed[3] != norm_first_name(sub))
    return sub.memo[key]


def dropout_keyword(sub) -> bool:
    """Whether the student's TransformerBlock.__init__ takes `dropout` by that name where takes_dropout finds no
    fourth argument for it: keyword-only (`*, dropout=0.1`) or after norm_first. Such a right block was told
    "takes no dropout argument" and lost both dropout checks (4.5 points; red team, round 18): it is given dropout
    by name (a place other than the template's is the signature's to charge)."""
    key = "dropout_keyword"
    if key not in sub.memo:
        params = block_signature(sub)
        sub.memo[key] = any(p.get("name") == "dropout" and p.get("kind") in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")
                            for p in params or ())
    return sub.memo[key]


def takes_norm_first(sub) -> bool:
    """Whether the student's TransformerBlock.__init__ can be given norm_first=...: it names it, takes **kwargs, or
    its signature cannot be read (then it is passed as before). A block without it (learners round rl11: blocks
    written as (d_model, n_heads, d_ff, dropout), post-norm only, as in most tutorials) was refused every
    `norm_first=False` call with "unexpected keyword argument 'norm_first'" and got 0 of 36 for a right post-norm
    block, and a message about the keyword in every check. It is built without the keyword: it computes the one
    order it has, which earns the checks of that order only (the other order's checks compare it with the other
    order's output and name the argument it lacks). Decided once per submission."""
    key = "takes_norm_first"
    if key not in sub.memo:
        params = block_signature(sub)
        sub.memo[key] = params is None or any(p.get("name") == "norm_first" or p.get("kind") == "VAR_KEYWORD"
                                              for p in params)
    return sub.memo[key]


# ---------------------------------------------------------------------------------------------- norm_first renamed

# The template's arguments of TransformerBlock.__init__, in order.
BLOCK_ARGS = ("d_model", "n_heads", "d_ff", "dropout", "norm_first", "use_ffn", "use_norm", "use_residual")


def is_number_setting(name: object, default: object) -> bool:
    """Whether a parameter holds a number, not a flag: `layer_norm_eps=1e-5`, `ln_eps`, `norm_eps=1e-6` (the
    LayerNorms' epsilon). Such a fifth argument holds "norm" in its name but is no renamed norm_first: passed the
    flag, it built the LayerNorms with eps 0 and 1, and its student was told to rename it to norm_first (learners
    round rl12). `default` is the worker's repr of the default, None where there is none."""
    if isinstance(name, str) and re.search(r"eps", name, re.IGNORECASE):
        return True
    if not isinstance(default, str) or default in ("True", "False", "None"):
        return False
    try:
        float(default)
    except ValueError:
        return False
    return True


def norm_first_name(sub) -> str | None:
    """The student's name for norm_first, where their TransformerBlock.__init__ takes it under another name at the
    template's place (fifth, after dropout) -- `pre_norm`, `prenorm`, `norm_before` --, else None. Passed as
    norm_first=..., it was refused ("unexpected keyword argument") and a right block got 0 of 36 and 1 of 12 (learners
    round s10). The checks pass it under the student's name; the ablation question's signature check charges the
    name, once. Decided once per submission."""
    key = "norm_first_name"
    if key not in sub.memo:
        sub.memo[key] = None
        params = block_signature(sub) or []
        got = [p.get("name") for p in params if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
        if "norm_first" not in got and len(got) > 4 and got[:4] == list(BLOCK_ARGS[:4]):
            name = got[4]
            default = next(p.get("default") for p in params if p.get("name") == name)
            if isinstance(name, str) and name.isidentifier() and name not in BLOCK_ARGS \
                    and re.search(r"norm|pre|first|ln", name, re.IGNORECASE) and not is_number_setting(name, default):
                sub.memo[key] = name
    return sub.memo[key]


# ---------------------------------------------------------------------------------------------- stand-in attention

# The grader's stand-in attention. Where the student's MultiHeadSelfAttention does not run (it raises, or returns no
# (b, n, d_model) tensor), the block is built with this class in place of theirs, so that the block is judged on its
# own code: the attention's fault costs points in its own question only, and the block earns only what it computes
# (a block whose forward called a raising attention and then returned its input kept 24 of 36, the failure excused
# as the attention's: learners round s10). It is deliberately NOT the lab's answer (one head, weights from a sigmoid
# of the raw scores normalised by their sum: no softmax, no scaling, no -inf): it runs in the student's process,
# where code can read it. It has the template's constructor, parameter names and forward(x, causal=False), and it
# mixes the tokens (causally with causal=True), so every check of the block can run on it; the grader computes what
# it gives itself (stand_in_attention).
ATTN_STAND_IN = '''
class MultiHeadSelfAttention(nn.Module):
    """The grader's stand-in attention (not the lab's answer): one head, sigmoid weights normalised by their sum."""

    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, causal=False, *rest):
        if isinstance(causal, torch.Tensor):  # (a block written for forward(query, key, value, mask=None): x, x, x)
            key, value, mask = (causal, *rest, None)[:3]
            if value is None or not (torch.equal(key, x) and torch.equal(value, x)) or mask is not None:
                raise TypeError("the grader's stand-in attention is self-attention: forward(x, causal=False)")
            causal = False
        n = x.shape[1]
        w = torch.sigmoid(self.W_q(x) @ self.W_k(x).transpose(1, 2))
        if causal:
            w = w * torch.tril(torch.ones(n, n, dtype=x.dtype, device=x.device))
        w = self.dropout(w / w.sum(dim=-1, keepdim=True))
        return self.W_o(w @ self.W_v(x))
'''


# The grader's stand-in feed-forward network, on the same terms (tanh, not the lab's ReLU).
FFN_STAND_IN = '''
class FeedForward(nn.Module):
    """The grader's stand-in feed-forward network (not the lab's answer): tanh between the two layers."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(torch.tanh(self.linear1(x))))
'''

STAND_INS = {"MultiHeadSelfAttention": ATTN_STAND_IN, "FeedForward": FFN_STAND_IN}


def stand_in_ffn(state: dict[str, torch.Tensor], x: torch.Tensor, drop=None):
    """What FFN_STAND_IN computes with the weights `state` (linear1.weight, ...), `drop` where its dropout is."""
    F_ = torch.nn.functional
    with torch.no_grad():
        hid = torch.tanh(F_.linear(x, state["linear1.weight"], state["linear1.bias"]))
        return F_.linear(hid if drop is None else drop(hid), state["linear2.weight"], state["linear2.bias"])


def stand_in_attention(state: dict[str, torch.Tensor], x: torch.Tensor, causal: bool = False, drop=None):
    """What ATTN_STAND_IN computes with the weights `state` (W_q.weight, ...), computed by the grader; `drop` is
    applied to its weights where its nn.Dropout is (the same draws after the same seed)."""
    def lin(r, t):
        return torch.nn.functional.linear(t, state[f"W_{r}.weight"], state[f"W_{r}.bias"])
    n = x.shape[1]
    with torch.no_grad():
        w = torch.sigmoid(lin("q", x) @ lin("k", x).transpose(1, 2))
        if causal:
            w = w * torch.tril(torch.ones(n, n, dtype=x.dtype))
        w = w / w.sum(dim=-1, keepdim=True)
        if drop is not None:
            w = drop(w)
        return lin("o", w @ lin("v", x))


def _part_runs(sub, cls: str) -> bool:
    """Whether the student's own `cls` (MultiHeadSelfAttention, FeedForward), built alone, gives a (b, n, d_model)
    tensor (the attention with and without causal=True), the same one for the same input in eval mode. Its values are judged in its own question; a block around
    a part that runs is judged with that part."""
    x = randn(99, 2, 5, 8)
    try:
        m = _build_part(sub, cls, 8, 2 if cls == "MultiHeadSelfAttention" else 12, 0.0, 1)  # (a part without dropout too)
        # (an attention whose forward takes no causal runs without it: its causal checks say so, not the block's)
        name = causal_keyword(sub, m.owner) if cls == "MultiHeadSelfAttention" else None
        for kw in ({name: False}, {name: True}) if name else ({},):
            y = m(x, **kw)
            if type(y) is not torch.Tensor or tuple(y.shape) != (2, 5, 8):
                return False
            # Another output for the same input in eval mode (F.dropout(x, 0.1, True)): no block around it can be
            # compared with anything, and the block lost 18 of 36 and 9 of 12 in exercise 3 for the part's dropout.
            if differs(m(x, **kw), y):
                return False
    except CheckFailure:
        return False
    return True


def stand_ins(sub) -> tuple[str, ...]:
    """The student's parts the block is built without: MultiHeadSelfAttention and/or FeedForward where the
    submission defines that class and it does not run (_part_runs). (A misspelt class is not replaced: it is the one
    its block builds, charged in the part's question.) Decided once per submission, with the note."""
    key = "stand_ins"
    if key not in sub.memo:
        sub.memo[key] = tuple(cls for cls in STAND_INS if sub.names.get(cls) == "class" and not _part_runs(sub, cls))
        if sub.memo[key] and not unfinished(sub, "TransformerBlock"):
            en = " and ".join(f"`{c}`" for c in sub.memo[key])
            ko = ", ".join(f"`{c}`" for c in sub.memo[key])
            sub.notes.append(Message(
                f"TransformerBlock (and exercise 3) was graded with the grader's stand-in parts in place of your {en}, "
                "which does not run yet, or gives another output at each call in eval mode (see its checks): the "
                "block's own code earns its points, and the part's fault costs points in the part's own question only.",
                f"TransformerBlock(과 실습 과제 3)은 아직 실행되지 않거나 eval 모드에서 호출할 때마다 출력이 달라지는 "
                f"{ko} 대신 채점기의 대체 구성 요소로 채점했습니다 (해당 검사 참고): 블록은 자기 코드로 점수를 받고, 구성 요소의 잘못은 그 문항에서만 감점됩니다."))
    return sub.memo[key]


def block_stand_in(sub) -> dict[str, str] | None:
    """new()'s stand_in for a block (and for its parts built alone), or None where the student's parts run. While
    it is used, the worker runs only the block's and the ablation's checks (Submission.taint: code that kept a
    stand-in class could hand it to the parts' checks)."""
    names = stand_ins(sub)
    if not names:
        return None
    sub.taint({"TransformerBlock", "ablation"})
    return {"name": ",".join(names), "source": "".join(STAND_INS[c] for c in names)}


def causal_stand_in(sub) -> dict[str, str] | None:
    """For the block's causality check: the stand-ins with the grader's (causal) attention among them, where the
    student's own attention runs but leaks the future (part_problem), else None. Such a block was excused without
    any evidence that it is causal itself (it kept its points whether or not it passed causal on); over the causal
    stand-in it shows it, and the attention's leak is charged in the attention's question only."""
    names = stand_ins(sub)
    if "MultiHeadSelfAttention" in names or part_problem(sub, "attn", causal=True) != ("wrong", "not causal"):
        return None
    sub.taint({"TransformerBlock", "ablation"})
    names = tuple(c for c in STAND_INS if c in names or c == "MultiHeadSelfAttention")
    return {"name": ",".join(names), "source": "".join(STAND_INS[c] for c in names)}


def attn_stand_in(sub) -> dict[str, str] | None:
    """block_stand_in where the attention is among the parts stood in for, else None."""
    return block_stand_in(sub) if "MultiHeadSelfAttention" in stand_ins(sub) else None


def ffn_stand_in(sub) -> dict[str, str] | None:
    """block_stand_in where the feed-forward network is among the parts stood in for, else None."""
    return block_stand_in(sub) if "FeedForward" in stand_ins(sub) else None


def build_block_attn(sub, d: int, h: int, dropout: float = 0.0, seed: int = 0):
    """The attention a block built by build_block holds, built alone: the student's, or the grader's stand-in."""
    spec = attn_stand_in(sub)
    return sub.new("MultiHeadSelfAttention", d, h, dropout, seed=seed, stand_in=spec) if spec else \
        build_attn(sub, d, h, dropout, seed=seed)


def build_block_ffn(sub, d: int, d_ff: int, dropout: float = 0.0, seed: int = 0):
    """The feed-forward network a block built by build_block holds, built alone: the student's, or the stand-in."""
    spec = ffn_stand_in(sub)
    return sub.new("FeedForward", d, d_ff, dropout, seed=seed, stand_in=spec) if spec else \
        build_ffn(sub, d, d_ff, dropout, seed=seed)


def attn_text(d, h, dropout=0.0, causal=False):
    return f"MultiHeadSelfAttention({d}, {h}, {dropout})(x{', causal=True' if causal else ''})"


def ffn_text(d, d_ff, dropout=0.0):
    return f"FeedForward({d}, {d_ff}, {dropout})(x)"


def block_text(d, h, d_ff, dropout=0.0, norm_first=False, causal=False):
    return (f"TransformerBlock({d}, {h}, {d_ff}, {dropout}, norm_first={norm_first})"
            f"(x{', causal=True' if causal else ''})")


def with_pytorch_weights(what: str) -> Message:
    """The call, said in both languages, when the module holds PyTorch's weights (the Korean message carried the
    English words "with PyTorch's weights" inside its backticks)."""
    return Message(f"`{what}` with PyTorch's weights", f"PyTorch의 가중치를 넣은 `{what}`")


def causal_keyword(sub, cls: str | None) -> str | None:
    """The name under which the student's `cls.forward` takes the causal flag: "causal" (also where it takes
    **kwargs or its signature cannot be read, then it is passed as before, and for the grader's own stand-ins, cls
    None), the student's own name for it (a parameter whose name holds "causal": `is_causal`, as PyTorch's
    scaled_dot_product_attention calls it), or None where it takes none. A forward written forward(self, x), as
    most tutorials write an encoder's attention and block (learners round rl13), was refused every call,
    causal=False included ("unexpected keyword argument 'causal'"): a right attention got 4 of 20 and its block 12
    of 36. It is called without the keyword where the check asks causal=False (the template's default), and a check
    that needs causal=True says that it takes none (forward_takes_no_causal). Decided once per class."""
    if cls is None:
        return "causal"
    key = f"causal_keyword:{cls}"
    if key not in sub.memo:
        try:
            params = sub.signature(cls, "forward")
        except CheckFailure:
            params = None
        named = [p.get("name") for p in params or () if p.get("kind") in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
        own = [n for n in named if isinstance(n, str) and "causal" in n.lower()]
        if params is None or "causal" in named or any(p.get("kind") == "VAR_KEYWORD" for p in params):
            sub.memo[key] = "causal"
        else:
            sub.memo[key] = own[0] if len(own) == 1 else None
    return sub.memo[key]


def takes_causal(sub, cls: str | None) -> bool:
    """Whether the student's `cls.forward` can be given the causal flag at all (causal_keyword)."""
    return causal_keyword(sub, cls) is not None


def forward_takes_no_causal(cls: str, what: str) -> None:
    """The failure of a check that needs causal=True of a forward without it (takes_causal)."""
    passes = " and passes it on to its attention, self.attn(x, causal)" if cls == "TransformerBlock" else (
        ": with causal=True each token attends only to itself and the tokens before it (the scores above the diagonal "
        "set to -inf before the softmax)")
    passes_ko = "이고 어텐션에 self.attn(x, causal)로 넘깁니다" if cls == "TransformerBlock" else (
        "입니다: causal=True이면 각 토큰은 자신과 앞의 토큰만 봅니다 (softmax 전에 대각선 위의 점수를 -inf로)")
    fail(f"`{cls}.forward` takes no `causal` argument, so `{what}` cannot be asked: the template's forward is "
         f"forward(self, x, causal=False){passes}. The other checks call your forward without it.",
         f"`{cls}.forward`에 `causal` 인자가 없어서 `{what}`을(를) 물어볼 수 없습니다: 템플릿의 forward는 "
         f"forward(self, x, causal=False){passes_ko}. 다른 검사는 이 인자 없이 forward를 부릅니다.")


def call(m, x, what: str, causal: bool | None = None, **kw) -> torch.Tensor:
    kwargs: dict = {}
    if causal is not None:
        name = causal_keyword(m.sub, m.owner)
        if name is None and causal:
            forward_takes_no_causal(m.owner, what)
        # (causal=False is the template's default: what a forward without the flag computes)
        kwargs = {name: causal} if name is not None else {}
    return expect_tensor(m(x, **kwargs, **kw), what)


def check_params(m, want: dict[str, tuple[int, ...]], cls: str) -> None:
    have = {n: tuple(s) for n, s, _ in m.describe().get("params", [])}
    missing = [n for n in want if n not in have]
    wrong = [(n, have[n], want[n]) for n in want if n in have and have[n] != want[n]]
    if missing or wrong:
        listed = ", ".join(f"{n} {s}" for n, s in have.items())
        problems = "; ".join(([f"missing {', '.join(missing)}"] if missing else [])
                             + [f"{n} is {h}, expected {w}" for n, h, w in wrong])
        problems_ko = "; ".join(([f"없음: {', '.join(missing)}"] if missing else [])
                                + [f"{n}: {h}, {w}이어야 함" for n, h, w in wrong])
        # (layers of the template's count named otherwise are given PyTorch's weights in the order made, so that
        # this check alone charges the names: part_layers; a fused query/key/value projection its thirds: fused_qkv)
        for mine, theirs in m.fused.items():
            parts = ", ".join(theirs)
            fail(f"`{cls}` keeps the query, key and value projections in one layer, self.{mine} {have.get(mine + '.weight')}"
                 f", where the template has three, {parts}, each nn.Linear(d_model, d_model) with a bias. The other "
                 f"checks gave self.{mine} the three stacked in that order (q, k, v), so this check alone charges it: "
                 f"make {parts} separate layers. Yours: {listed or 'none'}.",
                 f"`{cls}`이(가) 쿼리, 키, 값 투영을 레이어 하나 self.{mine} {have.get(mine + '.weight')}에 두었지만 "
                 f"템플릿은 세 레이어 {parts}(각각 바이어스가 있는 nn.Linear(d_model, d_model))를 둡니다. 다른 검사는 "
                 f"self.{mine}에 세 가중치를 그 순서(q, k, v)로 쌓아 넣었으므로 이 검사에서만 감점됩니다: {parts}를 "
                 f"따로 만드세요. 현재: {listed or '없음'}.")
        # (the layers the other checks read as the template's: say which is which, so that the rename is plain)
        read = ", ".join("self." + re.sub(r"\.(\d+)$", r"[\1]", mine) + f" as {theirs}"
                         for theirs, mine in m.renamed.items() if "." not in theirs)
        read_en = f" The other checks read your layers so: {read}; rename them to match." if read else ""
        read_ko = f" 다른 검사는 여러분의 레이어를 이렇게 읽었습니다: {read}; 그에 맞게 이름을 바꾸세요." if read else ""
        fail(f"`{cls}` does not have the parameters the template names ({problems}); use the template's names. "
             f"Yours: {listed or 'none'}.{read_en}",
             f"`{cls}`에 템플릿이 정한 파라미터가 없습니다 ({problems_ko}); 템플릿의 이름을 쓰세요. "
             f"현재: {listed or '없음'}.{read_ko}")


# ---------------------------------------------------------------------------------------------- properties

CAUSALITY = ("its causality earns nothing", "코잘(causal) 검사 점수를 받을 수 없습니다")
SHAPE = ("its shape earns nothing", "shape 점수를 받을 수 없습니다")


def differs(a, b, by: float = 1e-6) -> bool:
    """Whether two outputs differ in some finite value by more than `by` times (1 + the largest value of `b`)
    (shapes alike, floating point)."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or not a.is_floating_point():
        return False
    both = torch.isfinite(a) & torch.isfinite(b)
    if not bool(both.any()):
        return False
    scale = 1.0 + float(b.double()[both].abs().max())
    return float((a.double() - b.double())[both].abs().max()) > by * scale


# How much the weights or another token must move an output to count as evidence: a real layer moves it by a good
# part of its size. A change of 1e-6 was enough, and a block of two LayerNorms plus 1e-3 * (attn(x) + ff(x)) earned
# the residual, LayerNorm and dropout points (red team).
EVIDENCE = 1e-2


def expect_working(m, d: int, seed: int, what: str, causal: bool | None = True, mixes: bool = True,
                   earns: tuple[str, str] = CAUSALITY) -> None:
    """Causality holds trivially for a layer that does nothing (returns its input, zeros or a constant) or that
    computes each token's output from that token alone, and so does ignoring dropout in eval mode: those checks
    also need this evidence from fresh calls: the output changes with the input, with the weights and (mixes:
    an attention layer or a block) the outputs of tokens 1.. change with token 0. `earns`: what the check would
    have earned, said in the failure (English, Korean)."""
    x = randn(seed, 2, 5, d)
    # Every call from the same seed: torch.rand of the input's shape, or anything else drawn at random, is then the
    # same for every input and every weight (red team, round 13: a forward returning torch.rand(x.shape) in all three
    # classes passed this evidence, and earned the causality, residual and dropout checks that it guards).
    y = call(m, x, what, causal=causal, seed=seed)
    # Another input drawn on its own: x * 2 + 1 was undone by a block's final LayerNorm (per token, a LayerNorm
    # forgets any scale and shift of its input), and a right block around placeholder parts was told that it
    # "does not depend on its input".
    # Only its first example drawn anew: each example's output must come from its own input (ones times the input's
    # sum changed with the input, its weights and token 0, and earned 13 points of shape, eval-mode dropout and
    # dropout-placement checks: red team, round 14).
    y2 = call(m, torch.cat([randn(seed + 5, 2, 5, d)[:1], x[1:]]), what, causal=causal, seed=seed)
    if not differs(y[:1], y2[:1]) if type(y) is torch.Tensor and type(y2) is torch.Tensor and y.dim() else \
            not differs(y, y2):
        fail(f"`{what}` gave the same output for two different inputs: it does not depend on its input, so "
             f"{earns[0]}.",
             f"서로 다른 두 입력에 대해 `{what}`의 출력이 같습니다: 입력에 의존하지 않으므로 {earns[1]}.")
    if type(y) is torch.Tensor and type(y2) is torch.Tensor and y.shape == y2.shape and y.dim() \
            and y.shape[0] == 2 and differs(y[1:], y2[1:]):
        fail(f"`{what}`: changing only the first example of the batch changed the output of the second: each "
             f"example's output is not computed from its own input, so {earns[0]}.",
             f"`{what}`: 배치의 첫 번째 예만 바꿨는데 두 번째 예의 출력이 바뀌었습니다: 각 예의 출력이 자기 입력으로부터 "
             f"계산되지 않으므로 {earns[1]}.")
    params = {n: t for n, t in m.state()["params"].items() if type(t) is torch.Tensor and t.is_floating_point()}
    y_new = None
    if params:
        g = torch.Generator().manual_seed(seed + 1)
        m.load_state({n: torch.randn(tuple(t.shape), generator=g).to(t.dtype) for n, t in params.items()})
        y_new = call(m, x, what, causal=causal, seed=seed)
    if not differs(y_new, y, EVIDENCE):
        fail(f"`{what}` gives the same output when its weights change: it does not compute with them, so "
             f"{earns[0]}.",
             f"가중치를 바꿔도 `{what}`의 출력이 같습니다: 가중치로 계산하지 않으므로 {earns[1]}.")
    if mixes and y_new.dim() == 3 and y_new.shape[:2] == (2, 5):  # (with the new weights)
        x0 = x.clone()
        x0[:, 0] = randn(seed + 2, 2, d) * 2
        if differs(call(m, x0, what, causal=causal, seed=seed)[:, 1:], y_new[:, 1:], EVIDENCE):
            return
        # Token 0 reaches no other token: does the last one reach the earlier ones? Then the tokens do mix, and
        # with causal=True the mask hides the past instead of the future (tril(..., diagonal=-1) was told that
        # "no attention mixes the tokens").
        xl = x.clone()
        xl[:, -1] = randn(seed + 4, 2, d) * 2
        if differs(call(m, xl, what, causal=causal, seed=seed)[:, :-1], y_new[:, :-1], EVIDENCE):
            if not causal:
                return
            fail(f"`{what}`: changing token 0 changed no later token's output, while changing the last token changed "
                 "the outputs of the tokens before it: the causal mask hides the past instead of the future (each "
                 "token sees itself and the tokens after it). Hide the scores above the diagonal, "
                 f"torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), so that token i sees tokens 0..i; "
                 f"{earns[0]}.",
                 f"`{what}`: 토큰 0을 바꿔도 뒤 토큰의 출력이 바뀌지 않았고, 마지막 토큰을 바꾸자 앞 토큰들의 출력이 "
                 "바뀌었습니다: 코잘 마스크가 미래 대신 과거를 가립니다 (각 토큰이 자기 자신과 뒤 토큰들을 봄). "
                 "대각선 위의 점수를 가리세요, torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1). 그러면 "
                 f"토큰 i는 토큰 0..i를 봅니다. {earns[1]}.")
        fail(f"`{what}`: changing token 0 changed no other token's output (nor did changing the last token), so each "
             f"output is computed from its own token alone: no attention mixes the tokens, and {earns[0]}.",
             f"`{what}`: 토큰 0을 바꿔도(마지막 토큰을 바꿔도) 다른 토큰의 출력이 바뀌지 않았습니다. 각 출력이 자기 "
             f"토큰만으로 계산되므로 토큰을 섞는 어텐션이 없고, {earns[1]}.")


def causal_leak(m, d: int, seed: int, what: str, b: int = 2, T: int = 6, heads: int = 2) -> float:
    """How much the outputs of tokens 0..k-1 change when tokens k.. change (0 for a causal layer).

    Where the two inputs' outputs agree, once more with the second input in another feature order and the weights
    permuted to match (the same function, when the permutation keeps each of the `heads` blocks of features in its
    place; shown on a third input first): bytes the module has never seen. A module that kept the outputs it gave for
    every prefix of its input, keyed by the prefix and its weights, and gave them back for a prefix seen before, was
    causal to a plain comparison with no mask at all (red team, round 17: test_attn_is_causal). A module whose
    permuted twin does not compute the same function (another layout of heads) is judged on the plain comparison."""
    x = randn(seed, b, T, d)
    k = T // 2
    x2 = x.clone()
    x2[:, k:] = randn(seed + 1, b, T - k, d) * 3
    y1 = expect_shape(call(m, x, what, causal=True), (b, T, d), what)
    y2 = call(m, x2, what, causal=True)
    leak = _gap(y1[:, :k], y2[:, :k])
    if leak > 1e-5 or heads < 1 or d % heads:
        return leak
    return max(leak, _permuted_leak(m, d, heads, seed, what, x, x2, y1, k))


def _gap(a: torch.Tensor, b: torch.Tensor) -> float:
    diff = (a - b).abs()
    return float(diff[torch.isfinite(diff)].max()) if bool(torch.isfinite(diff).any()) else 0.0


def feature_perm(d: int, heads: int) -> torch.Tensor:
    """A permutation of d features that keeps each of the `heads` blocks of d // heads features in its place (each
    block rolled by one): attention computed per head is the same function of features and weights so permuted."""
    size = d // heads
    return torch.cat([torch.roll(torch.arange(i * size, (i + 1) * size), 1) for i in range(heads)])


def permuted(state: dict, d: int, perm: torch.Tensor) -> dict:
    """The weights `state` with every axis of size d (the template's features: W_q, W_k, W_v, W_o, the LayerNorms,
    linear1's input and linear2's output) put in the order `perm`; tensors that are not floating point unchanged."""
    out = {}
    for n, t in state.items():
        if type(t) is torch.Tensor and t.is_floating_point():
            for axis, size in enumerate(t.shape):
                if size == d:
                    t = t.index_select(axis, perm)
        out[n] = t
    return out


def _permuted_leak(m, d: int, heads: int, seed: int, what: str, x, x2, y1, k: int) -> float:
    """causal_leak's second comparison: y1 (the output for x) against the output for x2 in a permuted feature order
    with the weights permuted to match; 0.0 where the permuted module is not shown to be the same function."""
    perm = feature_perm(d, heads)
    back = torch.argsort(perm)
    try:
        params = {n: t for n, t in (m.state().get("params") or {}).items()
                  if type(t) is torch.Tensor and t.is_floating_point()}
        if not params:
            return 0.0
        moved = permuted(params, d, perm)
        x3 = randn(seed + 2, x.shape[0], x.shape[1], d)
        e = call(m, x3, what, causal=True)
        m.load_state(moved)
        try:
            e_moved = call(m, x3[..., perm], what, causal=True)
            y2 = call(m, x2[..., perm], what, causal=True)
        finally:
            m.load_state(params)
    except CheckFailure:
        return 0.0
    if type(e_moved) is not torch.Tensor or type(y2) is not torch.Tensor or e_moved.shape != e.shape \
            or y2.shape != y1.shape or _gap(e_moved[..., back], e) > 1e-5:
        return 0.0  # not the same function in the permuted order: the plain comparison stands
    return _gap(y1[:, :k], y2[..., back][:, :k])


def draws_in_eval(m, d: int, seed: int, what: str, T: int = 6) -> bool:
    """Whether `m`, called twice in eval mode on the same input with causal=True, gives two different outputs:
    something random still runs after model.eval() (F.dropout(x, 0.1, True): a dropout whose training flag is
    hard-coded). Such a layer "leaks" in causal_leak because every call draws anew, not because it sees the
    future (learners round s11: it was told to hide the future, or to pass causal=causal on)."""
    x = randn(seed, 2, T, d)
    return differs(call(m, x, what, causal=True), call(m, x, what, causal=True))


def fail_random_in_eval(what: str, where: str = "forward") -> None:
    """The causality cannot be judged: `what` gives two outputs for one input in eval mode (draws_in_eval)."""
    fail(f"`{what}` gives different outputs for the same input in eval mode, so its causality cannot be shown: a "
         f"dropout in its {where} still drops after model.eval(). F.dropout(x, p, True) or F.dropout(x, p) always "
         "drops; pass training=self.training, or use an nn.Dropout module (it follows model.eval()).",
         f"eval 모드에서 같은 입력에 대해 `{what}`의 출력이 매번 달라서 코잘(causal) 여부를 보일 수 없습니다: "
         f"{where}의 dropout이 model.eval() 뒤에도 값을 버립니다. F.dropout(x, p, True)나 F.dropout(x, p)는 항상 "
         "버립니다; training=self.training을 넘기거나 nn.Dropout 모듈을 쓰세요 (model.eval()을 따릅니다).")


def fail_leak(cls: str, leak: float, T: int = 6, sub=None, m=None, d: int = 8, seed: int = 21,
              what: str = "") -> None:
    """The causality check's failure for a leak of `leak` (causal_leak(m, d, seed, what, T=T) gave it): named as a
    dropout that runs in eval mode, a dropped masked_fill, or a known bug of the table (the diagnosis, where the
    hidden checks registered it: heads merged without transposing back mix the tokens), else the general advice."""
    k = T // 2
    if m is not None and draws_in_eval(m, d, seed, what, T):
        fail_random_in_eval(what)
    line = dropped_masked_fill(sub, (cls, "forward")) if sub is not None else None
    if line is not None:  # learners s9: `scores.masked_fill(mask, float("-inf"))` on a line of its own
        fail(f"`{cls}(..., causal=True)` is not causal: changing tokens {k}..{T - 1} changed the outputs of tokens "
             f"0..{k - 1} by up to {leak:.3g}. Line {line} of your forward calls .masked_fill(...) and drops its "
             "result: masked_fill returns a new tensor and leaves the scores as they were. Keep it: "
             "scores = scores.masked_fill(mask, float('-inf')).",
             f"`{cls}(..., causal=True)`는 코잘(causal)이 아닙니다: 토큰 {k}..{T - 1}을 바꾸자 토큰 0..{k - 1}의 출력이 "
             f"최대 {leak:.3g} 바뀌었습니다. forward의 {line}번째 줄이 .masked_fill(...)을 호출하고 결과를 버립니다: "
             "masked_fill은 새 텐서를 반환하고 점수는 그대로 둡니다. 결과를 저장하세요: "
             "scores = scores.masked_fill(mask, float('-inf')).")
    said = Message(f"`{cls}(..., causal=True)` is not causal: changing tokens {k}..{T - 1} changed the outputs of "
                   f"tokens 0..{k - 1} by up to {leak:.3g}.",
                   f"`{cls}(..., causal=True)`는 코잘(causal)이 아닙니다: 토큰 {k}..{T - 1}을 바꾸자 토큰 "
                   f"0..{k - 1}의 출력이 최대 {leak:.3g} 바뀌었습니다.")
    if m is not None and sub is not None:
        x = randn(seed, 2, T, d)
        named = diagnosis("transformer_block", sub, target=m, got=call(m, x, what, causal=True),
                          call=Call((x,), {"causal": True}, "eval", None))
        if named is not None:  # e.g. heads merged without transposing back: the mask is right, the merge mixes
            raise CheckFailure(said + named)
    raise CheckFailure(said + Message("Hide the future before the softmax: scores above the diagonal become -inf.",
                                      "softmax 전에 미래를 가리세요: 대각선 위의 점수를 -inf로."))


def part_problem(sub, which: str, d: int = 8, h: int = 2, d_ff: int = 12,
                 causal: bool = False) -> tuple[str, str] | None:
    """What is wrong with the student's own attention ("attn") or feed-forward ("ffn") on a small input:
    ("raised", message) or ("wrong", what) -- a wrong shape, non-finite values, or (causal=True) a leak;
    None when nothing is."""
    try:
        x = randn(99, 2, 5, d)
        if which == "attn":
            m = build_attn(sub, d, h, seed=1)
            y = call(m, x, "attn", causal=causal)
            if causal and causal_leak(m, d, 98, "attn") > 1e-5:
                return ("wrong", "not causal")
        else:
            y = call(build_ffn(sub, d, d_ff, seed=1), x, "ffn")
    except CheckFailure as e:
        return ("raised", e.message.en)
    if tuple(y.shape) != (2, 5, d) or not bool(torch.isfinite(y).all()):
        return ("wrong", f"shape {tuple(y.shape)}")
    return None


def _cause(text: str):
    """Where an exception of the student's code came from: (line, function), or the not-implemented note."""
    m = re.search(r"line (\d+) in (\w+)", text)
    if m:
        return m.groups()
    m = re.search(r"not implemented yet \((.*?)\)", text)
    return ("todo", m.group(1)) if m else None


def blame_part(sub, err: CheckFailure | None, d: int = 8, h: int = 2, d_ff: int = 12, causal: bool = False,
               parts: tuple[str, ...] = ("attn", "ffn")) -> bool:
    """True when a failure of the student's block follows from a failure of the student's own attention or
    feed-forward module, which is charged in that module's question: the part gives a wrong shape, NaNs or
    (causal) a leak, or it raises at the very line where the block's call raised. A block that is itself not
    implemented is never excused."""
    # (over the grader's stand-in parts, the block's failure is never theirs: stand_ins)
    replaced = stand_ins(sub)
    for which in [w for w, c in (("attn", "MultiHeadSelfAttention"), ("ffn", "FeedForward"))
                  if c not in replaced and w in parts]:
        problem = part_problem(sub, which, d, h, d_ff, causal)
        if problem is None:
            continue
        kind, text = problem
        if kind == "wrong":
            return True
        if err is not None and _cause(text) is not None and _cause(text) == _cause(err.message.en):
            return True
    return False


# ---------------------------------------------------------------------------------------------- nn.Transformer

CONFIG = {"d_model": 16, "nhead": 4, "num_encoder_layers": 2, "num_decoder_layers": 2, "dim_feedforward": 32,
          "batch_first": True}


def build_transformer(sub):
    return sub.new("build_transformer", seed=0)


def check_transformer_config(sub) -> None:
    info = build_transformer(sub).describe("d_model", "nhead", "batch_first")
    if info.get("type") != "Transformer":
        fail(f"`build_transformer()` should return a torch.nn.Transformer; it returned a {info.get('type')}.",
             f"`build_transformer()`는 torch.nn.Transformer를 반환해야 하는데 {info.get('type')}을(를) 반환했습니다.")
    names = [n for n, _ in info.get("modules", [])]
    params = {n: tuple(s) for n, s, _ in info.get("params", [])}
    got = {
        "d_model": (info["attrs"].get("d_model") or {}).get("value"),
        "nhead": (info["attrs"].get("nhead") or {}).get("value"),
        "num_encoder_layers": sum(1 for n in names if re.fullmatch(r"encoder\.layers\.\d+", n)),
        "num_decoder_layers": sum(1 for n in names if re.fullmatch(r"decoder\.layers\.\d+", n)),
        "dim_feedforward": (params.get("encoder.layers.0.linear1.weight") or (None,))[0],
        "batch_first": (info["attrs"].get("batch_first") or {}).get("value"),
    }
    wrong = [(k, got[k], v) for k, v in CONFIG.items() if got[k] != v]
    if wrong:
        fail("`build_transformer()` should build nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, "
             f"num_decoder_layers=2, dim_feedforward=32, batch_first=True); found "
             f"{', '.join(f'{k}={g!r} (expected {v!r})' for k, g, v in wrong)}.",
             "`build_transformer()`는 nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, "
             f"num_decoder_layers=2, dim_feedforward=32, batch_first=True)를 만들어야 합니다. 현재: "
             f"{', '.join(f'{k}={g!r} ({v!r}이어야 함)' for k, g, v in wrong)}.")


def transformer_out(sub, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    what = f"build_transformer()(src {tuple(src.shape)}, tgt {tuple(tgt.shape)})"
    return call(build_transformer(sub), src, what, tgt=tgt)
