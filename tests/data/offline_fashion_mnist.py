"""Fashion-MNIST without a network, for the tests that read it: whether the Debian package's files are
there (a skip mark naming the package to install), and a way to make every connection attempt fail."""
import socket

import pytest

from vitjax.data import tfds_source

DEBIAN_FILES_MISSING = tfds_source.missing_files(tfds_source.DEBIAN_DIR)
needs_debian_files = pytest.mark.skipif(
    bool(DEBIAN_FILES_MISSING),
    reason=f"Debian package dataset-fashion-mnist not installed ({tfds_source.DEBIAN_DIR} lacks "
    f"{DEBIAN_FILES_MISSING}); `apt-get install dataset-fashion-mnist` to run these tests.",
)


def block_network(mp):
    """Makes every connection attempt fail; returns the list the attempts are recorded in."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args[1:] if args else kwargs)
        raise OSError("network disabled in this test")

    mp.setattr(socket.socket, "connect", lambda self, *a, **k: refuse(self, *a, **k))
    mp.setattr(socket.socket, "connect_ex", lambda self, *a, **k: refuse(self, *a, **k))
    mp.setattr(socket, "create_connection", lambda *a, **k: refuse(None, *a, **k))
    mp.setattr(socket, "getaddrinfo", lambda *a, **k: refuse(None, *a, **k))
    return attempts
