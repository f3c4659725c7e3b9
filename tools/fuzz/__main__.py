"""`python tools/fuzz ...`: runs the fuzzer (see __init__.py)."""
import importlib
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_here))
sys.exit(importlib.import_module(os.path.basename(_here) + ".cli").main())
