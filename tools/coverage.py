"""Writes docs/COVERAGE.md from docs/coverage.json and the C lowering table.

    .venv/bin/python tools/coverage.py

The generator lives in tools/conformance.py (the OpInfo sweep writes
docs/coverage.json; this regenerates the markdown, including the list of
native aten overloads, without re-running the sweep).
"""
import os
import sys

import conformance  # tools/conformance.py, beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    sys.exit(conformance.main(["--markdown", os.path.join(ROOT, "docs", "coverage.json")]))
