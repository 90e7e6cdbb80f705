"""bench/report.py: a report kept as a log (speed.md, ann_params.md) keeps its earlier runs when a benchmark
writes a new one — `make bench` reruns bench/speed.py, whose file holds the figures the goals and ADRs quote."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "bench_report", Path(__file__).resolve().parents[2] / "bench" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def test_a_new_run_goes_under_the_title_and_the_old_runs_stay(tmp_path: Path) -> None:
    out = tmp_path / "speed.md"
    out.write_text("# Speed\n\n## Hand-written: what 1M taught us\n\n| a |\n|---|\n| 1 |\n", encoding="utf-8")
    report.prepend_report(out, "# Speed\n\nGenerated today.\n\n| b |\n|---|\n| 2 |\n")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Speed\n\n## Run of ")
    assert text.count("# Speed\n") == 1
    new, old = text.index("Generated today."), text.index("## Hand-written: what 1M taught us")
    assert new < old
    assert text.endswith("| a |\n|---|\n| 1 |\n")
    assert "| b |\n|---|\n| 2 |\n" in text


def test_a_missing_file_or_another_title_is_written_whole(tmp_path: Path) -> None:
    fresh = tmp_path / "new.md"
    report.prepend_report(fresh, "# Speed\n\nGenerated today.\n")
    assert fresh.read_text(encoding="utf-8") == "# Speed\n\nGenerated today.\n"
    other = tmp_path / "other.md"
    other.write_text("# Something else\n\nold\n", encoding="utf-8")
    report.prepend_report(other, "# Speed\n\nGenerated today.\n")
    assert other.read_text(encoding="utf-8") == "# Speed\n\nGenerated today.\n"


def test_the_cpu_model_is_named() -> None:
    name = report.cpu_model()
    assert isinstance(name, str) and name.strip() and name == name.strip()
