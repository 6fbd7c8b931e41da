"""The duration table a timed benchmark command leaves beside its report."""

import pytest

from suite.report.duration import FILE, duration_table, main, wall_time


@pytest.mark.parametrize("seconds, text", [(40, "40 s"), (60, "1 min"), (14 * 60 + 20, "14 min"), (6720, "1 h 52 min")])
def test_wall_time_reads_in_hours_and_minutes(seconds, text):
    assert wall_time(seconds) == text


def test_the_table_names_the_command_its_time_and_the_report_machine(tmp_path):
    (tmp_path / "machine.txt").write_text("measured on: cpu:Xeon x1 threads; 56 runs; precision: fp32; commit: abc\n")
    assert main(["make bench-lra", "6720", str(tmp_path)]) == 0
    lines = (tmp_path / FILE).read_text().splitlines()
    assert lines[2] == "| `make bench-lra` | 1 h 52 min | cpu:Xeon x1 threads; 56 runs; precision: fp32; commit: abc |"


def test_a_report_without_its_machine_line_or_a_negative_time_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="machine.txt is missing: run the report first"):
        duration_table("make bench-lra", 10, tmp_path)
    (tmp_path / "machine.txt").write_text("measured on: x\n")
    with pytest.raises(ValueError, match="cannot be negative"):
        duration_table("make bench-lra", -1, tmp_path)


def test_another_command_adds_its_row_and_timing_one_again_replaces_only_its_own(tmp_path):
    (tmp_path / "machine.txt").write_text("measured on: 56 runs; commit: abc\n")
    main(["make bench-lra", "5548", str(tmp_path)])
    (tmp_path / "machine.txt").write_text("measured on: 112 runs; commit: abc, def\n")
    main(["make bench-lra LRA_CPU_SEEDS=0,1", "5400", str(tmp_path)])
    main(["make bench-lra LRA_CPU_SEEDS=0,1", "5500", str(tmp_path)])
    rows = (tmp_path / FILE).read_text().splitlines()[2:]
    assert rows == [
        "| `make bench-lra` | 1 h 32 min | 56 runs; commit: abc |",
        "| `make bench-lra LRA_CPU_SEEDS=0,1` | 1 h 32 min | 112 runs; commit: abc, def |",
    ]


def test_a_file_that_is_not_a_duration_table_is_not_overwritten(tmp_path):
    (tmp_path / "machine.txt").write_text("measured on: x\n")
    (tmp_path / FILE).write_text("notes typed by hand\n")
    with pytest.raises(ValueError, match="not a duration table"):
        main(["make bench-lra", "10", str(tmp_path)])
    assert (tmp_path / FILE).read_text() == "notes typed by hand\n"
