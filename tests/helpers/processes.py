"""Stopping a server process a test started: terminate, give it time to close its store, kill if it hangs."""
from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, timeout: float = 30) -> str:
    """Stop ``proc`` (SIGTERM, then SIGKILL after ``timeout`` s) and return what it wrote to stderr, so a test can
    show why it did not exit cleanly."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return err
