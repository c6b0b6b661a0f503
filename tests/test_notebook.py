"""The student notebook: a valid, output-free notebook that scores 0 as shipped, defines every graded name with
the notebook's signature (and nothing more), does not break grading once filled in, and leaks no hidden value."""
from __future__ import annotations

import ast
import json
import re

import nbformat
import pytest

from autograder.source import notebook_cells
from conftest import REFERENCE, ROOT, SKELETON, by_question, failed_messages, grade_sources, notebook

NOTEBOOK = ROOT / "student_template" / "attention.ipynb"
HIDDEN = ROOT / "assignments" / "attention" / "hidden" / "test_hidden.py"

# name -> parameters as (name, default) after `self`; `...` marks "no default"
SIGNATURES = {
    "softmax_naive": [("x", ...)],
    "attention_scores": [("inputs", ...)],
    "context_vectors": [("inputs", ...)],
    "qkv_weights": [("d_in", ...), ("d_out", ...)],
    "query_key_value": [("x", ...), ("W_query", ...), ("W_key", ...), ("W_value", ...)],
    "dot_score": [("query", ...), ("key", ...)],
    "query_scores": [("query", ...), ("keys", ...)],
    "scaled_softmax": [("attn_scores", ...), ("d_k", ...)],
    "weighted_sum": [("attn_weights", ...), ("values", ...)],
    "simple_mask": [("context_length", ...)],
    "apply_simple_mask": [("attn_weights", ...), ("mask_simple", ...)],
    "renormalize": [("masked_simple", ...)],
    "mask_future": [("attn_scores", ...)],
    "apply_dropout": [("x", ...), ("p", ...)],
    "SelfAttention_v1": [("d_in", ...), ("d_out", ...)],
    "SelfAttention_v2": [("d_in", ...), ("d_out", ...), ("qkv_bias", False)],
    "CausalAttention": [("d_in", ...), ("d_out", ...), ("context_length", ...), ("dropout", ...),
                        ("qkv_bias", False)],
    "MultiHeadAttentionWrapper": [("d_in", ...), ("d_out", ...), ("context_length", ...), ("dropout", ...),
                                  ("num_heads", ...), ("qkv_bias", False)],
    "MultiHeadAttention": [("d_in", ...), ("d_out", ...), ("context_length", ...), ("dropout", ...),
                           ("num_heads", ...), ("qkv_bias", False)],
}


def code_cells() -> list[str]:
    """The code cells exactly as the grader sees them (magics replaced by `pass`)."""
    return [c.code for c in notebook_cells(NOTEBOOK.read_text(encoding="utf-8"), NOTEBOOK.name)]


def top_level_defs() -> dict[str, list[ast.FunctionDef | ast.ClassDef]]:
    defs: dict[str, list] = {}
    for src in code_cells():
        for node in ast.parse(src).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defs.setdefault(node.name, []).append(node)
    return defs


def params(fn: ast.FunctionDef) -> list[tuple[str, object]]:
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [...] * (len(pos) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    out = list(zip([p.arg for p in pos], defaults))
    out += [(k.arg, ... if d is None else ast.literal_eval(d)) for k, d in zip(a.kwonlyargs, a.kw_defaults)]
    assert a.vararg is None and a.kwarg is None, f"{fn.name} takes *args/**kwargs"
    return out


def graded_bodies(defs) -> dict[str, ast.FunctionDef]:
    """'softmax_naive', 'SelfAttention_v1.__init__', ... -> the function node."""
    out = {}
    for name in SIGNATURES:
        node = defs[name][0]
        if isinstance(node, ast.FunctionDef):
            out[name] = node
        else:
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{name}.{item.name}"] = item
    return out


def raised_message(fn: ast.FunctionDef) -> str | None:
    """The message of a final `raise NotImplementedError("...")`, else None."""
    last = fn.body[-1]
    if (isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call)
            and isinstance(last.exc.func, ast.Name) and last.exc.func.id == "NotImplementedError"
            and len(last.exc.args) == 1 and isinstance(last.exc.args[0], ast.Constant)):
        return last.exc.args[0].value
    return None


def is_super_init(stmt: ast.stmt) -> bool:
    return ast.unparse(stmt).strip() == "super().__init__()"


# ----------------------------------------------------------------------------------------- the file itself

def test_notebook_is_valid_nbformat_4_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) >= 20
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"cells with outputs or execution counts: {dirty}"


def test_every_code_cell_is_valid_python():
    """Blanks are `...` placeholders: `x = ### your code` would be a syntax error in the student's first run."""
    for i, src in enumerate(code_cells()):
        try:
            ast.parse(src)
        except SyntaxError as e:
            pytest.fail(f"code cell {i} does not parse: {e}\n{src}")


def test_markdown_is_bilingual_and_images_are_the_books_public_figures():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    hangul, latin = re.compile(r"[\uac00-\ud7a3]"), re.compile(r"[A-Za-z]{3,}")
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown":
            text = re.sub(r"<img [^>]*>", "", c.source)
            assert hangul.search(text) and latin.search(text), f"markdown cell {i} is not Korean + English"
    imgs = [u for c in nb.cells if c.cell_type == "markdown" for u in re.findall(r'<img src="([^"]+)"', c.source)]
    assert imgs
    bad = [u for u in imgs if not u.startswith("https://sebastianraschka.com/images/LLMs-from-scratch-images/")]
    assert not bad, bad


def test_top_explains_checking_and_names_and_each_graded_section_ends_with_a_check_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    checks = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
              and re.fullmatch(r"!grade check attention\.ipynb( --question [\w.]+)?", c.source.strip())]
    defined = {name: next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                           and re.search(rf"^(class|def) {name}\b", c.source, re.M)), None) for name in SIGNATURES}
    assert None not in defined.values(), [n for n, i in defined.items() if i is None]
    top = "\n".join(c.source for c in nb.cells[:min(defined.values())] if c.cell_type == "markdown")
    assert "grade check attention.ipynb" in top and checks and checks[0] < min(defined.values())
    for word in ("SelfAttentionV1", "CasualAttention", "context_len"):  # the common renaming mistakes
        assert word in top, word
    for name, where in defined.items():
        assert f"`{name}(" in top, f"{name} and its signature are not listed at the top"
        assert any(i > where for i in checks), f"no `!grade check` cell after {name}"


# ----------------------------------------------------------------------------------------- names and stubs

def test_every_graded_name_is_defined_once_with_the_exact_signature():
    defs = top_level_defs()
    for name, want in SIGNATURES.items():
        assert len(defs.get(name, [])) == 1, f"{name} defined {len(defs.get(name, []))} times"
        node = defs[name][0]
        if name[0].isupper():
            assert isinstance(node, ast.ClassDef), name
            assert [ast.unparse(b) for b in node.bases] == ["nn.Module"], name
            methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
            assert set(methods) == {"__init__", "forward"}, (name, sorted(methods))
            assert params(methods["__init__"]) == [("self", ...)] + want, name
            assert params(methods["forward"]) == [("self", ...), ("x", ...)], name
        else:
            assert isinstance(node, ast.FunctionDef), name
            assert params(node) == want, name


def test_graded_bodies_only_raise_not_implemented_with_the_skeletons_messages():
    """No solution code hides in the notebook: each graded body is (docstring,) (super().__init__(),) raise."""
    skeleton = {}
    for node in ast.parse(SKELETON.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            skeleton[node.name] = [node]
    want = {k: raised_message(f) for k, f in graded_bodies(skeleton).items()}
    got = graded_bodies(top_level_defs())
    assert set(got) == set(want)
    for qual, fn in got.items():
        body = fn.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        if qual.endswith(".__init__"):
            assert body and is_super_init(body[0]), f"{qual} must start with super().__init__()"
            body = body[1:]
        assert len(body) == 1, f"{qual} holds code besides the NotImplementedError stub: {ast.unparse(fn)}"
        assert raised_message(fn) == want[qual], (qual, raised_message(fn))
    # and nothing outside them implements the buffer or another attention module
    for src in code_cells():
        tree = ast.parse(src)
        calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert not any(c.endswith("register_buffer") for c in calls), src
        extra = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name not in SIGNATURES]
        assert not extra, extra


def test_step_blanks_are_graded_functions_whose_results_keep_the_notebooks_names():
    """Every blank of 3.4.1 and 3.5.1 - 3.5.2 is a graded function; the cell under it fills the notebook's own
    variable with it, so the printouts read as before."""
    code = "\n".join(code_cells())
    for line in ("W_query, W_key, W_value = qkv_weights(d_in, d_out)",
                 "query_2, key_2, value_2 = query_key_value(x_2, W_query, W_key, W_value)",
                 "queries, keys, values = query_key_value(inputs, W_query, W_key, W_value)",
                 "attn_score_22 = dot_score(query_2, keys_2)", "attn_scores_2 = query_scores(query_2, keys)",
                 "attn_weights_2 = scaled_softmax(attn_scores_2, d_k)",
                 "context_vec_2 = weighted_sum(attn_weights_2, values)", "mask_simple = simple_mask(context_length)",
                 "masked_simple = apply_simple_mask(attn_weights, mask_simple)",
                 "masked_simple_norm = renormalize(masked_simple)", "masked = mask_future(attn_scores)",
                 "print(apply_dropout(example, 0.5))"):
        assert line in code, line
    # no blank of those sections is left outside a graded function (3.3.1 reuses some names: not checked here)
    for src in code_cells():
        tree = ast.parse(src)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is ...:
                names = [ast.unparse(t) for t in node.targets]
                assert not set(names) & {"query_2", "key_2", "value_2", "attn_score_22", "mask_simple",
                                         "masked_simple", "masked_simple_norm", "masked", "dropout",
                                         "W_query", "W_key", "W_value", "attn_score_22"}, names


def test_notebook_has_no_hidden_seeds():
    tree = ast.parse(HIDDEN.read_text(encoding="utf-8"))
    configs = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "CONFIGS" for t in n.targets))
    seeds = {cfg[0] for rows in configs.values() for cfg in rows}
    assert {2024, 31337, 4242} <= seeds
    text = NOTEBOOK.read_text(encoding="utf-8")
    for s in seeds:  # as a number of its own: not a digit run inside 0.0177 or a decimal such as 0.77
        assert not re.search(rf"(?<![\w.]){s}(?!\w)", text), f"hidden seed {s} appears in the notebook"
    ints = {n.value for src in code_cells() for n in ast.walk(ast.parse(src))
            if isinstance(n, ast.Constant) and type(n.value) is int}
    assert not ints & seeds, ints & seeds


# ----------------------------------------------------------------------------------------- graded for real

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": REFERENCE.read_text(encoding="utf-8")})
    return grade_sources(tmp_path_factory.mktemp("notebook"), {
        "nb/attention.ipynb": NOTEBOOK,
        "nbref/attention.ipynb": json.dumps(nb, ensure_ascii=False),
    })


def test_shipped_notebook_scores_zero_and_every_failure_says_not_implemented(graded):
    r = graded["nb"]
    assert r.error is None, r.error
    assert r.submission == "attention.ipynb"
    assert r.max_score == 100
    assert r.score == 0
    assert all(c.status in ("failed", "skipped") for c in r.checks)
    texts = [c.message.en for c in r.checks if c.status == "failed"]
    assert texts and all("not implemented" in t for t in texts), [t for t in texts if "not implemented" not in t]


def test_notebook_cells_plus_reference_score_full_marks(graded):
    """The demo and check cells run first; they must not break the definitions that follow them."""
    r = graded["nbref"]
    assert r.error is None, r.error
    assert r.score == 100, [(c.name, getattr(c.message, "en", c.message)) for c in r.checks
                            if c.status not in ("passed", "skipped")]


# ----------------------------------------------------------------------------------------- magics as IPython runs them

def test_magics_are_skipped_as_ipython_runs_them_and_the_definitions_beside_them_stay():
    """What students' notebooks hold, read the way IPython runs it. A `%%time` cell runs its body in the notebook
    (a class defined there exists afterwards): the grader dropped the whole cell, so a correct SelfAttention_v2
    timed with `%%time` scored 0. `files = !ls`, `t = %timeit -o f()` and a `!pip install` line continued with a
    backslash made the whole cell a SyntaxError, losing every definition in it. A line starting with `%` inside a
    multi-line string or a continued expression is no magic and was rewritten to `pass`."""
    cls = "class SelfAttention_v2:\n    pass\n"
    kept = {
        "%%time\n" + cls: cls,
        "\n%%capture cap --no-stderr\n!pip install einops\n" + cls: cls,
        "files = !ls\nver = %env PATH\n" + cls: cls,
        "t = %timeit -o torch.ones(3)\n" + cls: cls,
        "!pip install -q torch \\\n    numpy matplotlib\n" + cls: cls,
        "%time out = 1 + 1\n" + cls: "out = 1 + 1",
        "DOC = '''\n%d tokens\n!important\n'''\n" + cls: "%d tokens\n!important",
        "ratio = (10\n         % 3)\n" + cls: "         % 3)",
    }
    for src, wanted in kept.items():
        cells = notebook_cells(json.dumps({"cells": [{"cell_type": "code", "source": src}]}), "nb.ipynb")
        assert len(cells) == 1, src
        ast.parse(cells[0].code)  # no SyntaxError: the cell's definitions load
        assert wanted.rstrip("\n") in cells[0].code, (src, cells[0].code)
        assert len(cells[0].code.splitlines()) >= len(src.rstrip("\n").splitlines()) - 1, "line numbers kept"
    for magic in ("%%timeit", "%%writefile attention.py", "%%bash", "%%html", "%%writefile notes.txt",
                  "%%writefile src/attention.py"):  # not run in the namespace
        nb = {"cells": [{"cell_type": "code", "source": f"{magic}\n{cls}"}, {"cell_type": "code", "source": "x = 1"}]}
        assert [c.code for c in notebook_cells(json.dumps(nb), "nb.ipynb") if c.module is None] == ["x = 1"], magic
    # (a Python module written into the notebook's folder is kept as that module: see the test below)
    nb = {"cells": [{"cell_type": "code", "source": f"%%writefile attention.py\n{cls}"}]}
    assert [(c.module, c.append, c.code) for c in notebook_cells(json.dumps(nb), "nb.ipynb")] == \
        [("attention", False, "\n" + cls.rstrip("\n"))]


def test_classes_a_writefile_cell_writes_to_a_module_that_the_notebook_imports_are_graded(tmp_path):
    """A notebook that writes its classes to a file with `%%writefile my_attention.py` and imports them with `from
    my_attention import *` (as students do to hand in a .py as well) scored 0/100: the grader dropped the cell, and
    the import raised ModuleNotFoundError. The cell is now the module the import loads (appended to with `-a`, the
    version written before the import), a bug in it is charged as in a .py file, and a module that is never
    imported is named in both languages."""
    ref = REFERENCE.read_text()
    at = ref.index("\nclass CausalAttention")
    bug = ref.replace("        scores = scores.masked_fill(self.mask", "        scores.masked_fill(self.mask", 1)  # dropped
    assert bug != ref
    results = grade_sources(tmp_path, {
        "star.ipynb": notebook("%%writefile my_attention.py\n" + ref, "from my_attention import *\nprint(1)"),
        "appended.ipynb": notebook("%%writefile -a parts.py\n" + ref[:at], "x = 1",
                                   "%%writefile parts.py --append\n" + ref[at:],
                                   "import parts as P\nCausalAttention = P.CausalAttention\nfrom parts import *"),
        "rewritten.ipynb": notebook("%%writefile ./m.py\nraise RuntimeError('first draft')",
                                    "%%writefile m.py\n" + ref, "from m import *"),
        "bug_module.ipynb": notebook("%%writefile bug_mod.py\n" + bug, "from bug_mod import *"),
        "bug_file.py": bug,
        "never.ipynb": notebook("%%writefile my_attention.py\n" + ref, "import torch"),
        # `%run` of the file written runs it into the notebook (red team s17's lead): its names are there after
        "run.ipynb": notebook("%%writefile attention_mod.py\n" + ref, "%run attention_mod.py\nprint(CausalAttention)"),
    })
    assert results["run"].score == 100, failed_messages(results["run"])
    for sid in ("star", "appended", "rewritten"):
        r = results[sid]
        assert r.score == 100, (sid, [(c.name, c.message and c.message.en) for c in r.checks if c.status != "passed"])
    assert results["bug_file"].score < 100
    assert by_question(results["bug_module"]) == by_question(results["bug_file"])
    r = results["never"]
    assert r.score == 0
    msgs = failed_messages(r, ("CausalAttention",))
    assert msgs and all("`CausalAttention` is written to the file my_attention.py by a `%%writefile` cell" in m
                        and "from my_attention import CausalAttention" in m for m in msgs), msgs[:1]
    ko = failed_messages(r, ("CausalAttention",), "ko")
    assert ko and all("%%writefile" in k and "import되지 않아" in k for k in ko), ko[:1]


def test_a_torchscript_helper_compiles_in_a_cell_and_in_a_written_module(tmp_path):
    """`@torch.jit.script` compiles from the function's source, which inspect finds through linecache: the worker
    runs cells from memory, so the decorator raised "Can't get source" and the helper was never defined (every check
    of the class that called it failed; variants round 5). In a cell, in a %%writefile module and in a .py alike.
    The device check's simulation sees none of a TorchScript function's ops: it takes the call as one op (its
    result came back untagged, and the right class lost that point), which still mixes devices when forward hands
    it a mask made on the CPU."""
    ref = REFERENCE.read_text()
    helper = ("@torch.jit.script\ndef softmax_keys(scores: torch.Tensor, d_k: int) -> torch.Tensor:\n"
              "    return torch.softmax(scores / d_k ** 0.5, dim=-1)\n\n\n"
              "@torch.jit.script\ndef hide(scores: torch.Tensor, future: torch.Tensor) -> torch.Tensor:\n"
              "    return scores.masked_fill(future, float('-inf'))\n\n\n")
    at = ref.index("class MultiHeadAttention(nn.Module):")
    fill = "scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
    tail = ref[at:].replace("torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
                            "softmax_keys(scores, keys.shape[-1])")
    right = tail.replace(fill, "scores = hide(scores, self.mask.bool()[:num_tokens, :num_tokens])")
    cpu = tail.replace(fill, "scores = hide(scores, torch.triu(torch.ones(num_tokens, num_tokens), 1).bool())")
    assert ref[at:] != tail != right != cpu
    # A TorchScript module held by the class: its forward runs inside TorchScript as well.
    module_class = ("class SoftmaxKeys(nn.Module):\n"
                    "    def forward(self, scores: torch.Tensor, d_k: int) -> torch.Tensor:\n"
                    "        return torch.softmax(scores / d_k ** 0.5, dim=-1)\n\n\n")
    buffer = ("        self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), "
              "diagonal=1))\n")
    held = right.replace(buffer, buffer + "        self.softmax_keys = torch.jit.script(SoftmaxKeys())\n", 1) \
        .replace("softmax_keys(scores,", "self.softmax_keys(scores,")
    assert held.count("self.softmax_keys") == 2
    attribute = held.replace("torch.jit.script(SoftmaxKeys())", "softmax_keys")  # the function kept on the module
    results = grade_sources(tmp_path, {
        "script_module.py": ref[:at] + helper + module_class + held,
        "attribute.py": ref[:at] + helper + attribute,
        "cell.ipynb": notebook(ref[:at], helper, right),
        "module.ipynb": notebook(ref[:at], "%%writefile helpers.py\nimport torch\n\n\n" + helper,
                                 "from helpers import softmax_keys, hide", right),
        "file.py": ref[:at] + helper + right,
        "cpu_mask.py": ref[:at] + helper + cpu,
    })
    for sid in ("cell", "module", "file", "script_module", "attribute"):
        r = results[sid]
        assert r.score == 100, (sid, [(c.name, c.message and c.message.en) for c in r.checks if c.status != "passed"])
    lost = [c for c in results["cpu_mask"].checks if c.status != "passed" and c.points > 0]
    assert [c.name for c in lost] == ["MultiHeadAttention keeps every tensor on the input's device"], \
        [(c.name, c.message and c.message.en) for c in lost]
    assert "cpu and meta" in lost[0].message.en, lost[0].message.en


def test_a_demo_line_that_fails_or_hangs_in_a_written_module_costs_that_line_not_its_classes(tmp_path):
    """A %%writefile module imported by the notebook ran as one piece: a demo line after its classes that raised (a
    wrong demo call), or that ran for long (a training loop: Jupyter runs it, slowly), made the import fail, and a
    right module got 0/100, each check saying the classes were "never imported"; the same code in a cell earned
    100 (red team, round 18). The module now runs one statement at a time as the cells do, its error and its
    skipped line told at the module's own cell and line."""
    from dataclasses import replace
    from autograder import assignment, batch
    from autograder.results import SubmissionResult
    ref = REFERENCE.read_text()
    bad = "\nprint(CausalAttention(3, 2, 6, 0.0)(torch.ones(2, 6, 5)))\n"  # d_in 3, fed 5 features
    slow = "\nimport time\nwhile True:\n    time.sleep(0.05)\n"
    a = assignment.load("attention")
    a = replace(a, limits=replace(a.limits, call_timeout=4.0))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "fails.ipynb").write_text(notebook("%%writefile mine.py\n" + ref + bad, "from mine import *"))
    (subs / "hangs.ipynb").write_text(notebook("%%writefile mine.py\n" + ref + slow, "from mine import *"))
    batch.main(submissions=subs, out=tmp_path / "out", assignment=a, echo=lambda _m: None)
    results = {sid: SubmissionResult.from_dict(json.loads((tmp_path / "out" / f"{sid}.json").read_text())
                                               ["extra_data"]["internal"]) for sid in ("fails", "hangs")}
    line = ("%%writefile mine.py\n" + ref + bad).splitlines().index(bad.strip()) + 1  # (the cell's line)
    for sid in ("fails", "hangs"):
        r = results[sid]
        assert r.score == 100, (sid, failed_messages(r)[:2])
    note = next(n for n in results["fails"].notes if "print(CausalAttention(3, 2, 6, 0.0)" in n.en)
    assert f"fails.ipynb, code cell 1, line {line}" in note.en, note.en
    hang = next(n for n in results["hangs"].notes if "while True:" in n.en)
    assert "code cell 1" in hang.en and "did not finish within 4 s" in hang.en, hang.en


def test_an_import_of_a_module_written_further_down_runs_again_after_the_notebook(tmp_path):
    """Cells run out of order: `from impl import *` above the `%%writefile impl.py` cell (the file written in an
    earlier session, or its cell run first) imports it in Jupyter; top to bottom it raised ModuleNotFoundError and
    a right notebook got 0/100, every class "never imported" (red team, round 18). The import runs again after the
    notebook, told as such; what it brings replaces only what was defined before it (the template's classes), not a
    class the notebook defines again further down."""
    ref = REFERENCE.read_text()
    skeleton = SKELETON.read_text()
    bug = ref.replace("        scores = scores.masked_fill(self.mask", "        scores.masked_fill(self.mask", 1)
    assert bug != ref
    results = grade_sources(tmp_path, {
        "late.ipynb": notebook(skeleton, "from impl import *", "%%writefile impl.py\n" + ref),
        "late_bug.ipynb": notebook("from impl import *", "%%writefile impl.py\n" + ref, bug),
        "bug_file.py": bug,
    })
    r = results["late"]
    assert r.score == 100, failed_messages(r)[:2]
    note = next(n for n in r.notes if "from impl import *" in n.en)
    assert "written by a `%%writefile` cell further down" in note.en and "%%writefile` 셀이" in note.ko, note.en
    assert by_question(results["late_bug"]) == by_question(results["bug_file"])


def test_a_definition_that_needs_a_name_defined_further_down_runs_again_after_the_notebook(tmp_path):
    """Cells run out of order: the student imported `torch.nn as nn` in the last cell and ran it first, so every
    `class X(nn.Module)` above it raised NameError when the file ran top to bottom: 10/100, and each class's checks
    said "`X` is not defined in your submission" (the NameError itself hidden behind five demo-line notes). Such a
    `class`/`def` statement runs again after the whole file, unless a later statement defined that name again; one
    that still cannot be defined is named as written but failing, with its error."""
    ref = REFERENCE.read_text()
    assert ref.count("import torch.nn as nn\n") == 1 and ref.count("class SelfAttention_v1(nn.Module)") == 1
    no_import = ref.replace("import torch.nn as nn\n", "")
    demos = [f"print(undefined_{i})" for i in range(6)]
    wrong_v1 = ref[ref.index("class SelfAttention_v1"):ref.index("class SelfAttention_v2")].replace("dim=-1", "dim=0")
    assert "dim=0" in wrong_v1
    results = grade_sources(tmp_path, {
        "late_import.ipynb": notebook(*demos, no_import, "import torch.nn as nn"),
        # the early, broken version failed; the later one is the student's: the early one must not run again
        "early_broken.ipynb": notebook(wrong_v1, ref, "import torch.nn as nn"),
        "never.ipynb": notebook(*demos, ref.replace("class SelfAttention_v1(nn.Module)",
                                                    "class SelfAttention_v1(AttentionBase)")),
    })
    r = results["late_import"]
    assert r.score == 100, [(c.name, c.message and c.message.en) for c in r.checks if c.status != "passed"]
    notes = [n.en for n in r.notes]
    assert "class SelfAttention_v1(nn.Module)" in notes[0] and "ran again after the rest of your code" in notes[0]
    assert "다시 실행했고" in r.notes[0].ko
    assert results["early_broken"].score == 100
    r = results["never"]
    assert by_question(r)["SelfAttention_v1"] == 0 and by_question(r)["SelfAttention_v2"] == 15
    msgs = failed_messages(r, ("SelfAttention_v1",))
    assert msgs and all("`SelfAttention_v1` is written in your file, but its definition raised NameError: name "
                        "'AttentionBase' is not defined" in m for m in msgs), msgs[:1]
    assert "AttentionBase" in r.notes[0].en


def test_an_answer_in_a_markdown_cell_is_pointed_out_and_the_handed_out_notebooks_get_no_such_note(tmp_path):
    """A student who typed (or pasted) the answer into a markdown cell sees it in Jupyter as code, but the grader
    runs code cells only: the result said only "not implemented yet (the template as handed out)". Now a note
    names the cell and how to make it a code cell; the lab notebooks' own markdown holds no `class`/`def` line."""
    from autograder.source import read
    for nb in sorted((ROOT / "student_template").glob("*.ipynb")):
        assert read(nb).notes == [], nb.name
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "markdown", "metadata": {},
                        "source": "## 답 / answer\n\n```python\n" + REFERENCE.read_text() + "```\n"})
    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    notes = read(path).notes
    assert len(notes) == 1, notes
    assert notes[0].en.startswith('attention.ipynb: the markdown cell under "답 / answer" holds Python code (`def '
                                  'softmax_naive(x: torch.Tensor) -> torch.Tensor:`), but only code cells run')
    assert "마크다운 셀에 파이썬 코드가 있지만" in notes[0].ko and "Ctrl+M Y" in notes[0].ko


def test_a_notebook_saved_with_a_kernel_of_another_language_is_told_so(tmp_path):
    """UX s13: an R notebook (Colab's R runtime, IRkernel) named attention.ipynb was run as Python with nothing but
    "NameError: name 'library' is not defined" to say why; a note now names its kernel and the switch to Python 3,
    in both languages. A Python notebook (any Python kernel) gets no such note."""
    from autograder.source import read
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    for kernel, language, noted in ((("ir", "R", "R"), "R", True),
                                    (("julia-1.10", "Julia 1.10.4", "julia"), "julia", True),
                                    (("python3", "Python 3 (ipykernel)", "python"), "python", False),
                                    (("xpython", "Python 3.11 (XPython)", "python"), "python", False)):
        nb["metadata"]["kernelspec"] = dict(zip(("name", "display_name", "language"), kernel))
        nb["metadata"]["language_info"] = {"name": language}
        path = tmp_path / "attention.ipynb"
        path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
        notes = [n for n in read(path).notes if "Python 3" in n.en]
        assert len(notes) == noted, (kernel, notes)
        if noted:
            assert notes[0].en.startswith(f"attention.ipynb was saved with the {kernel[1]} kernel, whose language "
                                          f"is {kernel[2]}"), notes[0].en
            assert "Change Kernel" in notes[0].en and "런타임 유형 변경" in notes[0].ko and kernel[1] in notes[0].ko


def test_a_slow_training_cell_and_an_input_cell_are_told_in_both_languages(tmp_path):
    """A notebook's training cell that runs for minutes is skipped after call_timeout, and a cell calling input()
    gets EOFError: the classes keep their points. The skip was told in the grader's English inside the Korean note
    too ("Timeout: this line did not finish ... (infinite loop?)"), and input()'s EOFError without why."""
    from dataclasses import replace
    from autograder import assignment, batch
    from autograder.results import SubmissionResult
    train = ("model = nn.Linear(8, 8)\nimport time\nstart = time.time()\n"
             "while time.time() - start < 600:  # training for minutes\n    model(torch.ones(2, 8)).sum().backward()\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "nb.ipynb").write_text(notebook('sid = input("학번: ")', REFERENCE.read_text(), train), encoding="utf-8")
    a = assignment.load("attention")
    a = replace(a, limits=replace(a.limits, call_timeout=4.0))
    batch.main(submissions=subs, out=tmp_path / "out", assignment=a, echo=lambda _m: None)
    r = SubmissionResult.from_dict(json.loads((tmp_path / "out" / "nb.json").read_text())["extra_data"]["internal"])
    assert r.score == 100
    hang = next(n for n in r.notes if "while time.time()" in n.en)
    assert "did not finish within 4 s (a long training loop" in hang.en
    assert "4초 안에 끝나지 않아서" in hang.ko and "did not finish" not in hang.ko
    eof = next(n for n in r.notes if "input(" in n.en)
    assert "The grader types nothing into `input()`" in eof.en and "채점기는 `input()`에" in eof.ko


def test_a_parse_gives_the_same_answer_from_any_depth_of_the_grader():
    """Red team s20: the parser's depth check counts its caller's frames, and parse() caches what it found, so a
    file nested 2,000 deep was read as a tree from a shallow stack and refused as "nested too deeply" from a deep
    one, whichever asked first deciding for every later reader (the checks, the similarity audit, the report)."""
    from autograder import source

    def at(depth: int, fn):
        return fn() if depth == 0 else at(depth - 1, fn)

    for nest in (2000, 200_000):
        code = "x = " + "-" * nest + "1\n"
        outcomes = []
        for depth in (0, 700):
            source._PARSED.clear()
            try:
                at(depth, lambda: source.parse(code))
                outcomes.append("tree")
            except source.Unparsable as e:
                outcomes.append(str(e).split(":")[0])
        assert outcomes[0] == outcomes[1], (nest, outcomes)
        assert outcomes[0] == ("tree" if nest == 2000 else outcomes[0])
    source._PARSED.clear()


def test_code_too_large_to_parse_in_the_grader_is_refused_when_read(tmp_path):
    """The grader parses a submission's code in its own process, outside the submission's memory budget (a notebook
    cell at read, for its magics; a class's methods for a spelling hint; the exam audit; grade report). Python's AST
    of `a` on every line takes about 0.9 GB per MB of code, and up to 20 MB was read: a 2 MB notebook cell took
    read() to 0.8 GB (red team s15), 20 MB would near 18 GB. The code, a .py file or a notebook's code cells
    together, is refused over source.MAX_CODE_CHARS, before anything parses it; outputs (images) do not count."""
    from autograder import source
    from autograder.errors import SubmissionFormatError
    ref = REFERENCE.read_text()
    flood = "a\n" * (source.MAX_CODE_CHARS // 4 + 1)  # two such cells: each under the limit, together over it
    for name, text in (("flood.ipynb", notebook(ref, flood, flood)), ("flood.py", ref + flood + flood)):
        (tmp_path / name).write_text(text)
        with pytest.raises(SubmissionFormatError) as e:
            source.read(tmp_path / name)
        assert "KB of code, over the 512 KB limit" in e.value.message.en, e.value.message.en
        assert "제한(512 KB)을 넘습니다" in e.value.message.ko
    nb = json.loads(notebook(ref))
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "0.1234 " * 300_000}]
    (tmp_path / "outputs.ipynb").write_text(json.dumps(nb))
    assert [c.code for c in source.read(tmp_path / "outputs.ipynb").cells] == [ref]


def test_cells_under_headings_used_twice_keep_labels_of_their_own():
    """A cell is named by its section heading and its rank under it; with a heading used twice ("## Try it" after
    each part) two cells had one label, which is also how the worker and the grader tell cells apart: a demo loop
    that never finished at line 1 of the second was skipped at line 1 of the first as well (its
    `import torch.nn as nn`), so a correct notebook scored 9/44 in grade check, and the note quoted the wrong line
    (red team s15)."""
    md = lambda t: {"cell_type": "markdown", "source": t}  # noqa: E731
    code = lambda t: {"cell_type": "code", "source": t}  # noqa: E731
    nb = {"cells": [md("## Try it"), code("import torch.nn as nn\n"), md("## Try it"), code("while True:\n    pass\n"),
                    md("## Try it"), code("x = 1\n"), code("y = 2\n"), md("## Other"), code("z = 3\n")]}
    labels = [c.label for c in notebook_cells(json.dumps(nb), "nb.ipynb")]
    assert len(set(labels)) == len(labels), labels
    assert labels[0] == 'nb.ipynb, section "Try it", code cell 1' and labels[-1] == 'nb.ipynb, section "Other", code cell 1'
    assert labels[1] == 'nb.ipynb, section "Try it", code cell 1 (code cell 2 of the notebook)', labels


def test_an_nbformat_3_notebook_is_read_as_its_worksheets_cells(tmp_path):
    """A notebook saved by IPython 1 to 3 (nbformat 3: cells under `worksheets`, a code cell's source under
    `input`, headings as cells of their own), as some course repositories still hold, was refused as "not a
    Jupyter notebook (no cells)": a correct one scored 0. Its cells are now read as nbformat 4 has them."""
    ref = REFERENCE.read_text()
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 2, "metadata": {}, "source": ["Self-attention"]},
        {"cell_type": "code", "collapsed": False, "input": ["import torch\n", "print(torch.ones(2))"],
         "language": "python", "metadata": {}, "outputs": [], "prompt_number": 1},
        {"cell_type": "markdown", "metadata": {}, "source": ["The classes:"]},
        {"cell_type": "code", "collapsed": False, "input": ref, "language": "python", "metadata": {},
         "outputs": [], "prompt_number": 2}]}]}
    cells = notebook_cells(json.dumps(v3), "old.ipynb")
    assert [c.label for c in cells] == ['old.ipynb, section "Self-attention", code cell 1',
                                        'old.ipynb, section "Self-attention", code cell 2']
    assert cells[0].code == "import torch\nprint(torch.ones(2))" and cells[1].code == ref
    r = grade_sources(tmp_path, {"old.ipynb": json.dumps(v3)})["old"]
    assert r.error is None and r.score == 100, (r.error, r.score)


def test_a_notebook_of_nbformat_3_is_read_as_jupyter_converts_it(tmp_path):
    """Red team s17: a notebook saved by IPython 2 (nbformat 3: worksheets, a code cell's `input`, heading cells) was
    "JSON but not a Jupyter notebook (no cells)" and got 0 with the reference in it. It is read as nbformat converts
    it to version 4: its code cells in order, its headings naming the cells under them."""
    from nbformat import v3
    nb = v3.new_notebook(worksheets=[v3.new_worksheet(cells=[
        v3.new_heading_cell("Attention, saved by IPython 2", level=2),
        v3.new_code_cell(input=REFERENCE.read_text(encoding="utf-8"))])])
    text = v3.writes_json(nb)
    assert json.loads(text)["nbformat"] == 3 and "cells" not in json.loads(text)
    cells = notebook_cells(text, "attention.ipynb")
    assert [c.label for c in cells] == ['attention.ipynb, section "Attention, saved by IPython 2", code cell 1']
    assert cells[0].code == REFERENCE.read_text(encoding="utf-8")
    r = grade_sources(tmp_path, {"old/attention.ipynb": text})["old"]
    assert r.score == 100 and r.error is None, failed_messages(r)


def test_a_causal_multihead_attention_whose_out_proj_maps_back_to_d_in_keeps_its_causality_point(tmp_path):
    """Seen in a learner's chapter-3 notebook: MultiHeadAttention's out_proj written as nn.Linear(d_out, d_in) (the
    output back at the input's width). Its mask was right, yet "MultiHeadAttention: future tokens do not change
    earlier outputs" failed with "is not causal": the check computes the expected rows from the same weights with
    the input's features permuted, and it permuted every weight with a side of size d_in -- out_proj.weight, (d_in,
    d_out), too, whose rows are outputs, not inputs. The wrong width costs points where it shows (the output's
    shape), once; an nn.Linear weight's rows are never permuted with the input."""
    ref = REFERENCE.read_text()
    wide = ref.replace("        self.out_proj = nn.Linear(d_out, d_out)\n",
                       "        self.out_proj = nn.Linear(d_out, d_in)  # back to the embedding size\n", 1)
    assert wide != ref
    demo = ("torch.manual_seed(123)\nbatch = torch.stack((torch.rand(6, 3), torch.rand(6, 3)))\n"
            "mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)\nprint(mha(batch).shape)")
    r = grade_sources(tmp_path, {"wide.ipynb": notebook("import torch\nimport torch.nn as nn", wide, demo)})["wide"]
    checks = {c.name: c for c in r.checks if c.question == "MultiHeadAttention"}
    causal = next(c for n, c in checks.items() if "future tokens do not change earlier outputs" in n)
    assert causal.status == "passed", causal.message and causal.message.en
    assert not any("is not causal" in m for m in failed_messages(r, ("MultiHeadAttention",)))
    shape = next(c for n, c in checks.items() if "keeps d_out features" in n)
    assert shape.status == "failed" and "expected (3, 7, 8)" in shape.message.en, shape.message
    assert by_question(r)["CausalAttention"] == 25 and by_question(r)["MultiHeadAttention"] < 20


def test_a_class_that_reads_the_notebooks_own_variables_is_told_so_once_it_loses_points(tmp_path):
    """Learners' chapter-3 notebooks: `queries = inputs @ self.W_query` in forward (the notebook's `inputs`, not
    the argument x), scores scaled by the notebook's `d_out` or `d_k`, `masked_fill(mask.bool(), ...)` of the
    notebook's own 6x6 `mask`. The demo cells printed the book's values, and the grader only said that outputs
    differ, or that the mask should be sliced to the tokens (it was sliced: it was the wrong mask). Such a class
    is now told which of the notebook's variables it reads, in both languages; one that reads a variable and
    still earns full marks, and the reference, are told nothing."""
    ref = REFERENCE.read_text()
    globals_cell = ("inputs = torch.rand(6, 3)\nd_in, d_out = 3, 2\nd_k = d_out\n"
                    "mask = torch.triu(torch.ones(6, 6), diagonal=1)\nverbose = False\nDEBUG = False")
    reads = ref.replace("        keys = x @ self.W_key", "        keys = inputs @ self.W_key", 1)
    reads = reads.replace("        queries = x @ self.W_query", "        queries = inputs @ self.W_query", 1)
    reads = reads.replace("        values = x @ self.W_value", "        values = inputs @ self.W_value", 1)
    at = reads.index("class CausalAttention")
    reads = reads[:at] + reads[at:].replace("self.mask.bool()[:num_tokens, :num_tokens]", "mask.bool()", 1)
    at = reads.index("class SelfAttention_v2")  # reads a variable, yet works: full marks, no note
    reads = reads[:at] + reads[at:].replace("        return weights @ values", "        if verbose or DEBUG:\n"
                                            "            print(weights)\n        return weights @ values", 1)
    assert reads.count("inputs @ self.W_") == 3 and "mask.bool(), -torch.inf" in reads and "if verbose" in reads
    results = grade_sources(tmp_path, {
        "reads.ipynb": notebook("import torch\nimport torch.nn as nn", globals_cell, reads),
        "ref.ipynb": notebook("import torch\nimport torch.nn as nn", globals_cell, ref),
    })
    r = results["reads"]
    q = by_question(r)
    assert q["SelfAttention_v1"] < 15 and q["CausalAttention"] < 25 and q["SelfAttention_v2"] == 15, q
    notes = [n for n in r.notes if "sets at the top level" in n.en]
    assert [n.en.split(" reads ")[0] for n in notes] == ["`SelfAttention_v1.forward`", "`CausalAttention.forward`"]
    assert "reads `inputs`, a variable that your notebook sets at the top level" in notes[0].en
    assert "the grader builds `SelfAttention_v1` with other sizes" in notes[0].en
    assert "reads `mask`, a variable" in notes[1].en
    assert all("최상위에서 정한 변수" in n.ko for n in notes) and "`inputs`" in notes[0].ko
    assert not any("verbose" in n.en or "DEBUG" in n.en for n in r.notes)
    assert results["ref"].score == 100 and not any("top level" in n.en for n in results["ref"].notes)


def test_a_dropped_masked_fill_is_named_by_its_line_where_extra_weights_hide_it_from_the_bug_table(tmp_path):
    """A learner's causal-attention notebook: `attention_scores.masked_fill(mask, -torch.inf)` on a line of its own
    (its result dropped) in a CausalAttention that also made an unused `self.W_out = nn.Linear(d_out, d_out)`. The
    extra weights keep the bug table from matching (it runs the reference's bug versions with the student's
    weights), so the causality check gave only its general list of causes. The line is read from the source and
    named, in both languages, as the transformer-block lab does."""
    ref = REFERENCE.read_text()
    at = ref.index("class CausalAttention")
    part = ref[at:].replace("scores = scores.masked_fill(", "scores.masked_fill(", 1).replace(
        "        self.dropout = nn.Dropout(dropout)\n",
        "        self.W_out = nn.Linear(d_out, d_out)  # for later\n        self.dropout = nn.Dropout(dropout)\n", 1)
    bug = ref[:at] + part
    assert bug.count("        scores.masked_fill(") == 1 and "self.W_out" in bug
    r = grade_sources(tmp_path, {"drop.ipynb": notebook("import torch", bug)})["drop"]
    causal = next(c for c in r.checks if c.question == "CausalAttention"
                  and "future tokens do not change earlier outputs" in c.name)
    assert causal.status == "failed"
    line = bug[at:].splitlines().index(next(ln for ln in bug[at:].splitlines() if ln.startswith("        scores.masked_fill(")))
    line += bug[:at].count("\n") + 1
    assert f"Line {line} of your forward calls .masked_fill(...) and drops its result" in causal.message.en, \
        causal.message.en
    assert f"forward의 {line}번째 줄이 .masked_fill(...)을 호출하고 결과를 버립니다" in causal.message.ko


def test_a_notebooks_top_level_runs_once_while_a_block_is_graded_over_stand_in_parts(tmp_path):
    """Learners' chapter-4 notebooks (graded as transformer_block) took 11-12 s: the block's checks, run over the
    grader's stand-in parts where the student's FeedForward fails, taint the worker (only the block's and exercise
    3's checks may run in it), and the block's checks were interleaved with the other questions', so one grading
    started 7 workers and ran the notebook's whole top level -- imports, plots, demos, a training loop -- 7 times.
    The block's and the ablation's checks now run last (the results keep their order), as the attention lab's
    wrapper does: the other questions' checks all see the first worker. (The notebook draws a token when it is
    run, and its FeedForward names it when it fails: one token, one run.)"""
    ref = (ROOT / "reference" / "transformer_block.py").read_text(encoding="utf-8")
    bad = ref.replace("        return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                      "        raise RuntimeError(f'run {RUN}')", 1)
    assert bad != ref
    run = "import os\nRUN = os.urandom(8).hex()  # a training run, a plot, a download..."
    r = grade_sources(tmp_path, {"nb.ipynb": notebook(run, bad)}, name="transformer_block")["nb"]
    said = [m for m in failed_messages(r, ("FeedForward",)) if "raised RuntimeError: run " in m]
    runs = {m.split("raised RuntimeError: run ")[1][:16] for m in said}
    assert len(said) >= 4 and len(runs) == 1, said
    q = by_question(r)
    assert q["FeedForward"] < 12 and (q["MultiHeadSelfAttention"], q["TransformerBlock"], q["ablation"]) == (20, 36, 12), q


def test_the_note_on_a_notebooks_variables_stays_short_for_a_class_of_many_methods(tmp_path):
    """The note on methods that read the notebook's variables (above) is one per method: a class of 200 methods,
    each reading one, gave 200 notes at the top of the feedback (and of every result file), and a variable's name
    is quoted whole. At most MAX_READ_NOTES are given, forward's and __init__'s first; long names are cut."""
    from autograder.plugin import MAX_READ_NOTES
    ref = REFERENCE.read_text()
    long = "s" * 5000  # and a name of 5000 characters is shortened
    many = "".join(f"    def helper_{i}(self):\n        return {long if i == 0 else f'scale_{i % 7}'}\n" for i in range(200))
    at = ref.index("class SelfAttention_v1")
    body = ref[:at] + ref[at:].replace("        return weights @ values  # (T, d_out)\n",
                                       "        return weights @ values * 0 + 1  # (T, d_out)\n" + many, 1)
    scales = "\n".join(f"scale_{i} = {i}" for i in range(7)) + f"\n{long} = 0"
    r = grade_sources(tmp_path, {"many.ipynb": notebook("import torch", scales, body)})["many"]
    assert by_question(r)["SelfAttention_v1"] < 15
    notes = [n for n in r.notes if "sets at the top level" in n.en]
    assert 1 <= len(notes) <= MAX_READ_NOTES == 3, len(notes)
    assert all(len(n.en) < 1000 and len(n.ko) < 1000 for n in notes) and "`sss" in notes[0].en


def test_torch_settings_a_notebook_leaves_changed_do_not_cost_its_classes(tmp_path):
    """A notebook's demo cells change torch's process-wide settings and leave them so: `torch.set_grad_enabled(False)`
    after training, a `torch.no_grad()` entered by hand, `torch.set_default_dtype(torch.float64)` for precise
    printouts (or the older set_default_tensor_type). The checks call the classes afterwards on the grader's float32
    inputs: grad left off cost each question's gradient check (91/100), float64 weights could not multiply float32
    inputs (8/100, "expected m1 and m2 to have the same dtype" blamed on the student's forward)."""
    ref = REFERENCE.read_text()
    demo = ("torch.manual_seed(123)\nmha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)\n"
            "opt = torch.optim.Adam(mha.parameters(), lr=1e-3)\nloss = mha(torch.rand(2, 6, 3)).pow(2).mean()\n"
            "loss.backward()\nopt.step()\nmha.eval()\n")
    results = grade_sources(tmp_path, {
        "grad_off.ipynb": notebook("import torch\nimport torch.nn as nn", ref, demo + "torch.set_grad_enabled(False)"),
        "no_grad_by_hand.ipynb": notebook(ref, demo, "ng = torch.no_grad()\nng.__enter__()\nprint(mha(torch.rand(1, 6, 3)))"),
        "float64.ipynb": notebook("import torch\ntorch.set_default_dtype(torch.float64)", ref, demo),
        "double_tensor.py": ref.replace("import torch.nn as nn\n",
                                        "import torch.nn as nn\ntorch.set_default_tensor_type(torch.DoubleTensor)\n"
                                        "torch.set_float32_matmul_precision('medium')\n", 1) + demo,
    })
    for name, r in results.items():
        assert r.error is None, (name, r.error)
        assert r.score == 100, (name, failed_messages(r))
        assert not any("dtype" in n.en or "grad" in n.en for n in r.notes), (name, [n.en for n in r.notes])


def test_a_notebook_downloaded_as_a_script_runs_its_magics_cells_as_the_notebook_does(tmp_path):
    """Jupyter's File > Download as > Python (`jupyter nbconvert --to script`) writes a notebook's magics as
    `get_ipython()` calls, which `python file.py` lacks: each was a NameError, and the classes of a `%%time` cell,
    written as `get_ipython().run_cell_magic('time', '', '...')`, never ran: a right notebook got 0/100. They are read
    as the notebook's own magics are; lines after the cell are still named by the file's line numbers."""
    ref = REFERENCE.read_text().replace("from __future__ import annotations\n", "")
    script = ("#!/usr/bin/env python\n# coding: utf-8\n\n# In[1]:\n\n\n"
              "get_ipython().system('nvidia-smi')\nfiles = get_ipython().getoutput('ls')\nimport torch\n\n\n# In[2]:\n\n\n"
              f"get_ipython().run_cell_magic('time', '', {ref!r})\n\n\n# In[3]:\n\n\n"
              "get_ipython().run_line_magic('timeit', 'SelfAttention_v1(3, 2)(torch.rand(6, 3))')\n"
              "get_ipython().run_line_magic('time', 'out = SelfAttention_v2(3, 2)(torch.rand(6, 3))')\n"
              "print(out.shape)\n1 / 0\n")
    r = grade_sources(tmp_path, {"exported.py": script})["exported"]
    assert r.error is None, r.error
    assert r.score == 100, failed_messages(r)
    assert not any("get_ipython" in n.en for n in r.notes), [n.en for n in r.notes]
    line = script.splitlines().index("1 / 0") + 1
    assert [n.en for n in r.notes if "ZeroDivisionError" in n.en][0].startswith(
        f"While loading your code (exported.py (from line 16), line {line}: `1 / 0`)")


def test_a_definition_the_notebook_ran_after_a_later_cells_is_pointed_out():
    """The right class in one cell, an earlier buggy try of it further down, and the saved execution counts say the
    right one ran last: the student's kernel held it, the grader (top to bottom, as Restart & Run All) grades the
    try. The points it loses are the grader's to lose, but it lost them with no word on why."""
    right = "class CausalAttention:\n    scale = True\n"
    try_ = "class CausalAttention:\n    scale = False\n"

    def nb(*cells):
        return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                           "cells": [{"cell_type": "code", "metadata": {}, "execution_count": n, "outputs": [],
                                      "source": c} for c, n in cells]})
    notes: list = []
    notebook_cells(nb(("import torch", 1), (right, 9), (try_, 4), ("print(CausalAttention)", 10)), "nb.ipynb", notes)
    [note] = notes
    assert note.en.startswith("nb.ipynb: `CausalAttention` is defined in code cell 2 and again further down, in "
                              "code cell 3.") and "execution count [9], after [4]" in note.en
    assert "실행 번호 [9], [4] 다음" in note.ko
    for fine in (nb((right, 9), (try_, 11)),  # run in order: what the student saw is what is graded
                 nb((right, 9), (right, 4)),  # the same class twice
                 nb((right, None), (try_, None))):  # no counts saved
        notes = []
        notebook_cells(fine, "nb.ipynb", notes)
        assert notes == []
    notes = []
    notebook_cells(NOTEBOOK.read_text(encoding="utf-8"), NOTEBOOK.name, notes)
    assert notes == []


def test_a_notebook_downloaded_from_colab_as_py_runs_its_time_cells_classes(tmp_path):
    """Colab's File > Download > .py comments each magic out after "# Commented out IPython magic to ensure Python
    compatibility.", a cell magic with its whole cell: the classes of a `%%time` cell were comments in the script,
    and a right notebook got 0/100. Their lines run in place (the file's line numbers stay); a `%%bash` cell and
    comments that are not Python stay comments."""
    from autograder.source import exported_cells
    mark = "# Commented out IPython magic to ensure Python compatibility."
    ref = REFERENCE.read_text().replace("from __future__ import annotations\n", "")
    cut = ref.index("class SelfAttention_v1")
    body = "\n".join("# " + ln for ln in ("%%time\n" + ref[cut:].rstrip("\n")).splitlines())
    script = (f'# -*- coding: utf-8 -*-\n"""attention.ipynb\n\nAutomatically generated by Colab.\n"""\n\n{mark}\n'
              f"# !nvidia-smi\n\n{ref[:cut]}\n{mark}\n{body}\n\n# 데모\nprint(SelfAttention_v1(3, 2))\n1 / 0\n")
    r = grade_sources(tmp_path, {"colab.py": script})["colab"]
    assert r.error is None, r.error
    assert r.score == 100, failed_messages(r)
    line = script.splitlines().index("1 / 0") + 1
    assert [n.en for n in r.notes if "ZeroDivisionError" in n.en][0].startswith(
        f"While loading your code (colab.py, line {line}: `1 / 0`)")
    for kept in (f"{mark}\n# %%bash\n# ls -l\n", f"{mark}\n# %%time\n# the loop took 3 s, too slow for a class\n"):
        assert [c.code for c in exported_cells(kept, "x.py")] == [kept]


def test_a_colab_py_with_shell_lines_is_read_as_the_notebook_ran_it_and_told_so(tmp_path):
    """Colab's Download > .py keeps `!pip install ...` lines as they were: no Python parses the file, and a right
    notebook got 0/100 ("Syntax error ... Nothing in it could run"). Skipped as the notebook skipped them, with a
    note (both languages) that `python` cannot run the file; a file with a syntax error of its own is still one."""
    from autograder.source import read
    ref = REFERENCE.read_text().replace("from __future__ import annotations\n", "")
    script = ('# -*- coding: utf-8 -*-\n"""attention.ipynb\n\nAutomatically generated by Colab.\n"""\n\n'
              f"!pip install tiktoken\n\n{ref}\n\n!nvidia-smi\nprint(SelfAttention_v1(3, 2))\n1 / 0\n")
    r = grade_sources(tmp_path, {"colab.py": script})["colab"]
    assert r.error is None, r.error
    assert r.score == 100, failed_messages(r)
    [note] = [n for n in r.notes if "notebook lines" in n.en]
    assert "(`!pip install tiktoken`)" in note.en and "노트북 줄이 있어 (`!pip install tiktoken`)" in note.ko
    line = script.splitlines().index("1 / 0") + 1
    assert any(n.en.startswith(f"While loading your code (colab.py, line {line}: `1 / 0`)") for n in r.notes)
    broken = tmp_path / "broken.py"
    broken.write_text("!pip install tiktoken\nclass A(:\n    pass\n", encoding="utf-8")
    assert [c.code for c in read(broken).cells] == [broken.read_text()]


def test_a_notebooks_display_and_get_ipython_lines_load_without_a_note(tmp_path):
    """Red team, round 24: Jupyter and Colab put `display` and `get_ipython` in builtins; a right notebook's
    `display(df)` or `get_ipython().run_line_magic('matplotlib', 'inline')` cell failed at load with "NameError:
    name 'display' is not defined", a note that blamed the student. Both run (the magic is skipped, as the grader
    skips magics); a `.py` file still has neither, as `python file.py` has not, and a name of the notebook's own
    shadows them."""
    nb = notebook("import torch\ndisplay(torch.ones(2))\nSHOWN = repr(get_ipython())",
                  "get_ipython().run_line_magic('matplotlib', 'inline')\nget_ipython().system('nvidia-smi')",
                  REFERENCE.read_text())
    py = REFERENCE.read_text() + "\ndisplay(torch.ones(2))\n"
    r = grade_sources(tmp_path, {"nb.ipynb": nb, "py.py": py})
    assert r["nb"].score == 100 and r["py"].score == 100
    assert not [n.en for n in r["nb"].notes if "While loading" in n.en], [n.en for n in r["nb"].notes]
    assert [n.en for n in r["py"].notes if "name 'display' is not defined" in n.en], [n.en for n in r["py"].notes]
