"""The ResNet spec as data: the presets are the published architectures, the weights are seeded
and complete, and bad dims are named."""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.model import resnet
from fwbench.model.resnet_reference import reference_forward


def _trainable_count(weights: dict[str, np.ndarray]) -> int:
    return sum(value.size for name, value in weights.items() if resnet.is_trainable(name))


def test_resnet50_preset_has_the_published_parameter_count():
    spec = resnet.build_resnet(resnet.PRESETS["resnet50"], 3, 224, 224, classes=1000)
    assert _trainable_count(resnet.make_weights(spec)) == 25_557_032  # torchvision resnet50
    assert spec.feature_map() == (7, 7) and spec.features == 2048
    assert sum(block.shortcut is not None for block in spec.blocks()) == 4


def test_resnet8_preset_keeps_the_digits_resolution_until_the_strided_stages():
    spec = resnet.build_resnet(resnet.PRESETS["resnet8"], 1, 8, 8, classes=10)
    assert len(spec.convs()) == 1 + 3 * 2 + 2  # stem, two convs per block, two projections
    assert spec.feature_map() == (2, 2) and spec.features == 64


def test_weights_are_seeded_and_cover_every_conv_bn_and_the_head():
    spec = resnet.build_resnet(resnet.PRESETS["resnet8"], 1, 8, 8, classes=10)
    weights, again = resnet.make_weights(spec, seed=0), resnet.make_weights(spec, seed=0)
    assert all(np.array_equal(weights[name], again[name]) for name in weights)
    assert not np.array_equal(
        weights["stem.conv.kernel"], resnet.make_weights(spec, 1)["stem.conv.kernel"]
    )
    for conv in spec.convs():
        assert weights[f"{conv.name}.kernel"].shape == (
            conv.kernel,
            conv.kernel,
            conv.cin,
            conv.cout,
        )
        assert np.all(weights[f"{conv.bn}.running_var"] == 1.0)
    assert weights["head.W"].shape == (64, 10)
    assert all(value.dtype == np.float32 for value in weights.values())


def test_reference_forward_in_eval_mode_leaves_the_running_stats_alone():
    spec = resnet.build_resnet(resnet.PRESETS["resnet8"], 1, 8, 8, classes=10)
    weights = resnet.make_weights(spec)
    x = np.random.default_rng(0).standard_normal(spec.input_shape(3)).astype(np.float32)
    logits, stats = reference_forward(spec, weights, x, training=False)
    assert logits.shape == (3, 10)
    assert all(np.array_equal(stats[name], weights[name]) for name in stats)
    _, trained = reference_forward(spec, weights, x, training=True)
    assert not np.allclose(trained["stem.bn.running_mean"], 0.0)


@pytest.mark.parametrize(
    ("dims", "message"),
    [
        ({"block": "wide"}, "'wide'"),
        ({"stem": "huge"}, "'huge'"),
        ({"stages": [2, 0]}, r"\(2, 0\)"),
        ({"depth": 50}, "depth"),
    ],
)
def test_bad_dims_are_named(dims, message):
    with pytest.raises(ValueError, match=message):
        resnet.build_resnet(dims, 1, 8, 8, classes=10)
