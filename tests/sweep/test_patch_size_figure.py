"""The patch-size figure: one line per training set, labelled with its size when there are several."""
import csv

from vitjax.sweep import plots


def _row(size, patch, seed):
    return {"name": f"vit_p{patch}_n{size}_s{seed}", "status": "finished", "family": "vit",
            "model": f"ViT w64 d6 p{patch}", "train_size": size, "seed": seed, "patch_size": patch,
            "accuracy": 0.8 + 0.01 * seed, "accuracy_from": "best_val", "img_per_sec": 1000.0 / patch,
            "image_shape": [28, 28, 1],
            "config": {"model_name": "vit", "seed": seed, "model": {"patch_size": patch},
                       "data": {"train_size": size, "subset_seed": seed}}}


def _legend(rows, tmp_path, monkeypatch):
    figures, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path: (figures.append(fig), save(plt, fig, path))[1])
    _, table = plots.patch_size(rows, str(tmp_path))
    with open(table) as f:
        lines = sorted((r["line"], int(r["patch_size"])) for r in csv.DictReader(f))
    return sorted(t.get_text() for t in figures[0].axes[0].get_legend().get_texts()), lines


def test_lines_of_different_training_sets_say_their_size(tmp_path, monkeypatch):
    rows = [_row(size, patch, seed) for size, patches in ((55_000, (14, 7)), (5_500, (4, 2)))
            for patch in patches for seed in (0, 1)]
    legend, lines = _legend(rows, tmp_path, monkeypatch)
    assert legend == ["ViT w64 d6, 5,500 images", "ViT w64 d6, 55,000 images"]
    assert lines == [("ViT w64 d6, 5,500 images", 2), ("ViT w64 d6, 5,500 images", 4),
                     ("ViT w64 d6, 55,000 images", 7), ("ViT w64 d6, 55,000 images", 14)]


def test_one_training_set_keeps_the_model_name_alone(tmp_path, monkeypatch):
    legend, _ = _legend([_row(55_000, patch, seed) for patch in (14, 7) for seed in (0, 1)], tmp_path, monkeypatch)
    assert legend == ["ViT w64 d6"]
