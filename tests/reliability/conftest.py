"""The reliability suite's helpers (rel_support.py) sit next to the tests; put them on sys.path."""
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
