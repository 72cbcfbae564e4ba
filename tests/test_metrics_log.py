"""metrics.jsonl: a line cut short by a kill is skipped on reading and dropped on resume."""
import json

from vitjax import metrics_log, rundir


def test_metrics_rows_skip_a_line_cut_short(tmp_path):
    rows = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]
    with open(rundir.file_path(str(tmp_path), rundir.METRICS), "w") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows) + '5\n[]\n{"step": 3, "lo')  # edits, a cut
    assert metrics_log.read_metrics(str(tmp_path)) == rows
    assert metrics_log.read_metrics(str(tmp_path / "absent")) == []



def test_keep_metrics_drops_rows_and_a_line_cut_short(tmp_path):
    rows = [{"step": step, "loss": 1.0 / step} for step in range(1, 6)]
    with open(rundir.file_path(str(tmp_path), rundir.METRICS), "w") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows) + '{"step": 6, "lo')
    assert metrics_log.keep_metrics(str(tmp_path), lambda row: row["step"] <= 3) == 2
    assert metrics_log.read_metrics(str(tmp_path)) == rows[:3]
    assert (tmp_path / rundir.METRICS).read_text().endswith("}\n")  # the next row starts its own line

