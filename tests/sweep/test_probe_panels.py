"""The data-scaling figure's few-shot panels: one per probe the table has (in-domain, transfer)."""
import csv

import pytest

from vitjax.sweep import plots


def _row(family, size, seed, accuracy, probes):
    row = {"name": f"{family}_n{size}_s{seed}", "status": "finished", "family": family, "model": family,
           "train_size": size, "seed": seed, "accuracy": accuracy, "accuracy_from": "best_val",
           "config": {"model_name": family, "seed": seed, "data": {"train_size": size, "subset_seed": seed}}}
    for probe in probes:
        row[f"{probe}_10shot"] = accuracy - (0.3 if probe == "transfer" else 0.01)
    return row


def _drawn(rows, tmp_path, monkeypatch):
    """(panel titles of the figure, rows of its table)."""
    figures, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path: (figures.append(fig), save(plt, fig, path))[1])
    _, table = plots.data_scaling(rows, str(tmp_path))
    with open(table) as f:
        return [ax.get_title() for ax in figures[0].axes], list(csv.DictReader(f))


@pytest.mark.parametrize("probes", [("fewshot",), ("fewshot", "transfer")])
def test_each_probe_gets_its_own_panel_and_columns(tmp_path, monkeypatch, probes):
    rows = [_row(family, size, 0, accuracy, probes)
            for family, accuracy in (("vit", 0.6), ("bit", 0.7)) for size in (100, 1000)]
    titles, table = _drawn(rows, tmp_path, monkeypatch)
    assert titles[0] == "Test accuracy" and len(titles) == 1 + len(probes)
    if probes == ("fewshot",):
        assert titles[1] == plots.PROBE_TITLES["fewshot"][0] and "transfer_10shot_mean" not in table[0]
    else:
        assert titles[1:] == [plots.PROBE_TITLES["fewshot"][1], plots.PROBE_TITLES["transfer"][1]]
        vit_100 = next(r for r in table if r["family"] == "vit" and r["train_size"] == "100")
        assert float(vit_100["transfer_10shot_mean"]) == pytest.approx(0.3)
        assert float(vit_100["fewshot_10shot_mean"]) == pytest.approx(0.59)
