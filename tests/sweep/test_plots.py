"""vitjax/sweep/plots.py: tick labels a reader can read."""


def test_value_ticks_leave_out_values_too_close_to_read():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vitjax.sweep import plots
    fig, ax = plt.subplots()
    plots._value_ticks(ax, [2.38e12, 2.95e12, 6.82e12, 8.78e12, 25.2e12, 28.3e12], plots.FLOP_UNITS)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2.38T", "6.82T", "25.2T"]
    plt.close(fig)
