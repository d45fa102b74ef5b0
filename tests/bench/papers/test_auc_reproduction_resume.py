"""The AUC reproduction bench resumes from its committed report JSON and from interrupted part files."""
import json

from bench.papers.auc_reproduction import Part, read_rows


def test_report_json_is_a_source(tmp_path):
    report = tmp_path / "auc_reproduction.json"
    report.write_text(json.dumps({
        "tuning_runs": [{"key": "tune|a9a|level_set|linear|0.1|10.0", "kind": "tune"}],
        "runs": [{"key": "grid|a9a|level_set|linear|0|group|0.005", "kind": "grid"}],
        "timing": [{"key": "timing|10000", "kind": "timing"}],
        "frontier": [{"not": "a run"}]}))
    assert [r["key"] for r in read_rows(report)] == [
        "tune|a9a|level_set|linear|0.1|10.0", "grid|a9a|level_set|linear|0|group|0.005", "timing|10000"]
    part = Part(tmp_path / "new.jsonl", [report])
    assert "grid|a9a|level_set|linear|0|group|0.005" in part.done and "timing|10000" in part.done
    assert part.rows == []


def test_cut_off_line_is_dropped_and_appends_resume(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"key": "a", "x": 1}) + "\n" + '{"key": "b", "x"')
    assert [r["key"] for r in read_rows(path)] == ["a"]
    part = Part(path)
    assert part.done == {"a"}
    part.add("c", [{"x": 2}, {"x": 3}])
    assert [r["key"] for r in read_rows(path)] == ["a", "c", "c"]
    assert Part(path).done == {"a", "c"}
