"""Build the exam demo's submissions from the papers: ada answers her paper, bo hands in ada's answer with the
names changed, chen and dana hand in their papers untouched (what `make demo` then grades and audits)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder import exam  # noqa: E402


def main(papers: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ada = exam.constants((papers / "ada" / "midterm.py").read_text(encoding="utf-8"))
    variant = {k.lower(): list(v) if isinstance(v, tuple) else v for k, v in ada.items()}
    answer = exam.render((ROOT / "reference" / "midterm.py").read_text(encoding="utf-8"), variant, "ada")
    (out / "ada.py").write_text(answer, encoding="utf-8")
    copy = re.sub(r"\bscores\b", "logits", re.sub(r"\bweights\b", "probs", answer))
    (out / "bo.py").write_text(re.sub(r"  # .*", "", copy), encoding="utf-8")
    for student in ("chen", "dana"):
        (out / f"{student}.py").write_bytes((papers / student / "midterm.py").read_bytes())


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
