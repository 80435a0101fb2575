"""tests/sgtest.py — reporting helpers for the Python tests run by tests/run.sh (PASS/FAIL/SKIP lines)."""
import os
import sys

ROOT = os.environ.get("SG_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SG_BIN", os.path.join(ROOT, "siglip2-embed"))
BUILD = os.environ.get("SG_BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("SG_TMP", "/tmp")
_failures = 0


def ok(what):
    print(f"PASS: {what}", flush=True)


def fail(what):
    global _failures
    _failures += 1
    print(f"FAIL: {what}", flush=True)


def skip(what):
    print(f"SKIP: {what}", flush=True)


def check(cond, what):
    (ok if cond else fail)(what)
    return cond


def done():
    sys.exit(1 if _failures else 0)
