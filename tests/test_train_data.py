"""Training data: one seeded split and batch order, identical for every framework; the
imagefolder reader decodes a tiny tree and names the path when it cannot."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from fwbench.training import data


def test_digits_split_is_deterministic_and_disjoint():
    first = data.load_digits(val_fraction=0.2, seed=3)
    again = data.load_digits(val_fraction=0.2, seed=3)
    assert first.fingerprint() == again.fingerprint()
    assert len(first.x_train) + len(first.x_val) == 1797
    assert len(first.x_val) == round(1797 * 0.2)
    assert first.x_train.shape[1:] == (1, 8, 8) and first.x_train.dtype == np.float32
    train, val = data.split_indices(1797, 0.2, seed=3)
    assert set(train).isdisjoint(val) and len(set(train) | set(val)) == 1797


def test_digits_split_changes_with_the_seed():
    assert (
        data.load_digits(0.2, seed=0).fingerprint() != data.load_digits(0.2, seed=1).fingerprint()
    )


def test_digits_are_standardized_on_the_training_split():
    digits = data.load_digits(0.2, seed=0)
    assert abs(float(digits.x_train.mean())) < 1e-5
    assert float(digits.x_train.std()) == pytest.approx(1.0, rel=1e-5)
    assert set(np.unique(digits.y_train)) == set(range(10))


def test_sample_caps_take_the_first_samples_of_each_split():
    full = data.load_digits(0.2, seed=0)
    capped = data.load_digits(0.2, seed=0, max_train_samples=50, max_val_samples=20)
    assert len(capped.x_train) == 50 and len(capped.x_val) == 20
    np.testing.assert_array_equal(capped.y_train, full.y_train[:50])


def test_epoch_order_is_a_seeded_permutation_per_epoch_without_the_last_partial_batch():
    order = data.epoch_order(n_train=10, batch_size=4, epoch=0, seed=0)
    assert order.shape == (2, 4)
    assert len(set(order.ravel())) == 8
    np.testing.assert_array_equal(order, data.epoch_order(10, 4, epoch=0, seed=0))
    assert not np.array_equal(order, data.epoch_order(10, 4, epoch=1, seed=0))


def test_epoch_order_rejects_a_batch_larger_than_the_data():
    with pytest.raises(ValueError, match="batch_size=16"):
        data.epoch_order(n_train=10, batch_size=16, epoch=0, seed=0)


def test_split_rejects_a_fraction_that_empties_a_split():
    with pytest.raises(ValueError, match="val_fraction=0.01"):
        data.split_indices(10, 0.01, seed=0)


def test_padded_batches_keep_one_shape_and_count_the_real_samples():
    x = np.arange(5 * 2, dtype=np.float32).reshape(5, 2)
    chunks = list(data.padded_batches(x, 2))
    assert [valid for _, valid in chunks] == [2, 2, 1]
    assert all(batch.shape == (2, 2) for batch, _ in chunks)
    np.testing.assert_array_equal(chunks[-1][0][0], x[4])


def test_to_layout_moves_channels_last():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    nhwc = data.to_layout(x, "NHWC")
    assert nhwc.shape == (2, 4, 5, 3)
    assert nhwc[1, 2, 3, 0] == x[1, 0, 2, 3]
    with pytest.raises(ValueError, match="'NCWH'"):
        data.to_layout(x, "NCWH")


def _write_tree(root, sizes):
    """root/<class>/<i>.(png|jpg) with solid colors: class a red, class b blue."""
    colors = {"a": (255, 0, 0), "b": (0, 0, 255)}
    for name, color in colors.items():
        (root / name).mkdir(parents=True)
        for i, size in enumerate(sizes):
            suffix = ".png" if i % 2 == 0 else ".jpg"
            Image.new("RGB", size, color).save(root / name / f"{i}{suffix}")
    (root / "a" / "notes.txt").write_text("not an image")
    Image.new("L", (12, 9), 128).save(root / "b" / "gray.png")


def test_imagefolder_decodes_resizes_and_normalizes_a_tiny_tree(tmp_path):
    _write_tree(tmp_path, sizes=[(20, 10), (10, 30), (16, 16)])
    ds = data.load_image_folder(
        tmp_path, image_size=8, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], val_fraction=0.25, seed=0
    )
    assert ds.classes == 2
    assert len(ds.x_train) + len(ds.x_val) == 7  # 3 in a, 3 + 1 grayscale in b
    assert ds.image_shape == (3, 8, 8)
    images = np.concatenate([ds.x_train, ds.x_val])
    labels = np.concatenate([ds.y_train, ds.y_val])
    red = images[labels == 0]
    # Red (1, 0, 0) normalized with mean 0.5, std 0.5 → (1, -1, -1) in every pixel (jpg: ±).
    np.testing.assert_allclose(red[:, 0], 1.0, atol=0.05)
    np.testing.assert_allclose(red[:, 2], -1.0, atol=0.05)


def test_imagefolder_caps_images_per_class(tmp_path):
    _write_tree(tmp_path, sizes=[(8, 8)] * 3)
    paths, labels, classes = data.list_image_folder(tmp_path, max_images_per_class=2)
    assert classes == ["a", "b"]
    assert list(labels) == [0, 0, 1, 1]


def test_imagefolder_names_a_missing_root(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        data.list_image_folder(missing)


def test_imagefolder_rejects_an_empty_root_setting():
    with pytest.raises(FileNotFoundError, match="root is empty"):
        data.list_image_folder("")


def test_imagefolder_names_a_root_without_classes(tmp_path):
    with pytest.raises(ValueError, match=f"{tmp_path}.*no class subdirectories"):
        data.list_image_folder(tmp_path)


def test_imagefolder_names_a_class_without_images(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("no images here")
    with pytest.raises(ValueError, match="empty.*holds no"):
        data.list_image_folder(tmp_path)
