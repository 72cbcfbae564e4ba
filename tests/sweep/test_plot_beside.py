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


def _arm(family, prefix, lr):
    """One arm's runs of `family` at two sizes and two seeds, named after the arm, told apart by `lr`."""
    rows = [{**_row(family, n, s, 0.7), "name": f"{prefix}_n{n}_s{s}"} for n in (100, 1000) for s in (0, 1)]
    for r in rows:
        r["config"]["lr"] = lr
    return rows


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


def test_a_directory_without_finished_runs_is_an_error_and_draws_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    run = subprocess.run([sys.executable, "-m", "vitjax", "plot", str(tmp_path / "empty")],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "vitjax plot: error: no finished runs in" in run.stderr, run.stderr
    assert "skipped" not in run.stdout and not (tmp_path / "empty" / "figures").exists()


def test_two_arms_of_one_model_are_told_apart_by_their_run_names_and_colours():
    """deit and deitaug students share a model name: their lines say which arm, in colours no family uses."""
    from vitjax.sweep import aggregate

    rows = _arm("deit", "deit", 1e-3) + _arm("deit", "deitaug", 1e-2) + [_row("bit", n, s, 0.8) for n in (100, 1000)
                                                                       for s in (0, 1)]
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


def test_the_family_colour_goes_to_the_familys_own_arm_whatever_the_order():
    """Fine-tuned ViTs (dino_ft, mae_ft) beside the plain ViT: the plain one keeps the ViT's blue."""
    from vitjax.sweep import aggregate

    rows = _arm("vit", "dino_ft", 1e-3) + _arm("vit", "mae_ft", 2e-3) + _arm("vit", "vit", 3e-3)
    colours = {label: colour for label, colour, _ in
               plots._groups(aggregate.groups(rows), "train_size", ("data.train_size",))}
    assert colours["vit (vit)"] == "tab:blue" and "tab:blue" not in (colours["vit (dino_ft)"], colours["vit (mae_ft)"])


def test_compute_fronts_are_taken_within_one_training_set_size(tmp_path):
    rows = []
    for n, vit_flops, bit_flops, vit_acc, bit_acc in ((100, 2e9, 3e9, 0.6, 0.7), (1000, 1e9, 4e9, 0.9, 0.8)):
        for s in (0, 1):
            rows += [{**_row("vit", n, s, vit_acc), "train_flops": vit_flops},
                     {**_row("bit", n, s, bit_acc), "train_flops": bit_flops}]
    out = tmp_path / "out"
    out.mkdir()
    plots.compute(rows, str(out))
    with open(out / "compute.csv") as f:
        pareto = {(r["family"], r["train_size"]): r["pareto"] for r in csv.DictReader(f)}
    # Each size's points are the only ones of their series there: each is its own front. One front across
    # sizes would have dropped the 100-image ViT (2 GFLOP, 60%: the 1,000-image ViT does better with less).
    assert set(pareto.values()) == {"True"}


def test_a_line_is_broken_where_it_has_no_run():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    members = [{"train_size": n, "accuracy_mean": 0.5} for n in (100, 1000, 100_000)]
    plots._gapped_line(ax, [100, 1000, 10_000, 100_000], members, "accuracy")
    ys = ax.lines[0].get_ydata()
    assert list(ys[:2]) == [50.0, 50.0] and ys[2] != ys[2] and ys[3] == 50.0  # NaN at 10k: no segment there
    plt.close(fig)


def test_runs_without_a_test_accuracy_are_named_not_dropped_in_silence(tmp_path):
    """A dual encoder (zero-shot accuracy) or a SAM run (mIoU) beside classifiers: no figure can draw it."""
    caption_run = {**_row("dual_encoder", 100, 0, None), "name": "siglip_b32_s0"}
    sweep = _sweep(tmp_path / "mixed", [_row("vit", n, 0, 0.7) for n in (100, 1000)] + [caption_run])
    result = plots.plot(sweep, str(tmp_path / "out"))
    assert result["runs"] == 3 and result["without_accuracy"] == ["siglip_b32_s0"]
    run = subprocess.run([sys.executable, "-m", "vitjax", "plot", sweep, "--out", str(tmp_path / "cli")],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "1 of them has no test accuracy" in run.stdout and "siglip_b32_s0" in run.stdout
