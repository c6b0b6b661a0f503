"""Every failure the grader reports on purpose: one base class, one subclass per cause."""
from __future__ import annotations

from .messages import Message, plain


class GraderError(Exception):
    """Base class: carries a bilingual message meant for the person running the command."""

    def __init__(self, message: Message | str):
        self.message = message if isinstance(message, Message) else plain(message)
        super().__init__(self.message.en)


class SubmissionFormatError(GraderError):
    """Raised while reading a submission that is not a usable .py/.ipynb (encoding, JSON, empty, size)."""


class SubmissionLayoutError(GraderError):
    """Raised when a submission folder holds no gradable file, or several candidates."""


class AssignmentError(GraderError):
    """Raised when an assignment folder is missing or its assignment.toml is invalid."""


class UsageError(GraderError):
    """Raised for command-line input that cannot work (missing path, bad option combination)."""
