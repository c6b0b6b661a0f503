"""Lets plain `python -m pytest assignments/<name>/... --submission FILE` grade one file."""
pytest_plugins = ["autograder.plugin"]
