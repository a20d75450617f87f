"""Training datasets, prepared once in numpy (framework-free) and fed identically to every
framework: the same normalized arrays, the same seeded train/validation split, the same batch
order (a seeded permutation per epoch).

Images are float32 NCHW, labels int32 class indices.
- `digits`: scikit-learn's bundled 8×8 digits (1797 images, 10 classes, offline); pixels / 16,
  then standardized with the mean and standard deviation of the training split.
- `imagefolder`: an ImageNet-style tree root/<class>/<image>; classes are the sorted
  subdirectory names. Each image is decoded with PIL, converted to RGB, resized so its shorter
  side is `image_size` (bilinear), center-cropped to image_size × image_size, scaled to [0, 1]
  and normalized per channel with the configured mean and std. The whole set is decoded into
  memory: cap it with `max_images_per_class` for big trees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fwbench.rng import seeded_rng

DATASETS = ("digits", "imagefolder")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


@dataclass(frozen=True)
class Dataset:
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    classes: int

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(channels, height, width)."""
        _, channels, height, width = self.x_train.shape
        return channels, height, width

    def fingerprint(self) -> str:
        """SHA-256 over every array: equal fingerprints mean identical data and split."""
        digest = hashlib.sha256()
        for array in (self.x_train, self.y_train, self.x_val, self.y_val):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()


def split_indices(count: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded permutation of range(count) cut into (train, validation) index arrays."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    n_val = round(count * val_fraction)
    if n_val < 1 or n_val >= count:
        raise ValueError(
            f"val_fraction={val_fraction} of {count} samples leaves an empty train or "
            "validation split"
        )
    order = seeded_rng(seed, "split").permutation(count)
    return order[n_val:], order[:n_val]


def epoch_order(n_train: int, batch_size: int, epoch: int, seed: int) -> np.ndarray:
    """Sample indices for every step of `epoch`, shape (steps, batch_size): a seeded
    permutation per epoch; the last incomplete batch is dropped so every step has one shape."""
    steps = n_train // batch_size
    if steps < 1:
        raise ValueError(f"batch_size={batch_size} is larger than the {n_train} training samples")
    order = seeded_rng(seed, "batches", epoch).permutation(n_train)
    return order[: steps * batch_size].reshape(steps, batch_size)


def batches(
    x: np.ndarray, y: np.ndarray, order: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(images, labels) per row of `order`, gathered in numpy."""
    for indices in order:
        yield x[indices], y[indices]


def padded_batches(x: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, int]]:
    """Consecutive batches of `x`, the last one zero-padded to batch_size so that a compiled
    function sees one shape; yields (batch, number of real samples)."""
    for start in range(0, len(x), batch_size):
        chunk = x[start : start + batch_size]
        valid = len(chunk)
        if valid < batch_size:
            pad = np.zeros((batch_size - valid, *chunk.shape[1:]), dtype=chunk.dtype)
            chunk = np.concatenate([chunk, pad])
        yield chunk, valid


def to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """NCHW images in `layout` ("NCHW" or "NHWC"), contiguous."""
    if layout == "NCHW":
        return np.ascontiguousarray(x)
    if layout == "NHWC":
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    raise ValueError(f"unknown image layout {layout!r}; known: NCHW, NHWC")


def _subset(indices: np.ndarray, limit: int | None) -> np.ndarray:
    return indices if limit is None else indices[:limit]


def load_digits(
    val_fraction: float,
    seed: int,
    max_train_samples: int | None = None,
    max_val_samples: int | None = None,
) -> Dataset:
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    images = (bunch.images / 16.0)[:, None, :, :]
    labels = bunch.target.astype(np.int32)
    train, val = split_indices(len(images), val_fraction, seed)
    train, val = _subset(train, max_train_samples), _subset(val, max_val_samples)
    mean, std = images[train].mean(), images[train].std()
    images = ((images - mean) / std).astype(np.float32)
    return Dataset("digits", images[train], labels[train], images[val], labels[val], 10)


def _decode(path: Path, image_size: int) -> np.ndarray:
    """RGB float image (image_size, image_size, 3) in [0, 1]: shorter side resized to
    image_size, then center-cropped."""
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        width, height = image.size
        scale = image_size / min(width, height)
        resized = (max(image_size, round(width * scale)), max(image_size, round(height * scale)))
        image = image.resize(resized, Image.Resampling.BILINEAR)
        left, top = (resized[0] - image_size) // 2, (resized[1] - image_size) // 2
        image = image.crop((left, top, left + image_size, top + image_size))
        return np.asarray(image, dtype=np.float32) / 255.0


def list_image_folder(
    root: str | Path, max_images_per_class: int | None = None
) -> tuple[list[Path], np.ndarray, list[str]]:
    """(image paths, int32 labels, class names) of an ImageNet-style tree, in sorted order."""
    if not str(root).strip():
        raise FileNotFoundError("imagefolder root is empty: set train.imagefolder.root")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"imagefolder root {str(root)!r} is not a directory")
    class_dirs = sorted(path for path in root.iterdir() if path.is_dir())
    if not class_dirs:
        raise ValueError(f"imagefolder root {str(root)!r} has no class subdirectories")
    paths: list[Path] = []
    labels: list[int] = []
    for label, class_dir in enumerate(class_dirs):
        images = sorted(
            path
            for path in class_dir.iterdir()
            if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES
        )
        if not images:
            raise ValueError(
                f"imagefolder class directory {str(class_dir)!r} holds no "
                f"{'/'.join(IMAGE_SUFFIXES)} images"
            )
        images = images[:max_images_per_class]
        paths += images
        labels += [label] * len(images)
    return paths, np.asarray(labels, dtype=np.int32), [path.name for path in class_dirs]


def load_image_folder(
    root: str | Path,
    image_size: int,
    mean: Sequence[float],
    std: Sequence[float],
    val_fraction: float,
    seed: int,
    max_images_per_class: int | None = None,
    max_train_samples: int | None = None,
    max_val_samples: int | None = None,
) -> Dataset:
    paths, labels, class_names = list_image_folder(root, max_images_per_class)
    train, val = split_indices(len(paths), val_fraction, seed)
    train, val = _subset(train, max_train_samples), _subset(val, max_val_samples)
    keep = np.concatenate([train, val])
    decoded = np.stack([_decode(paths[i], image_size) for i in keep])
    normalized = (decoded - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    images = np.ascontiguousarray(normalized.transpose(0, 3, 1, 2), dtype=np.float32)
    n_train = len(train)
    return Dataset(
        "imagefolder",
        images[:n_train],
        labels[train],
        images[n_train:],
        labels[val],
        len(class_names),
    )


def load_dataset(name: str, settings: dict, seed: int) -> Dataset:
    """The dataset `name` as the validated `train` config section describes it."""
    common = {
        "val_fraction": settings["val_fraction"],
        "seed": seed,
        "max_train_samples": settings["max_train_samples"],
        "max_val_samples": settings["max_val_samples"],
    }
    if name == "digits":
        return load_digits(**common)
    if name == "imagefolder":
        folder = settings["imagefolder"]
        return load_image_folder(
            folder["root"],
            folder["image_size"],
            folder["mean"],
            folder["std"],
            max_images_per_class=folder["max_images_per_class"],
            **common,
        )
    raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
