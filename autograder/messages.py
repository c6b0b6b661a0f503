"""Bilingual student-facing text: every message carries English and Korean, chosen when it is shown."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

LANGS = ("en", "ko")


@dataclass(frozen=True, slots=True)
class Message:
    en: str
    ko: str = ""

    def text(self, lang: str = "en") -> str:
        return korean(self.ko) if lang == "ko" and self.ko else self.en

    def __str__(self) -> str:
        return self.en

    def __add__(self, other: "Message") -> "Message":
        return Message(f"{self.en} {other.en}".strip(), f"{self.ko or self.en} {other.ko or other.en}".strip())


def plain(text: str) -> Message:
    """Text that reads the same in both languages (student output, names, numbers)."""
    return Message(text, text)


_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def bilingual(text: str) -> Message:
    """Text written as "English / 한국어" (the skeleton's NotImplementedError, a check's skip reason) split into its
    two languages; any other text reads the same in both."""
    en, sep, ko = text.partition(" / ")
    if sep and _HANGUL.search(ko) and not _HANGUL.search(en) and " / " not in ko:
        return Message(en.strip(), ko.strip())
    return plain(text)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


MAX_HINT_CANDIDATES = 2000  # difflib is quadratic per pair: a file with 600,000 globals must not stall the grader


def near_miss(wanted: str, available: list[str]) -> str | None:
    """The name a student probably meant: same letters ignoring case/underscores, else a close spelling.

    Bounded work whatever the submission defines: only names whose length allows difflib's 0.75 ratio
    (2*matches/(a+b) >= 0.75 needs the longer at most 5/3 of the shorter), and at most MAX_HINT_CANDIDATES."""
    n = len(wanted)
    available = [a for a in available if type(a) is str and 3 * len(a) <= 5 * n and 3 * n <= 5 * len(a)]
    available = available[:MAX_HINT_CANDIDATES]
    for name in available:
        if _norm(name) == _norm(wanted):
            return name
    close = difflib.get_close_matches(wanted, available, n=1, cutoff=0.75)
    if close:
        return close[0]
    lowered = {n.lower(): n for n in available}
    close = difflib.get_close_matches(wanted.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[close[0]] if close else None


def rename_hint(wanted: str, available: list[str], graded: "frozenset[str] | set[str] | list[str]") -> str | None:
    """near_miss, one to one: the student's name is offered for `wanted` only if, of all the graded names, it is
    closest to `wanted` (a misspelt wrapper, `MultiheadAttentionWrapper`, is not also offered for
    `MultiHeadAttention`; `SelfAttention_V1` not also for `SelfAttention_v2`)."""
    guess = near_miss(wanted, available)
    if guess is None:
        return None
    return guess if near_miss(guess, sorted(set(graded) | {wanted})) == wanted else None


# ---------------------------------------------------------------------------------------------- Korean particles

# Particle pairs: (after a final consonant, after a vowel). "(으)로" is special: after ㄹ it is 로 as after a vowel.
_PARTICLES = {"이": ("이", "가"), "가": ("이", "가"), "을": ("을", "를"), "를": ("을", "를"), "은": ("은", "는"),
              "는": ("은", "는"), "과": ("과", "와"), "와": ("과", "와"), "으로": ("으로", "로"), "로": ("으로", "로"),
              "이라서": ("이라서", "라서"), "라서": ("이라서", "라서"), "이어야": ("이어야", "여야"),
              "여야": ("이어야", "여야"), "이라는": ("이라는", "라는"), "라는": ("이라는", "라는"),
              "이라고": ("이라고", "라고"), "라고": ("이라고", "라고"), "입니다": ("입니다", "입니다")}
# How a digit is read in Korean, as (final consonant?, final is ㄹ?): 0 영, 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠,
# 8 팔, 9 구.
_DIGITS = {"0": (True, False), "1": (True, True), "2": (False, False), "3": (True, False), "4": (False, False),
           "5": (False, False), "6": (True, False), "7": (True, True), "8": (True, True), "9": (False, False)}


def _final(word: str) -> tuple[bool, bool]:
    """(has a final consonant, that consonant is ㄹ) for the last sound of `word` as a Korean reader says it.

    Hangul by its syllable block; digits by their Korean reading; a Latin word (a code name such as
    `CausalAttention`) by its last letter: l, m, n (and ng) are read as a final consonant, anything else as a vowel
    (list -> 리스트, Wrapper -> 래퍼, mask -> 마스크).
    """
    for i in range(len(word) - 1, -1, -1):
        ch = word[i]
        if "\uac00" <= ch <= "\ud7a3":
            jong = (ord(ch) - 0xAC00) % 28
            return jong != 0, jong == 8
        if ch in _DIGITS:
            return _DIGITS[ch]
        if ch.isascii() and ch.isalpha():
            c = ch.lower()
            if c in "lmn":
                return True, c == "l"
            # A short vowel before a final t, p or k is read with a final consonant (dropout -> 드롭아웃,
            # input -> 인풋, step -> 스텝, stack -> 스택); after a consonant or a long vowel it is not (list ->
            # 리스트, weight -> 웨이트, float -> 플로트).
            run = re.search(r"[a-z]+$", word[:i + 1].lower())
            tail = run.group(0) if run else c
            return bool(re.search(r"(out|ck|(?:^|[^aeiou])[aeiou][tpk])$", tail)), False
        if ch in ")]}`'\" ":
            continue
    return False, False


def josa(word: str, particle: str) -> str:
    """`word` followed by the form of `particle` its last sound takes: josa("`CausalAttention`", "이") ->
    "`CausalAttention`이", josa("list", "이라서") -> "list라서", josa("토큰 3..5", "을") -> "토큰 3..5를"."""
    if particle not in _PARTICLES:
        raise ValueError(f"unknown particle {particle!r}")
    final, rieul = _final(word)
    after_consonant, after_vowel = _PARTICLES[particle]
    if after_consonant == "으로":
        return word + ("로" if not final or rieul else "으로")
    return word + (after_consonant if final else after_vowel)


# ---------------------------------------------------------------------------------------------- the glossary

# One place for the course's terms in both languages; the notebooks use the same Korean words
# (tests/test_fidelity.py checks that the lab notebook does), so feedback and notebook agree.
GLOSSARY: dict[str, tuple[str, str]] = {
    "causal attention": ("causal attention", "코잘 어텐션"),
    "causal mask": ("causal mask", "코잘 마스크"),
    "causal": ("causal", "코잘"),
    "attention weights": ("attention weights", "어텐션 가중치"),
    "attention scores": ("attention scores", "어텐션 점수"),
    "context vector": ("context vector", "문맥 벡터"),
    "query": ("query", "쿼리"),
    "key": ("key", "키"),
    "value": ("value", "값"),
    "head": ("head", "헤드"),
    "dropout": ("dropout", "드롭아웃"),
    "residual connection": ("residual connection", "잔차 연결"),
    "feed-forward network": ("feed-forward network", "피드포워드 네트워크"),
    "question": ("question", "문항"),
    "score": ("score", "점수"),
    "total": ("total", "합계"),
    "note": ("note", "참고"),
    "code cell": ("code cell", "코드 셀"),
    "section": ("section", "섹션"),
    "at index": ("at index", "인덱스"),
    "public checks": ("public checks", "공개 검사"),
    "hidden checks": ("hidden checks", "비공개 검사"),
}


def term(key: str, lang: str = "en") -> str:
    """A glossary term in the given language."""
    en, ko = GLOSSARY[key]
    return ko if lang == "ko" else en


# ---------------------------------------------------------------------------------------------- Korean text as shown

# A particle written right after a code name, a number or a closing bracket, then a space, punctuation or the end:
# its form is chosen here from what precedes it, so a message may write `{name}`이 for any name. Neutral forms such
# as 이(가) are resolved the same way.
_PARTICLE_AFTER_CODE = re.compile(
    r"(?<=[A-Za-z0-9`)\]'\"])(이\(가\)|을\(를\)|은\(는\)|와\(과\)|\(으\)로|이라서|라서|이어야|여야|이라는|라는|이라고|라고|이|가|을|를|은|는|와|과|으로|로)"
    r"(?=[\s.,:;!?)\]]|$)")
_NEUTRAL = re.compile(r"(이\(가\)|을\(를\)|은\(는\)|와\(과\)|\(으\)로)")
_NEUTRAL_BASE = {"이(가)": "이", "을(를)": "을", "은(는)": "은", "와(과)": "와", "(으)로": "으로"}
# Fixed English phrases that the engine puts into Korean text (locations, positions), in Korean.
_KO_PHRASES = ((re.compile(r', section ("[^"\n]*"), code cell (\d+)'), r", 섹션 \1, 코드 셀 \2"),
               (re.compile(r", code cell (\d+)"), r", 코드 셀 \1"), (re.compile(r" at index (\()"), r" 인덱스 \1"))


def korean(text: str) -> str:
    """Korean text as shown: particles after code names and numbers fit the preceding word, and the engine's
    fixed English phrases (", code cell 3", " at index (0, 1)") read in Korean."""
    for pattern, repl in _KO_PHRASES:
        text = pattern.sub(repl, text)

    def fit(m: re.Match) -> str:
        before = text[:m.start()]
        particle = m.group(1)
        base = _NEUTRAL_BASE.get(particle, particle)
        return josa(before[-40:], base)[len(before[-40:]):]
    text = _PARTICLE_AFTER_CODE.sub(fit, text)

    def neutral(m: re.Match) -> str:  # a neutral form after Hangul: the author did not know the word either
        before = text[:m.start()]
        return josa(before[-40:], _NEUTRAL_BASE[m.group(1)])[len(before[-40:]):]
    return _NEUTRAL.sub(neutral, text)


# A job whose grading failed in the grader itself (never the student's code): the same words wherever it is made.
GRADER_FAILED = Message(
    "The autograder itself failed while grading this submission; your instructor has the details and will "
    "regrade it.",
    "이 제출물을 채점하는 중 채점기 자체에 오류가 발생했습니다. 담당 교수자가 확인 후 다시 채점합니다.")
