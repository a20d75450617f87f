"""Which axis order an exported artifact's input takes, from the artifact's own input shape.

A framework exports its model in its own layout (TensorFlow's convolutions NHWC, torch's NCHW);
the runtime that loads the artifact knows nothing of the framework, so it reads the input's
shape (the batch axis dynamic) and finds the permutation of the neutral layout that matches.
"""

from __future__ import annotations

from collections.abc import Sequence

# The layouts an exporter leaves besides the neutral one: channels-last images, time-major
# sequences.
OTHER_LAYOUTS: tuple[tuple[int, ...], ...] = ((0, 2, 3, 1), (1, 0, 2))


def permutation(neutral: Sequence[int], artifact: Sequence[int | None]) -> tuple[int, ...]:
    """The axis order that turns a neutral-layout input of shape `neutral` (batch first) into
    the artifact's input of shape `artifact` (None where a dimension is dynamic); raises naming
    both shapes where no known layout matches."""
    orders = [tuple(range(len(neutral))), *OTHER_LAYOUTS]
    for order in (o for o in orders if len(o) == len(neutral) == len(artifact)):
        permuted = [neutral[axis] for axis in order]
        if all(a is None or a == p for a, p in zip(artifact, permuted, strict=True)):
            return order
    raise ValueError(
        f"the artifact's input shape {list(artifact)} is no known layout of the model's input "
        f"{list(neutral)} (tried {', '.join(map(str, orders))})"
    )
