"""The project's metadata is in pyproject.toml; this file only adds the optional C part of the library watch
(autograder/_watchhook.c). Where it cannot be built (no C compiler), the install goes on without it and the worker
uses the same filter written in Python (worker.Recorder._profile): slower, the same grades."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("autograder._watchhook", ["autograder/_watchhook.c"], optional=True)])
