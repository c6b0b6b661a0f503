"""Would sabotage grading if anything imported it: conftest.py"""
import os
open("/tmp/HOSTILE-GRADER-TEST-7f3a-shadow-imported", "w").write(__file__)
os._exit(7)
