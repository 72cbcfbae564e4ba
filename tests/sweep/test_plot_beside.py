"""`vitjax plot DIR --beside OTHER`: a new arm's runs drawn beside the runs it is compared with."""
import csv
import subprocess
import sys

from vitjax.sweep import plots, table


def _row(family, size, seed, accuracy):
    return {"name": f"{family}_n{size}_s{seed}", "status": "finished", "family": family, "model": family,
            "train_size": size, "seed": seed, "accuracy": accuracy, "accuracy_from": "best_val",
            "error": "", "overrides": {},
            "config": {"model_name": family, "seed": seed, "data": {"train_size": size, "subset_seed": seed}}}


def _sweep(path, rows):
    path.mkdir()
    table.write(str(path), rows)
    return str(path)


def test_beside_draws_both_sweeps_runs_once_each_under_the_given_title(tmp_path):
    new = _sweep(tmp_path / "swin", [_row("swin", n, s, 0.7) for n in (100, 1000) for s in (0, 1)])
    # The compared sweep repeats one of the new arm's names: the new arm's own row is the one drawn.
    old = _sweep(tmp_path / "plain", [_row("vit", n, s, 0.6) for n in (100, 1000) for s in (0, 1)] +
                 [_row("swin", 100, 0, 0.1)])
    result = plots.plot(new, str(tmp_path / "out"), beside=[old], title="Swin beside the ViT")
    assert result["runs"] == 8 and "data_scaling" in result["written"]
    with open(tmp_path / "out" / "data_scaling.csv") as f:
        means = {(r["family"], r["train_size"]): float(r["accuracy_mean"]) for r in csv.DictReader(f)}
    assert means == {("swin", "100"): 0.7, ("swin", "1000"): 0.7, ("vit", "100"): 0.6, ("vit", "1000"): 0.6}


def test_a_missing_beside_directory_is_named_before_drawing(tmp_path):
    new = _sweep(tmp_path / "swin", [_row("swin", n, 0, 0.7) for n in (100, 1000)])
    run = subprocess.run([sys.executable, "-m", "vitjax", "plot", new, "--beside", str(tmp_path / "nowhere")],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "nowhere is not a directory" in run.stderr
    assert not (tmp_path / "swin" / "figures").exists()


def test_two_arms_of_one_model_are_told_apart_by_their_run_names_and_colours():
    """deit and deitaug students share a model name: their lines say which arm, in colours no family uses."""
    from vitjax.sweep import aggregate

    def arm(prefix, lr):
        rows = [{**_row("deit", n, s, 0.7), "name": f"{prefix}_n{n}_s{s}"} for n in (100, 1000) for s in (0, 1)]
        for r in rows:
            r["config"]["lr"] = lr
        return rows
    rows = arm("deit", 1e-3) + arm("deitaug", 1e-2) + [_row("bit", n, s, 0.8) for n in (100, 1000) for s in (0, 1)]
    lines = plots._groups(aggregate.groups(rows), "train_size", ("data.train_size",))
    labels = {label: colour for label, colour, _ in lines}
    assert labels == {"bit": "tab:orange", "deit (deit)": "tab:purple", "deit (deitaug)": "tab:green"}


def test_the_compute_figure_gives_two_arms_of_one_model_their_own_points_and_front():
    from vitjax.sweep import aggregate

    def run(prefix, family, model, n, s, lr):
        r = {**_row(family, n, s, 0.7), "name": f"{prefix}_n{n}_s{s}", "model": model, "train_flops": 1e9 * n}
        r["config"] = {**r["config"], "lr": lr, "model_name": model}
        return r
    # deitaug's rows first (the sweep drawn, then the one beside it): colours still follow the arm names.
    rows = [run(p, "deit", "DeiT", n, s, lr) for p, lr in (("deitaug", 1e-2), ("deit", 1e-3))
            for n in (100, 1000) for s in (0, 1)]
    # Two models of one family from one arm (a model-size sweep) stay one series: no clash of model and size.
    rows += [run("vit", "vit", m, n, s, 1e-3) for m in ("ViT-S", "ViT-L") for n in (100, 1000) for s in (0, 1)]
    series = {label: (colour, len(members)) for label, colour, _, members in
              plots._compute_series(aggregate.groups(rows))}
    assert series == {"DeiT (distilled ViT) (deit)": ("tab:purple", 2),
                      "DeiT (distilled ViT) (deitaug)": ("tab:green", 2), "ViT": ("tab:blue", 4)}
