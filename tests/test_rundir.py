"""A run's directory: its files written whole or not at all, the config claim, history, reports."""
import os

import ml_collections
import pytest

from vitjax import rundir


def test_write_json_replaces_the_file_whole_or_not_at_all(tmp_path):
    rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 1})
    with pytest.raises(TypeError):
        rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 2, "bad": object()})  # fails mid-write
    assert rundir.read_json(str(tmp_path), rundir.EVAL) == {"step": 1}
    rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 3})
    assert rundir.read_json(str(tmp_path), rundir.EVAL) == {"step": 3}
    assert rundir.read_json(str(tmp_path), rundir.RESULTS) is None


def test_claim_records_the_config_and_refuses_another(tmp_path):
    run_dir = str(tmp_path / "run")
    config = ml_collections.ConfigDict({"lr": 0.1, "model": {"depth": 2}})
    rundir.claim(run_dir, config, force=False)
    assert rundir.load_config(run_dir).model.depth == 2
    rundir.claim(run_dir, config, force=False)  # the same config resumes
    config.model.depth = 4
    with pytest.raises(ValueError, match=r"model.depth: 2 -> 4\n.*--force"):
        rundir.claim(run_dir, config, force=False)
    rundir.claim(run_dir, config, force=True)
    assert rundir.load_config(run_dir).model.depth == 4


def test_load_config_of_a_directory_that_is_no_run(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config.json not found: .* is not a vitjax run directory"):
        rundir.load_config(str(tmp_path))


# --- Whole files, history, metrics once, one trainer per run -------------------------------------

def test_write_json_syncs_the_data_before_the_rename_and_the_rename_after(tmp_path, monkeypatch):
    events, fsync, replace = [], os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda src, dst: (events.append(("replace", str(dst))), replace(src, dst))[1])
    rundir.write_json(str(tmp_path), rundir.CONFIG, {"lr": 0.1})
    path = str(tmp_path / rundir.CONFIG)
    (_, synced), renamed, directory = events
    assert os.path.dirname(synced) == str(tmp_path) and synced != path  # the temporary file, beside it
    assert renamed == ("replace", path) and directory == ("fsync", str(tmp_path))
    assert os.listdir(tmp_path) == [rundir.CONFIG]  # no temporary file left behind


@pytest.mark.parametrize("text, what", [("", "it is empty"), ('{"lr": 0.', "it is not JSON"),
                                        ("[]", r"it holds \[\], JSON but not an object"), ("null", "it holds null")])
def test_a_damaged_config_is_named_with_its_fix(tmp_path, text, what):
    (tmp_path / rundir.CONFIG).write_text(text)
    with pytest.raises(rundir.DamagedFileError, match=rf"{tmp_path}/config.json is damaged: {what}.* Fix: .*--force"):
        rundir.load_config(str(tmp_path))


def test_claim_leaves_an_unchanged_config_alone(tmp_path):
    config = ml_collections.ConfigDict({"lr": 0.1})
    rundir.claim(str(tmp_path), config, force=False)
    before = os.stat(tmp_path / rundir.CONFIG)
    assert rundir.claim(str(tmp_path), config, force=False) is None
    after = os.stat(tmp_path / rundir.CONFIG)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_force_keeps_the_previous_config_and_results_in_history(tmp_path):
    run_dir = str(tmp_path)
    rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.1}), force=False)
    rundir.write_json(run_dir, rundir.RESULTS, {"test_accuracy": 0.5})
    kept = rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.2}), force=True)
    assert os.path.dirname(kept) == str(tmp_path / rundir.HISTORY)
    assert rundir.read_json(kept, rundir.CONFIG) == {"lr": 0.1}
    assert rundir.read_json(kept, rundir.RESULTS) == {"test_accuracy": 0.5}
    assert rundir.read_json(run_dir, rundir.CONFIG) == {"lr": 0.2}
    assert rundir.read_results(run_dir) is None  # the run is being redone
    # A second --force keeps its own history beside the first.
    again = rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.3}), force=True)
    assert again != kept and rundir.read_json(again, rundir.CONFIG) == {"lr": 0.2}


@pytest.mark.parametrize("damaged", ["", "[]", "null"])
def test_force_replaces_a_damaged_config_and_keeps_it(tmp_path, damaged):
    (tmp_path / rundir.CONFIG).write_text(damaged)
    with pytest.raises(rundir.DamagedFileError):
        rundir.claim(str(tmp_path), ml_collections.ConfigDict({"lr": 0.1}), force=False)
    kept = rundir.claim(str(tmp_path), ml_collections.ConfigDict({"lr": 0.1}), force=True)
    assert open(os.path.join(kept, rundir.CONFIG)).read() == damaged
    assert rundir.load_config(str(tmp_path)).lr == 0.1


def test_a_report_that_cannot_be_written_is_printed_only(tmp_path, monkeypatch, capsys):
    import errno

    def read_only(path, text):
        raise OSError(errno.EROFS, "Read-only file system", path)
    monkeypatch.setattr(rundir, "replace_file", read_only)
    assert rundir.write_report(str(tmp_path), rundir.EVAL, {"test_accuracy": 0.5}) is False
    printed = capsys.readouterr().out
    assert "WARNING: could not write" in printed and "(Read-only file system); the results are only printed" in printed
    assert not (tmp_path / rundir.EVAL).exists()

