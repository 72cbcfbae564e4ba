"""tfds datasets: find the builder, prepare it (explicitly, or Fashion-MNIST offline on first use), describe
and load splits.

Nothing here downloads unless `prepare(..., download=True)` is called: training on a dataset that is not
prepared in `data_dir` fails with a message saying how to prepare it. Fashion-MNIST is the exception that
needs no network: it is prepared from the Debian package's files (`OfflineFashionMNIST`, at the end).
"""

import difflib
import os

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.image_classification import mnist

from vitjax.data.config import DataError, MissingDataError


def resolve_data_dir(data_dir):
    """None -> $TFDS_DATA_DIR or ~/tensorflow_datasets (the same default tfds uses)."""
    if data_dir:
        return os.path.expanduser(data_dir)
    return os.environ.get("TFDS_DATA_DIR") or os.path.expanduser("~/tensorflow_datasets")


def _base_name(name):
    """'cifar10:3.0.2' or 'imagenet2012/subset' -> 'cifar10' / 'imagenet2012'."""
    return name.split(":")[0].split("/")[0]


def _unknown(name):
    known = tfds.list_builders(with_community_datasets=False)
    close = difflib.get_close_matches(_base_name(name), known, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return DataError(
        f'Unknown dataset name {name!r}: not a tfds dataset, not a prepared tfds dataset in data_dir '
        f'(<data_dir>/{_base_name(name)}/<version>/dataset_info.json), and not "synthetic", '
        f'"folder:/path" or "npz:/file.npz".{hint}'
    )


def _prepared_directory(name, data_dir):
    """DATA_DIR/<name>[/<config>]/<version>/ holding a prepared tfds dataset (its dataset_info.json),
    or None: the version after ':' in `name`, else the highest one there. tfds writes this layout, and
    `tfds.builder_from_directory` reads it without the dataset's builder code."""
    from etils import epath  # tfds's own path layer: data_dir may be gs://

    base, _, version = name.partition(":")
    root = epath.Path(data_dir).joinpath(*base.split("/"))
    if not root.is_dir():
        return None
    versions = [version] if version else [p.name for p in root.iterdir() if (p / "dataset_info.json").exists()]
    versions = [v for v in versions if (root / v / "dataset_info.json").exists()]
    if not versions:
        return None
    return str(root / max(versions, key=tfds.core.Version))


def _builder(name, data_dir):
    """The registered tfds builder of `name`, or for a name tfds does not register (ImageNet-21k, a
    dataset the user built) the read-only builder of its prepared directory in data_dir."""
    if _base_name(name) not in tfds.list_builders(with_community_datasets=False):
        prepared = _prepared_directory(name, resolve_data_dir(data_dir))
        if prepared is None:
            raise _unknown(name)
        return tfds.builder_from_directory(prepared)
    try:
        return tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError:
        raise _unknown(name) from None


def prepared_builder(name, data_dir):
    """The tfds builder of `name`, with its data on disk in data_dir; never downloads.

    Fashion-MNIST is prepared offline from the Debian files the first time it is needed.
    """
    data_dir = resolve_data_dir(data_dir)
    if name == "fashion_mnist":
        builder = OfflineFashionMNIST(data_dir=data_dir)
        if not builder.is_prepared():
            prepare_offline(data_dir)
    builder = _builder(name, data_dir)
    if not builder.is_prepared():
        raise MissingDataError(
            f"tfds dataset {name!r} is not prepared in {data_dir}. Training never downloads; prepare it first: "
            f"{_how_to_prepare(builder, name, data_dir)}; or point data_dir / $TFDS_DATA_DIR at a directory "
            f"where it is prepared."
        )
    return builder


def _manual_dir(data_dir):
    return os.path.join(data_dir, "downloads", "manual")  # where tfds looks for files it cannot download


def _how_to_prepare(builder, name, data_dir) -> str:
    """The command that prepares `name`, and for a dataset tfds cannot download where its files go."""
    instructions = getattr(builder, "MANUAL_DOWNLOAD_INSTRUCTIONS", None)
    if instructions:
        return (f"tfds cannot download it: put its files in {_manual_dir(data_dir)} (tfds: "
                f"{' '.join(instructions.split())[:300]}), then run `vitjax data prepare {name}`")
    return f"`vitjax data prepare {name} --download` downloads and prepares it (needs internet)"


def prepare(name, data_dir=None, download=False):
    """Makes `name` loadable from data_dir and returns that directory.

    Fashion-MNIST: offline from the Debian package unless download=True. A dataset tfds cannot download
    (imagenet2012) is prepared offline from its files in <data_dir>/downloads/manual. Other datasets need
    download=True: the ordinary tfds download_and_prepare (network). Raises MissingDataError saying which
    of these to do when it cannot.
    """
    if name == "synthetic" or name.startswith(("folder:", "npz:")):
        raise DataError(f"{name!r} is read directly; only tfds datasets need preparing.")
    data_dir = resolve_data_dir(data_dir)
    if name == "fashion_mnist" and not download:
        prepared_builder(name, data_dir)
        return data_dir
    builder = _builder(name, data_dir)
    if builder.is_prepared():
        return data_dir
    if getattr(builder, "MANUAL_DOWNLOAD_INSTRUCTIONS", None):
        manual_dir = _manual_dir(data_dir)
        if not os.path.isdir(manual_dir) or not os.listdir(manual_dir):
            raise MissingDataError(f"tfds dataset {name!r} is not prepared in {data_dir} and "
                                   f"{_how_to_prepare(builder, name, data_dir)}")
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual_dir))
    elif download:
        builder.download_and_prepare()
    else:
        raise MissingDataError(f"tfds dataset {name!r} is not prepared in {data_dir}: "
                               f"{_how_to_prepare(builder, name, data_dir)}")
    return data_dir


def _keys(builder, name):
    keys = builder.info.supervised_keys
    if not keys or len(keys) != 2:
        raise DataError(
            f"tfds dataset {name!r} has no (image, label) supervised keys; it cannot be used for "
            f"classification here."
        )
    image_key, label_key = keys
    label = builder.info.features[label_key]
    if not isinstance(label, tfds.features.ClassLabel):
        raise DataError(f"tfds dataset {name!r}: label feature {label_key!r} is not a class label.")
    return image_key, label_key


def _split_size(builder, name, split):
    try:
        return builder.info.splits[split].num_examples
    except (KeyError, ValueError) as e:
        raise DataError(
            f"tfds dataset {name!r} has no split {split!r} "
            f"(splits: {sorted(builder.info.splits.keys())}): {e}"
        ) from None


def describe(name, data_dir, split):
    """(num_examples, num_classes, raw image shape with None for varying sizes) from metadata alone."""
    builder = prepared_builder(name, data_dir)
    image_key, label_key = _keys(builder, name)
    num = _split_size(builder, name, split)
    shape = tuple(builder.info.features[image_key].shape)
    return num, builder.info.features[label_key].num_classes, shape


def first_examples(name, data_dir, split, size):
    """The tfds split string of the first `size` examples of `split` (itself possibly a slice, e.g.
    'train[51200:]' -> 'train[51200:51200+size]'): tfds cannot slice a slice, so `split` is made absolute
    against the prepared builder's split sizes first. DataError when it holds fewer than `size`."""
    builder = prepared_builder(name, data_dir)
    num = _split_size(builder, name, split)
    if size > num:
        raise DataError(f"train_size={size} is larger than tfds {name!r} split {split!r} ({num} examples).")
    parts = tfds.core.ReadInstruction.from_spec(split).to_absolute(builder.info.splits)
    if len(parts) != 1:
        raise DataError(f"train_size needs train_split to be one split or one slice of it, not {split!r}.")
    start = parts[0].from_ or 0
    return f"{parts[0].splitname}[{start}:{start + size}]"


def fits_in_memory(name, data_dir, split, max_gb):
    num, _, shape = describe(name, data_dir, split)
    if None in shape:
        return False  # Images of varying size (e.g. ImageNet) are not decoded into one array.
    return num * int(np.prod(shape)) <= max_gb * 2**30


def load(name, data_dir, split):
    """(uint8 images [N, H, W, C], int labels [N], num_classes): the whole split decoded into memory."""
    builder = prepared_builder(name, data_dir)
    _keys(builder, name)
    _split_size(builder, name, split)
    # Iterating in chunks decodes about twice as fast here as tfds's batch_size=-1 (one giant batch).
    chunks = list(tfds.as_numpy(builder.as_dataset(split=split, as_supervised=True).batch(4096)))
    images = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros((0, 0, 0, 0), np.uint8)
    labels = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros((0,), np.int64)
    return images, labels, builder.info.features[builder.info.supervised_keys[1]].num_classes


def as_dataset(name, data_dir, split, shuffle_seed=None):
    """A tf.data.Dataset of (image, label) over `split`, for streaming; shuffles files when a seed is given."""
    builder = prepared_builder(name, data_dir)
    _keys(builder, name)
    read_config = tfds.ReadConfig(shuffle_seed=shuffle_seed)
    return builder.as_dataset(
        split=split, as_supervised=True, shuffle_files=shuffle_seed is not None, read_config=read_config
    )


# Offline tfds builder for Fashion-MNIST from the Debian package `dataset-fashion-mnist`.
#
# The Debian files differ from the originals by their gzip header (the file name was stripped), so tfds's
# registered checksums never match them and the stock builder falls back to the network. This builder keeps
# tfds's Fashion-MNIST features and example generator (so the prepared data is the ordinary `fashion_mnist`
# dataset that `tfds.load` reads) and only swaps where the raw files come from: the manual dir, which tfds
# does not checksum.

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
RAW_FILES = {
    "train_data": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_data": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
NUM_TRAIN, NUM_TEST = 60_000, 10_000


class OfflineFashionMNIST(mnist.FashionMNIST, skip_registration=True):
    """tfds's FashionMNIST reading its four raw files from `manual_dir` instead of the internet."""

    # Same name and version as the stock builder, so `tfds.load('fashion_mnist')` finds what this prepares.
    name = "fashion_mnist"
    # tfds refuses to hand out `dl_manager.manual_dir` unless the builder documents what goes there.
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        f"Install the Debian package `dataset-fashion-mnist` (files in {DEBIAN_DIR}) or put "
        + ", ".join(RAW_FILES.values())
        + " in the manual dir."
    )

    def _split_generators(self, dl_manager):
        manual = {key: os.path.join(dl_manager.manual_dir, fname) for key, fname in RAW_FILES.items()}
        # The example generator wants decompressed idx files; `extract` gunzips into the extraction cache.
        files = dl_manager.extract(manual)
        return [
            tfds.core.SplitGenerator(
                name=tfds.Split.TRAIN,
                gen_kwargs=dict(
                    num_examples=NUM_TRAIN, data_path=files["train_data"], label_path=files["train_labels"]
                ),
            ),
            tfds.core.SplitGenerator(
                name=tfds.Split.TEST,
                gen_kwargs=dict(
                    num_examples=NUM_TEST, data_path=files["test_data"], label_path=files["test_labels"]
                ),
            ),
        ]

    def _generate_examples(self, num_examples, data_path, label_path):
        """tfds's examples, with the PNGs encoded in one traced TF call instead of one eager call per image.

        The stock generator hands tfds numpy images, which it encodes one by one (about 0.3 ms each here: most
        of the preparation time). tfds stores bytes it is given as they are, so the dataset is the same.
        """
        images = mnist._extract_mnist_images(data_path, num_examples)  # pylint: disable=protected-access
        labels = mnist._extract_mnist_labels(label_path, num_examples)  # pylint: disable=protected-access
        pngs = np.concatenate([_encode_pngs(images[i : i + 10_000]) for i in range(0, num_examples, 10_000)])
        for index, (png, label) in enumerate(zip(pngs, labels)):
            yield index, {"image": png, "label": label}


@tf.function(autograph=False)
def _encode_pngs(images):
    return tf.map_fn(tf.io.encode_png, images, fn_output_signature=tf.string)


def missing_files(raw_dir):
    return [f for f in RAW_FILES.values() if not os.path.exists(os.path.join(raw_dir, f))]


def prepare_offline(data_dir, raw_dir=DEBIAN_DIR):
    """Writes the tfds `fashion_mnist` dataset into `data_dir` from the raw files in `raw_dir`; no network."""
    missing = missing_files(raw_dir)
    if missing:
        raise MissingDataError(
            f"Fashion-MNIST raw files {missing} not found in {raw_dir}. Offline: `apt-get install "
            f"dataset-fashion-mnist` (Debian/Ubuntu) puts them there. With internet access: "
            f"`vitjax data prepare fashion_mnist --download` runs the ordinary tfds download."
        )
    builder = OfflineFashionMNIST(data_dir=data_dir)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=raw_dir))
    return builder
