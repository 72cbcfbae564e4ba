"""Fixtures of the data tests."""
import pytest

from vitjax import data
from tests.data.offline_fashion_mnist import DEBIAN_FILES_MISSING, block_network


@pytest.fixture(scope="module")
def offline():
    """(data_dir, attempts): Fashion-MNIST prepared on first use (by get_info) into a fresh dir, no network."""
    import tempfile  # pylint: disable=import-outside-toplevel

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as data_dir:
        attempts = block_network(mp)
        if not DEBIAN_FILES_MISSING:
            info = data.get_info(dict(name="fashion_mnist", data_dir=data_dir))
            assert info == data.DataInfo(
                num_train=60_000, num_test=10_000, num_classes=10, image_shape=(28, 28, 1)
            )
        yield data_dir, attempts
        assert not attempts, f"network was tried: {attempts}"
