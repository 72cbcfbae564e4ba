"""What a `vitjax` command prints besides its own lines: the stack's warnings that tell a user nothing are
dropped, every other warning stays."""
import logging

import pytest
from absl import logging as absl_logging

from vitjax import cli


def test_the_stacks_known_noise_is_dropped_and_other_warnings_kept(tmp_path, caplog):
    with pytest.raises(SystemExit):  # any command installs the filter; this one ends at once
        cli.main(["plot", str(tmp_path)])
    with caplog.at_level(logging.WARNING):
        absl_logging.warning("Given directory is read only=%s", tmp_path)  # orbax, at every read-only open
        absl_logging.warning("Variant folder %s has no %s", tmp_path, "dataset_info.json")  # tfds
        absl_logging.warning("Given directory %s is not writable", tmp_path)  # anything else gets through
    assert [r.getMessage() for r in caplog.records] == [f"Given directory {tmp_path} is not writable"]
