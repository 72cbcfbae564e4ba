"""Sweeps: many training runs from one definition file, a results table, and the paper's figures.

    spec.py     read and check a sweep file (experiments/<file>.py[:arg] defining get_runs(arg))
    runner.py   run each run in its own subprocess and sub-workdir; skip finished, resume interrupted
    runlock.py  the OS lock a sweep holds on a run while it works on it (DIR/<name>/sweep.lock)
    stale.py    whether a run was trained with the config the sweep now gives it; setting stale ones aside
    table.py    DIR/results.csv and DIR/results.json from the runs' workdirs
    plots.py    accuracy vs data size, vs compute, and patch size figures (`vitjax plot`)
    commands.py the `vitjax sweep` and `vitjax plot` command lines
"""
