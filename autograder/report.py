"""`grade report`: the class at a glance, from a folder of `grade batch` results: one HTML page, report.json, and
what each student sees.

Read-only on the results: it computes figures (`compute`), draws two plots (matplotlib, embedded as SVG data so
the page opens from disk), and writes self-contained HTML. Every piece of text that came from a student (ids,
messages, printed output, code) is HTML-escaped, and each page carries a Content-Security-Policy that allows no
script and no network at all.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from . import safetext, similarity
from .assignment import PROJECT_ROOT, Assignment
from .errors import AssignmentError, UsageError
from .messages import Message
from .results import SubmissionResult, read_result, read_text_file, write_atomic
from .safetext import clean_data

# A number as it appears in a message: 24, -0.4519, 1e-05, nan. Digits inside names (SelfAttention_v2) are not.
_NUMBER = re.compile(r"(?<![\w])[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf)(?![\w])")
GROUPS_SHOWN = 6  # failure groups listed per check on the page; the rest are summed in one row
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"  # no script, no fetch, no remote font


@dataclass
class Loaded:
    """One result file: its Gradescope JSON (what the student sees) and the typed record inside it."""
    page: str  # safe file stem for students/<page>.html
    gs: dict[str, Any]
    r: SubmissionResult

    def extra(self, key: str) -> Any:
        """A field the batch may carry in extra_data (late, variant, lang), at the top or in the record: an exam's
        variant is in the record's `exam` (the "Exam variants" section was empty on every real exam)."""
        ed = self.gs.get("extra_data") or {}
        internal = ed.get("internal") if isinstance(ed.get("internal"), dict) else {}
        for where in (ed, internal, internal.get("origin") or {}, internal.get("exam") or {}):
            if isinstance(where, dict) and where.get(key) is not None:
                return where[key]
        return None


@dataclass
class Report:
    out: Path
    data: dict[str, Any]
    pages: list[Path] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- reading

def load(results: Path) -> tuple[list[Loaded], list[dict[str, str]]]:
    """Every <id>.json result in `results` (not recursive), and the files that are not readable results."""
    from .discover import student_id
    loaded: list[Loaded] = []
    bad: list[dict[str, str]] = []
    used: set[str] = set()
    for p in sorted(results.glob("*.json")):
        try:
            # Cleaned again: a result from an older version (or edited by hand) may hold bidi controls or escapes.
            gs = clean_data(json.loads(read_text_file(p)))
            r = SubmissionResult.from_dict(gs["extra_data"]["internal"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            bad.append({"file": p.name, "reason": f"not a grade batch result ({type(e).__name__})"})
            continue
        page = student_id(r.student or p.stem)
        while page in used:
            page += "_"
        used.add(page)
        loaded.append(Loaded(page, gs, r))
    return loaded, bad


def normalise_message(text: str) -> str:
    """The message with every number replaced by #: messages that differ only in numbers are one group."""
    return _NUMBER.sub("#", " ".join(text.split()))


def _late_minutes(v: Any) -> float | None:
    if isinstance(v, dict):
        v = v.get("minutes", v.get("late_minutes"))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _variant_key(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v, key=str))
    return str(v)


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    """Correlation, or None where it is undefined (fewer than 3 students, or no spread on either side)."""
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return round(sxy / math.sqrt(sxx * syy), 4)


# ---------------------------------------------------------------------------------------------- figures

def compute(loaded: list[Loaded], bad: list[dict[str, str]], titles: dict[str, str], lang: str = "en") \
        -> dict[str, Any]:
    """All the report's figures as plain data (what report.json holds, minus similarity)."""
    graded = [x for x in loaded if x.r.error is None]
    qids: list[str] = []
    for x in loaded:
        for q in x.r.questions or [c.question for c in x.r.checks]:
            if q not in qids:
                qids.append(q)

    # Checks, in the order the assignment runs them; a check worth no points (e.g. skipped without a GPU) is left out.
    order: dict[str, dict[str, Any]] = {}
    for x in graded:
        for c in x.r.checks:
            if c.points > 0 and c.nodeid not in order:
                order[c.nodeid] = {"id": c.nodeid, "name": c.title(lang), "question": c.question, "points": c.points,
                                   "visibility": c.visibility, "public": c.public}
    checks, groups = [], []
    for cid, info in order.items():
        fracs, rest, passed = [], [], 0
        failures: dict[str, dict[str, Any]] = {}
        for x in graded:
            c = next((c for c in x.r.checks if c.nodeid == cid), None)
            if c is None or c.points <= 0:
                continue
            fracs.append(c.score / c.points)
            rest.append(x.r.score - c.score)
            if c.status == "passed":
                passed += 1
                continue
            text = c.message.text(lang) if c.message else (c.staff.strip().splitlines() or ["(no message)"])[-1]
            key = normalise_message(text)
            g = failures.setdefault(key, {"check": cid, "question": info["question"], "name": info["name"],
                                          "pattern": key, "example": text, "count": 0, "students": []})
            g["count"] += 1
            g["students"].append(x.r.student)
        n = len(fracs)
        checks.append({**info, "n": n, "pass_rate": round(passed / n, 4) if n else None,
                       "difficulty": round(statistics.fmean(fracs), 4) if n else None,
                       "discrimination": _pearson(fracs, rest), "failed": n - passed})
        groups.extend(sorted(failures.values(), key=lambda g: (-g["count"], g["pattern"])))

    questions = []
    for q in qids:
        pairs = [x.r.by_question().get(q, (0.0, 0.0)) for x in graded]
        top = max((m for _s, m in pairs), default=0.0)
        scores = [s for s, _m in pairs]
        questions.append({"id": q, "title": titles.get(q, q), "n": len(scores), "max": top,
                          "mean": round(statistics.fmean(scores), 4) if scores else None,
                          "full": sum(1 for s, m in pairs if m > 0 and s >= m),
                          "zero": sum(1 for s, _m in pairs if s <= 0)})

    totals = [x.r.score for x in graded]
    max_score = max((x.r.max_score for x in graded), default=0.0)
    students = []
    for x in sorted(loaded, key=lambda x: x.r.student):
        students.append({"id": x.r.student, "page": f"students/{x.page}.html", "score": x.r.score,
                         "max_score": x.r.max_score, "graded": x.r.error is None,
                         "questions": {q: s for q, (s, _m) in x.r.by_question().items()},
                         "notes": [n.text(lang) for n in x.r.notes],
                         "late_minutes": _late_minutes(x.extra("late")),
                         "variant": None if x.extra("variant") is None else _variant_key(x.extra("variant"))})
    ungraded = [{"id": x.r.student, "page": f"students/{x.page}.html", "reason": x.r.error.text(lang),
                 "staff": x.r.staff} for x in sorted(loaded, key=lambda x: x.r.student) if x.r.error is not None]
    late = sorted(({"id": s["id"], "minutes": s["late_minutes"], "page": s["page"]} for s in students
                   if s["late_minutes"] is not None and s["late_minutes"] > 0), key=lambda s: -s["minutes"])

    by_variant: dict[str, list[Loaded]] = defaultdict(list)
    for x in graded:
        v = x.extra("variant")
        if v is not None:
            by_variant[_variant_key(v)].append(x)
    variants = []
    for key, xs in by_variant.items():
        variants.append({"variant": key, "n": len(xs), "mean": round(statistics.fmean(x.r.score for x in xs), 4),
                         "mean_fraction": round(statistics.fmean(x.r.score / x.r.max_score if x.r.max_score else 0
                                                                 for x in xs), 4),
                         "students": sorted(x.r.student for x in xs)})
    variants.sort(key=lambda v: (v["mean_fraction"], v["variant"]))  # worst first

    assignments = Counter(x.r.assignment for x in loaded)
    return {
        "assignment": assignments.most_common(1)[0][0] if assignments else "",
        "lang": lang, "n_students": len(loaded), "n_graded": len(graded), "max_score": max_score,
        "scores": {"mean": round(statistics.fmean(totals), 4) if totals else None,
                   "median": statistics.median(totals) if totals else None,
                   "min": min(totals, default=None), "max": max(totals, default=None)},
        "questions": questions, "checks": checks, "groups": groups, "students": students,
        "ungraded": ungraded, "unreadable": bad, "late": late, "variants": variants,
    }


# ---------------------------------------------------------------------------------------------- similarity

def _given_code(assignment: str) -> list[str]:
    """The code everyone was given: the skeleton and every code cell of the lab notebook."""
    from . import source
    from .errors import SubmissionFormatError
    cells: list[str] = []
    for suffix in (".py", ".ipynb"):
        p = PROJECT_ROOT / "student_template" / f"{assignment}{suffix}"
        if p.is_file():
            try:
                cells += [c.code for c in source.read(p).cells]
            except SubmissionFormatError:
                pass
    return cells


def _not_comparable(codes: dict[str, list[str]], fps: dict, base: set[int], loaded: list[Loaded]) -> list[dict]:
    """Submissions the comparison cannot read as code, said rather than passed over: code run from a string
    (exec(base64...) of a copy), or a graded score with too little code of its own to compare."""
    scores = {x.r.student: x.r.score for x in loaded}
    out = []
    for sid, cells in sorted(codes.items()):
        hidden = next((h for c in cells if (h := similarity.hidden_code(c))), None)
        own = len(set(fps[sid].hashes) - base) if sid in fps else 0
        if hidden:
            out.append({"id": sid, "reason": f"runs code held in a string: {hidden}"})
        elif own < similarity.MIN_FINGERPRINTS and (scores.get(sid) or 0) > 0:
            out.append({"id": sid, "reason": f"scored {scores[sid]:g} with {own} fingerprints of its own"})
    return out


def find_sources(loaded: list[Loaded], submissions: Path, assignment: Assignment) \
        -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    """Each student's code cells, found in `submissions` the way `grade batch` found them (same ids, same file),
    and the students left out with why (a file changed since grading is not what was graded)."""
    import hashlib
    from . import discover, exam, source
    from .errors import SubmissionFormatError
    paths = {job.student: job.path for job, _origin in discover.entries(submissions, assignment)}
    codes: dict[str, list[str]] = {}
    skipped: list[dict[str, str]] = []
    root = submissions.resolve()
    for x in loaded:
        path = paths.get(x.r.student)
        graded = exam.graded_path(x.r.exam)
        if graded is not None:
            # The file an exam graded, as its result names it (a student's later export folder under the id the
            # roster binds, which the folder's own name does not give): where it lies in this submissions folder.
            try:
                g = Path(graded).resolve()
                if g.is_file() and g.is_relative_to(root):
                    path = g
            except (OSError, ValueError):
                pass
        if path is None:
            skipped.append({"id": x.r.student, "reason": "no gradable file for this id in the submissions folder"})
            continue
        try:
            data = path.read_bytes()
            if x.r.sha256 and hashlib.sha256(data).hexdigest() != x.r.sha256:
                skipped.append({"id": x.r.student, "reason": f"{path.name} changed since it was graded"})
                continue
            codes[x.r.student] = [c.code for c in source.read(path).cells]
        except (OSError, SubmissionFormatError) as e:
            skipped.append({"id": x.r.student, "reason": f"{path.name} could not be read ({e})"})
    return codes, skipped


# ---------------------------------------------------------------------------------------------- plots

def _svg_data(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(data: dict[str, Any], loaded: list[Loaded]) -> dict[str, str]:
    """The score histogram and the per-question distribution, as SVG data URIs for <img>."""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend
    matplotlib.rcParams["svg.hashsalt"] = "attention-grader"  # same input, same bytes
    graded = [x for x in loaded if x.r.error is None]
    pct = [100.0 * x.r.score / x.r.max_score if x.r.max_score else 0.0 for x in graded]

    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(pct, bins=[i * 10 for i in range(11)], color="#3b6ea5", edgecolor="white")
    ax.set_xlim(0, 100)
    ax.set_xlabel("total score (% of maximum)")
    ax.set_ylabel("students")
    ax.set_title(f"Score distribution ({len(graded)} graded)")
    ax.yaxis.get_major_locator().set_params(integer=True)
    hist = _svg_data(fig)

    qs = data["questions"]
    fig = Figure(figsize=(6.0, max(3.2, 1.2 + 0.4 * len(qs))), layout="constrained")
    ax = fig.add_subplot()
    names = [q["id"] for q in qs][::-1]
    full = [q["full"] for q in qs][::-1]
    zero = [q["zero"] for q in qs][::-1]
    part = [q["n"] - f - z for q, f, z in zip(qs[::-1], full, zero)]
    ax.barh(names, full, color="#2e8b57", label="full marks")
    ax.barh(names, part, left=full, color="#e0a030", label="partial")
    ax.barh(names, zero, left=[f + p for f, p in zip(full, part)], color="#c0392b", label="zero")
    ax.set_xlabel("students")
    ax.set_title("Per question: full, partial and zero scores")
    ax.xaxis.get_major_locator().set_params(integer=True)
    fig.legend(loc="outside lower center", ncols=3, fontsize="small", frameon=False)
    return {"histogram": hist, "questions": _svg_data(fig)}


# ---------------------------------------------------------------------------------------------- HTML

def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;color:#222;
padding:0 1em;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}th,td{border:1px solid #ddd;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.groups{width:100%}table.groups td.chk{width:30%}table.groups td.who{width:16%}table.groups td.num{width:3em}
table.groups summary{font-family:monospace;font-size:.85em;word-break:break-word}.wide{overflow-x:auto}
.bar{display:inline-block;height:.7em;background:#3b6ea5;vertical-align:middle}.low{color:#b03020;font-weight:600}
.muted{color:#777}.figs{display:flex;flex-wrap:wrap;gap:1em}.figs img{max-width:100%;border:1px solid #eee}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:.5em;margin:.3em 0;font-size:.85em}
.test{border:1px solid #ddd;margin:.6em 0;padding:.4em .7em}.passed{border-left:5px solid #2e8b57}
.failed{border-left:5px solid #c0392b}.tag{font-size:.8em;background:#eee;padding:0 .4em;border-radius:3px}
.code{display:grid;grid-template-columns:1fr 1fr;gap:1em}.code pre{padding:0}.ln{color:#999;user-select:none}
mark{background:#ffe08a}details summary{cursor:pointer}
:lang(ko) th,:lang(ko) td{word-break:keep-all}
"""


def page(title: str, body: str, lang: str = "en", up: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="{esc(lang)}"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
            + (f'<p><a href="{up}index.html">&larr; class report</a></p>' if up else "")
            + body + "</body></html>\n")


def _href(rel: str) -> str:
    return esc(quote(rel))


def _num(v: Any, fmt: str = "{:g}") -> str:
    return '<span class="muted">n/a</span>' if v is None else esc(fmt.format(v))


def _student_link(sid: str, pages: dict[str, str], up: str = "") -> str:
    return f'<a href="{_href(up + pages[sid])}">{esc(sid)}</a>' if sid in pages else esc(sid)


# The class page in Korean (grade report --lang ko): the instructor reads one language, as the students do.
CHECKS_NOTE = ("pass rate: share of students who passed; difficulty: mean fraction of the points; discrimination: "
               "correlation between the check and the rest of the score (low or negative: the check does not "
               "separate strong from weak submissions).")
GROUPS_NOTE = ("The failure messages of each check; messages that differ only in numbers (shown as #) are one group. "
               "Worst checks first.")
NO_SUBMISSIONS = "pass --submissions DIR (the folder given to grade batch) to compare the submitted code."
INDEX_KO = {
    "Questions": "문항", "question": "문항", "title": "제목", "mean": "평균", "max": "만점", "mean %": "평균 %",
    "full marks": "만점자", "zero": "0점", "Could not be graded": "채점하지 못한 제출물", "student": "학생",
    "why": "이유", "staff details": "교수자용 상세", "details": "상세", "Every submission was graded.":
    "모든 제출물을 채점했습니다.", "Late submissions": "늦은 제출", "minutes late": "늦은 시간(분)",
    "Exam variants (worst first)": "시험 변형 (낮은 순)", "variant": "변형", "students": "학생 수",
    "Similar submissions": "비슷한 제출물", "Not computed:": "계산하지 않음:", "score": "점수", "shared": "공유 지문",
    "side by side": "나란히 보기", "No pair above the threshold.": "기준을 넘는 쌍이 없습니다.", "Left out:": "제외:",
    "Not compared as code (look at these by hand):": "코드로 비교하지 못함 (직접 확인하세요):",
    "Checks": "검사", "check": "검사", "points": "배점", "shown": "공개", "pass rate": "통과율",
    "difficulty": "난이도", "discrimination": "변별도", "failed": "실패", "public": "공개 검사",
    CHECKS_NOTE: "통과율: 통과한 학생의 비율; 난이도: 얻은 점수의 평균 비율; 변별도: 이 검사와 나머지 점수 사이의 상관 "
                 "(낮거나 음수이면 이 검사가 잘한 제출물과 못한 제출물을 가르지 못합니다).",
    "Why checks fail, per question": "문항별 실패 이유", GROUPS_NOTE:
    "검사마다 실패 메시지를 모았습니다. 숫자만 다른 메시지(#로 표시)는 한 묶음입니다. 가장 많이 실패한 검사부터.",
    "No check failed.": "실패한 검사가 없습니다.", "message": "메시지", "who": "누가", "Students": "학생",
    "total": "합계", "notes": "참고", "not graded": "채점 안 됨", "class report": "반 전체 보고서",
    "hidden": "비공개", "after_published": "성적 공개 후", "after_due_date": "마감 후", "visible": "공개",
    NO_SUBMISSIONS: "제출 코드를 비교하려면 --submissions DIR (grade batch에 준 폴더)을 지정하세요.",
}


def render_index(d: dict[str, Any], figs: dict[str, str], title: str) -> str:
    pages = {s["id"]: s["page"] for s in d["students"]}
    anchors = {c["id"]: i for i, c in enumerate(d["checks"])}  # a nodeid is no fragment identifier
    sc = d["scores"]
    ko = d.get("lang") == "ko"

    def failed_of(n_failed: int, n: int) -> str:
        return f"{n}명 중 {n_failed}명 실패" if ko else f"{n_failed} of {n} failed"
    tr = (lambda en: INDEX_KO.get(en, en)) if ko else (lambda en: en)  # noqa: E731
    from .results import question_labels
    labels = question_labels(d.get("assignment", ""), d.get("lang", "en"))  # Korean: the questions' Korean names
    qname = lambda q: esc(labels.get(q, q))  # noqa: E731
    summary = (f"제출물 {d['n_students']}개, 채점 {d['n_graded']}개; 평균 {_num(sc['mean'], '{:.1f}')}, "
               f"중앙값 {_num(sc['median'])}, 범위 {_num(sc['min'])} - {_num(sc['max'])} (만점 "
               f"{_num(d['max_score'])}점). 수치 데이터: <a href=\"report.json\">report.json</a>." if ko else
               f"{d['n_students']} submissions, {d['n_graded']} graded; mean {_num(sc['mean'], '{:.1f}')}, "
               f"median {_num(sc['median'])}, range {_num(sc['min'])} to {_num(sc['max'])} of "
               f"{_num(d['max_score'])} points. Figures as data: <a href=\"report.json\">report.json</a>.")
    b = [f"<h1>{esc(title)}</h1>", f"<p>{summary}</p>",
         '<div class="figs">'
         f'<img id="fig-histogram" alt="score histogram" src="{figs["histogram"]}">'
         f'<img id="fig-questions" alt="per-question distribution" src="{figs["questions"]}"></div>']

    b.append(f"<h2>{tr('Questions')}</h2><table id=\"questions\">"
             + "".join(f"<th>{tr(h)}</th>" for h in ("question", "title", "mean", "max", "mean %", "full marks",
                                                     "zero")).join(("<tr>", "</tr>")))
    for q in d["questions"]:
        frac = q["mean"] / q["max"] if q["mean"] is not None and q["max"] else None
        b.append(f"<tr><td>{qname(q['id'])}</td><td>{esc(q['title'])}</td><td class=num>{_num(q['mean'], '{:.2f}')}"
                 f"</td><td class=num>{_num(q['max'])}</td><td class=num>{_num(frac, '{:.0%}')}</td>"
                 f"<td class=num>{q['full']}/{q['n']}</td><td class=num>{q['zero']}/{q['n']}</td></tr>")
    b.append("</table>")

    b.append(f"<h2>{tr('Could not be graded')}</h2>")
    if d["ungraded"] or d["unreadable"]:
        b.append(f"<table id=\"ungraded\"><tr><th>{tr('student')}</th><th>{tr('why')}</th>"
                 f"<th>{tr('staff details')}</th></tr>")
        for u in d["ungraded"]:
            staff = f"<details><summary>{tr('details')}</summary><pre>{esc(u['staff'])}</pre></details>" if u["staff"] else ""
            b.append(f"<tr><td>{_student_link(u['id'], pages)}</td><td>{esc(u['reason'])}</td><td>{staff}</td></tr>")
        for u in d["unreadable"]:
            b.append(f"<tr><td>{esc(u['file'])}</td><td>{esc(u['reason'])}</td><td></td></tr>")
        b.append("</table>")
    else:
        b.append(f"<p>{tr('Every submission was graded.')}</p>")

    if d["late"]:
        b.append(f"<h2>{tr('Late submissions')}</h2><table id=\"late\"><tr><th>{tr('student')}</th>"
                 f"<th>{tr('minutes late')}</th></tr>")
        b += [f"<tr><td>{_student_link(x['id'], pages)}</td><td class=num>{_num(x['minutes'], '{:.0f}')}</td></tr>"
              for x in d["late"]]
        b.append("</table>")

    if d["variants"]:
        b.append(f"<h2>{tr('Exam variants (worst first)')}</h2><table id=\"variants\"><tr><th>{tr('variant')}</th>"
                 f"<th>{tr('students')}</th><th>{tr('mean')}</th><th>{tr('mean %')}</th></tr>")
        b += [f"<tr><td>{esc(v['variant'])}</td><td class=num>{v['n']}</td><td class=num>{_num(v['mean'], '{:.1f}')}"
              f"</td><td class=num>{_num(v['mean_fraction'], '{:.0%}')}</td></tr>" for v in d["variants"]]
        b.append("</table>")

    sim = d.get("similarity") or {}
    b.append(f"<h2>{tr('Similar submissions')}</h2>")
    if not sim.get("computed"):
        b.append(f"<p class=muted>{tr('Not computed:')} {esc(tr(sim.get('reason', '')))}</p>")
    elif ko:
        b.append(f"<p class=muted>각자 작성한 코드(스켈레톤과 노트북에 주어진 셀은 뺌)가 이름, 리터럴, 주석, 배치를 "
                 f"정규화한 뒤 거의 같은 쌍: winnowing 지문({sim['k']}토큰 k-gram), Dice 점수 &ge; "
                 f"{sim['threshold']:g}. 비교한 제출물 {sim['compared']}개.</p>")
    else:
        b.append(f"<p class=muted>Pairs whose own code (the skeleton and the notebook's given cells removed) is "
                 f"near-identical after normalising names, literals, comments and layout: winnowing fingerprints "
                 f"({sim['k']}-token k-grams), Dice score &ge; {sim['threshold']:g}. "
                 f"{sim['compared']} submissions compared.</p>")
    if sim.get("computed"):
        if d["similar"]:
            b.append(f"<table id=\"similar\"><tr><th>{tr('student')}</th><th>{tr('student')}</th>"
                     f"<th>{tr('score')}</th><th>{tr('shared')}</th><th></th></tr>")
            b += [f"<tr><td>{_student_link(p['a'], pages)}</td><td>{_student_link(p['b'], pages)}</td>"
                  f"<td class=num>{p['score']:.2f}</td><td class=num>{p['shared']}</td>"
                  f"<td><a href=\"{_href(p['page'])}\">{tr('side by side')}</a></td></tr>" for p in d["similar"]]
            b.append("</table>")
        else:
            b.append(f"<p>{tr('No pair above the threshold.')}</p>")
        if sim.get("flagged"):
            b.append(f"<p>{tr('Not compared as code (look at these by hand):')} " + "; ".join(
                f"{_student_link(s['id'], pages)} ({esc(s['reason'])})" for s in sim["flagged"]) + "</p>")
        if sim.get("skipped"):
            b.append(f"<p class=muted>{tr('Left out:')} " + "; ".join(f"{esc(s['id'])} ({esc(s['reason'])})"
                                                              for s in sim["skipped"]) + "</p>")

    b.append(f"<h2>{tr('Checks')}</h2><p class=muted>{tr(CHECKS_NOTE)}</p><table id=\"checks\">"
             + "".join(f"<th>{tr(h)}</th>" for h in ("question", "check", "points", "shown", "pass rate",
                                                     "difficulty", "discrimination", "failed")).join(("<tr>", "</tr>")))
    for c in d["checks"]:
        pr = c["pass_rate"]
        bar = f'<span class="bar" style="width:{int(round(60 * pr))}px"></span> ' if pr is not None else ""
        cls = ' class="num low"' if pr is not None and pr < 0.5 else " class=num"
        anchor = f"#f-{anchors[c['id']]}" if c["failed"] else ""
        failed = f'<a href="{anchor}">{c["failed"]}</a>' if anchor else str(c["failed"])
        b.append(f"<tr><td>{qname(c['question'])}</td><td>{esc(c['name'])}</td><td class=num>{_num(c['points'])}</td>"
                 f"<td>{tr('public') if c['public'] else esc(tr(c['visibility']))}</td><td{cls}>{bar}"
                 f"{_num(pr, '{:.0%}')}</td><td class=num>{_num(c['difficulty'], '{:.2f}')}</td>"
                 f"<td class=num>{_num(c['discrimination'], '{:.2f}')}</td><td class=num>{failed}</td></tr>")
    b.append("</table>")

    b.append(f"<h2>{tr('Why checks fail, per question')}</h2><p class=muted>{tr(GROUPS_NOTE)}</p>")
    by_check: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in d["groups"]:
        by_check[g["check"]].append(g)
    if not by_check:
        b.append(f"<p>{tr('No check failed.')}</p>")
    for q in d["questions"]:
        failing = sorted((c for c in d["checks"] if c["question"] == q["id"] and c["id"] in by_check),
                         key=lambda c: (c["pass_rate"], c["name"]))
        if not failing:
            continue
        frac = q["mean"] / q["max"] if q["mean"] is not None and q["max"] else None
        b.append(f"<h3>{qname(q['id'])} <span class=muted>{tr('mean')} {_num(frac, '{:.0%}')}, {tr('full marks')} "
                 f"{q['full']}/{q['n']}</span></h3><table class=\"groups\"><tr><th>{tr('check')}</th>"
                 f"<th>{tr('students')}</th><th>{tr('message')}</th><th>{tr('who')}</th></tr>")
        for c in failing:
            gs, rest = by_check[c["id"]][:GROUPS_SHOWN], by_check[c["id"]][GROUPS_SHOWN:]
            rows = len(gs) + (1 if rest else 0)
            for i, g in enumerate(gs):
                head = (f'<td rowspan="{rows}" class="chk" id="f-{anchors[c["id"]]}">{esc(c["name"])}<br>'
                        f'<span class=muted>{failed_of(c["failed"], c["n"])}</span></td>') if i == 0 else ""
                who = ", ".join(_student_link(s, pages) for s in g["students"])
                b.append(f"<tr>{head}<td class=num>{g['count']}</td><td><details><summary>{esc(g['pattern'])}"
                         f"</summary><pre>{esc(g['example'])}</pre></details></td><td class=who>{who}</td></tr>")
            if rest:
                b.append(f"<tr><td class=num>{sum(g['count'] for g in rest)}</td><td class=muted>"
                         + (f"다른 메시지 {len(rest)}개 (모두 report.json에)" if ko else
                            f"{len(rest)} other messages (all in report.json)") + "</td><td class=who>"
                         + ", ".join(_student_link(s, pages) for g in rest for s in g["students"]) + "</td></tr>")
        b.append("</table>")

    qids = [q["id"] for q in d["questions"]]
    b.append(f"<h2>{tr('Students')}</h2><div class=wide><table id=\"students\"><tr><th>{tr('student')}</th>"
             f"<th>{tr('total')}</th>" + "".join(f"<th>{qname(q)}</th>" for q in qids) + f"<th>{tr('notes')}</th></tr>")
    for s in d["students"]:
        total = f"{s['score']:g}/{s['max_score']:g}" if s["graded"] else tr("not graded")
        notes = esc(" ".join(s["notes"])[:400])
        b.append(f"<tr><td>{_student_link(s['id'], pages)}</td><td class=num>{esc(total)}</td>"
                 + "".join(f"<td class=num>{_num(s['questions'].get(q))}</td>" for q in qids)
                 + f"<td>{notes}</td></tr>")
    b.append("</table></div>")
    return page(title, "\n".join(b), d.get("lang", "en"))


VISIBILITY_NOTE = {
    "en": {"after_published": "shown after grades are published", "after_due_date": "shown after the due date",
           "title": "What {sid} sees on Gradescope", "total": "Total", "hidden_total":
           "(students see the total once grades are published)", "none": "No test results are visible."},
    "ko": {"after_published": "성적 공개 후 표시", "after_due_date": "마감 후 표시",
           "title": "{sid} 학생이 Gradescope에서 보는 화면", "total": "총점", "hidden_total":
           "(성적이 공개되면 학생에게 총점이 보입니다)", "none": "보이는 테스트 결과가 없습니다."},
}


def _graded_lang(x: Loaded) -> str:
    """The language the feedback was written in: recorded by the batch when it is, else read from the text."""
    lang = x.extra("lang")
    if lang in VISIBILITY_NOTE:
        return lang
    text = " ".join(str(t.get("output", "")) for t in x.gs.get("tests", []) if isinstance(t, dict))
    korean = [m.ko for m in [x.r.error, *x.r.notes, *(c.message for c in x.r.checks)]
              if m is not None and m.ko and m.ko != m.en]
    return "ko" if "통과" in text or any(k in text for k in korean) else "en"


def render_student(x: Loaded) -> str:
    """The Gradescope view: visible tests, after_published/after_due_date ones marked, hidden ones absent."""
    lang = _graded_lang(x)
    t = VISIBILITY_NOTE[lang]
    gs = x.gs
    tests = [tt for tt in gs.get("tests", []) if isinstance(tt, dict) and tt.get("visibility", "visible") != "hidden"]
    every = [tt for tt in gs.get("tests", []) if isinstance(tt, dict)]
    max_total = sum(float(tt.get("max_score") or 0) for tt in every)
    held_back = any(tt.get("visibility", "visible") != "visible" for tt in every)
    b = [f"<h1>{esc(t['title'].format(sid=x.r.student))}</h1>",
         f"<p id=\"total\"><b>{esc(t['total'])}: {esc(format(float(gs.get('score', 0)), 'g'))} / "
         f"{esc(format(max_total, 'g'))}</b> "
         + (f"<span class=muted>{esc(t['hidden_total'])}</span>" if held_back else "") + "</p>"]
    if gs.get("output"):
        b.append(f"<pre id=\"output\">{esc(gs['output'])}</pre>")
    if not tests:
        b.append(f"<p>{esc(t['none'])}</p>")
    for tt in tests:
        vis = tt.get("visibility", "visible")
        status = "passed" if tt.get("status") == "passed" else "failed"
        mark = f' <span class="tag">{esc(t[vis])}</span>' if vis in ("after_published", "after_due_date") else ""
        score = ""
        if tt.get("max_score"):
            score = f" ({esc(format(float(tt.get('score') or 0), 'g'))}/{esc(format(float(tt['max_score']), 'g'))})"
        b.append(f'<div class="test {status}" data-visibility="{esc(vis)}"><b>{esc(tt.get("name", ""))}</b>'
                 f"{score}{mark}<pre>{esc(tt.get('output', ''))}</pre></div>")
    return page(t["title"].format(sid=x.r.student), "\n".join(b), lang, up="../")


def render_pair(a: str, b: str, score: float, codes: dict[str, list[str]], fps: dict[str, similarity.Fingerprints],
                base: set[int]) -> str:
    shared = (set(fps[a].hashes) & set(fps[b].hashes)) - base

    def column(sid: str) -> str:
        hot = fps[sid].lines(shared)
        out = [f"<div><h2>{esc(sid)}</h2>"]
        for ci, cell in enumerate(codes[sid]):
            if len(codes[sid]) > 1:
                out.append(f"<p class=muted>cell {ci + 1}</p>")
            rows = []
            for ln, line in enumerate(cell.splitlines(), start=1):
                text = f'<span class="ln">{ln:4d} </span>{esc(safetext.reveal(line))}'
                rows.append(f"<mark>{text}</mark>" if (ci, ln) in hot else text)
            out.append("<pre>" + "\n".join(rows) + "</pre>")
        return "".join(out) + "</div>"
    body = (f"<h1>{esc(a)} and {esc(b)}: similarity {score:.2f}</h1><p class=muted>Highlighted lines hold code the "
            "two share after normalising names, literals, comments and layout (code everyone was given is not "
            "highlighted).</p>" f'<div class="code">{column(a)}{column(b)}</div>')
    return page(f"{a} / {b}", body, up="../")


# ---------------------------------------------------------------------------------------------- command

def main(*, results: Path, out: Path | None = None, submissions: Path | None = None, lang: str = "en",
         threshold: float = similarity.THRESHOLD, echo: Callable[[str], None] = print) -> Report:
    if not results.is_dir():
        raise UsageError(Message(f"{results} is not a folder of grade batch results",
                                 f"{results}은(는) grade batch 결과 폴더가 아닙니다"))
    loaded, bad = load(results)
    if not loaded:
        raise UsageError(Message(
            f"{results} holds no grade batch results (<student>.json); run `grade batch` first",
            f"{results}에는 grade batch의 결과 파일이 없습니다 (<학생>.json). 먼저 `grade batch`를 실행하세요"))
    kinds = sorted({x.r.assignment for x in loaded})
    if len(kinds) > 1:
        raise UsageError(Message(f"{results} holds results of several assignments ({', '.join(kinds)}); "
                                 "report on one folder per assignment",
                                 f"{results}에 여러 과제의 결과가 있습니다 ({', '.join(kinds)}). 과제마다 폴더 "
                                 "하나로 보고서를 만드세요"))
    from . import assignment as assignment_mod
    try:
        a: Assignment | None = assignment_mod.load(kinds[0])
    except AssignmentError:
        a = None  # results of an assignment this checkout no longer has: report without titles or sources
    titles = {q.id: q.title for q in a.questions} if a else {}
    if a is not None and lang == "ko":  # the Korean titles (ko.toml) where the assignment has them
        titles.update({k: str(v) for k, v in a.ko.get("questions", {}).items() if k in titles})
    out = out or results / "report"
    # The report's report.json among grade batch results: a student whose id is `report` lost their result to
    # it (red team, round 23), and the next report listed the report itself as a file that is not a result.
    if out.resolve() == results.resolve() or read_result(out / "report.json") is not None:
        raise UsageError(Message(
            f"--out {out} holds grade batch results; its report.json would replace the result of a student whose "
            f"id is `report`. Give the report a folder of its own (the default is {results / 'report'})",
            f"--out {out}에는 grade batch 결과가 있습니다. 보고서의 report.json이 id가 `report`인 학생의 결과를 덮어쓰게 "
            f"됩니다. 보고서에는 따로 폴더를 주세요 (기본값은 {results / 'report'})"))
    data = compute(loaded, bad, titles, lang)

    sim: dict[str, Any] = {"computed": False, "threshold": threshold, "k": similarity.K, "window": similarity.WINDOW}
    data["similar"] = []
    codes: dict[str, list[str]] = {}
    pair_pages: list[tuple[str, str]] = []
    if submissions is None:
        sim["reason"] = NO_SUBMISSIONS
    elif a is None:
        sim["reason"] = f"assignment {kinds[0]!r} is not in this checkout, so its files cannot be found."
    elif not submissions.is_dir():
        raise UsageError(Message(f"--submissions {submissions} is not a folder",
                                 f"--submissions {submissions}은(는) 폴더가 아닙니다"))
    else:
        codes, skipped = find_sources(loaded, submissions, a)
        pairs, fps, base = similarity.similar_pairs(codes, _given_code(a.name), threshold)
        sim.update(computed=True, compared=len(codes), skipped=skipped, flagged=_not_comparable(codes, fps, base, loaded))
        stems = {x.r.student: x.page for x in loaded}  # safe as file names, unlike an id read from a file
        for n, p in enumerate(pairs, start=1):
            # Numbered: ids may hold "--" themselves, and (x, y--z) and (x--y, z) shared one page.
            name = f"similar/{n:03d}-{stems[p.a]}--{stems[p.b]}.html"
            data["similar"].append({"a": p.a, "b": p.b, "score": p.score, "shared": p.shared, "page": name})
            pair_pages.append((name, render_pair(p.a, p.b, p.score, codes, fps, base)))
    data["similarity"] = sim

    title = f"{a.title_in(lang) if a else kinds[0]}: " + ("반 전체 보고서" if lang == "ko" else "class report")
    report = Report(out, data)

    def write(rel: str, text: str) -> None:
        write_atomic(out / rel, text)
        report.pages.append(out / rel)
    write("report.json", json.dumps(data, ensure_ascii=False, indent=1))
    write("index.html", render_index(data, plots(data, loaded), title))
    for x in loaded:
        write(f"students/{x.page}.html", render_student(x))
    for name, text in pair_pages:
        write(name, text)
    return report

