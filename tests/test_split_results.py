"""suite.report.split_results: a report's results.md, one file a section, for pages to include without its headings."""

import pytest

from suite.report.split_results import main, split, write_sections


def test_each_section_is_its_own_file_without_its_heading(tmp_path):
    (tmp_path / "results.md").write_text("## Results at a glance\n\nintro\n\n| a |\n|---|\n\n## dna\n\n| b |\n")
    written = write_sections(tmp_path)
    assert sorted(p.name for p in written) == ["dna.md", "results-at-a-glance.md"]
    assert (tmp_path / "sections" / "results-at-a-glance.md").read_text() == "intro\n\n| a |\n|---|\n"
    assert (tmp_path / "sections" / "dna.md").read_text() == "| b |\n"
    assert split("no headings") == {}


def test_the_command_splits_older_reports_and_names_a_missing_one(tmp_path, capsys):
    (tmp_path / "results.md").write_text("## Speed\n\n| s |\n")
    assert main([str(tmp_path)]) == 0 and "speed.md" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="no report here"):
        main([str(tmp_path / "nowhere")])
