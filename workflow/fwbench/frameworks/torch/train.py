"""PyTorch training: nn.Conv2d / nn.BatchNorm2d / nn.Linear walked from the ResNet spec,
torch.optim.SGD (the reference semantics) and MultiStepLR stepped once per epoch.

Modes: `eager`; `compiled` = torch.compile of the model (forward and, through AOTAutograd, its
backward; train and eval mode each get a graph); the loss and the optimizer step run eagerly.
Precision `bfloat16`: the forward under torch.autocast (BFLOAT16_POLICY); the loss from the
logits in float32.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fwbench.frameworks import check_framework_mode
from fwbench.frameworks.protocols import CompileInfo, Exported, Predictor, TrainOptions
from fwbench.frameworks.torch.compile_info import compile_info_since, counter_snapshot
from fwbench.frameworks.torch.export import onnx_export
from fwbench.frameworks.torch.quantize import pt2e
from fwbench.model.optimizer import SGDConfig
from fwbench.model.resnet import Conv, ResNetSpec
from fwbench.model.weights import Weights
from fwbench.precisions import BFLOAT16, INT8_STATIC

INPUT_LAYOUT = "NCHW"
BFLOAT16_POLICY = (
    "torch.autocast(device_type, dtype=torch.bfloat16) around the model's forward: autocast's "
    "list runs conv2d and linear in bfloat16 over the float32 parameters and they return "
    "bfloat16; batch_norm, off its lists, takes the bfloat16 activations with its float32 "
    "weights and statistics and returns bfloat16; "
    "cross_entropy on the logits cast to float32, outside it"
)
_BN_SLOTS = {
    "gamma": "weight",
    "beta": "bias",
    "running_mean": "running_mean",
    "running_var": "running_var",
}


def _key(name: str) -> str:
    return name.replace(".", "__")  # ModuleDict keys cannot hold dots


class ResNet(nn.Module):
    def __init__(self, spec: ResNetSpec) -> None:
        super().__init__()
        self.spec = spec
        self.blocks = spec.blocks()
        self.layers = nn.ModuleDict()
        for conv in spec.convs():
            self.layers[_key(conv.name)] = nn.Conv2d(
                conv.cin, conv.cout, conv.kernel, conv.stride, conv.padding, bias=False
            )
            # torch's momentum is the weight of the new batch statistic, as in the spec.
            self.layers[_key(conv.bn)] = nn.BatchNorm2d(
                conv.cout, eps=spec.bn_eps, momentum=spec.bn_momentum
            )
        self.head = nn.Linear(spec.features, spec.classes)

    def _conv_bn(self, x: torch.Tensor, conv: Conv) -> torch.Tensor:
        return self.layers[_key(conv.bn)](self.layers[_key(conv.name)](x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self._conv_bn(x, self.spec.stem_conv))
        if self.spec.stem_pool:
            h = F.max_pool2d(h, kernel_size=3, stride=2, padding=1)
        for block in self.blocks:
            out = h
            for i, conv in enumerate(block.convs):
                out = self._conv_bn(out, conv)
                if i < len(block.convs) - 1:
                    out = F.relu(out)
            shortcut = h if block.shortcut is None else self._conv_bn(h, block.shortcut)
            h = F.relu(out + shortcut)
        return self.head(h.mean(dim=(2, 3)))

    @torch.no_grad()
    def load_neutral(self, weights: Weights) -> None:
        for name, value in self._neutral_view().items():
            tensor = torch.from_numpy(np.ascontiguousarray(weights[name]))
            value.copy_(_to_torch_layout(name, tensor).to(value.dtype))

    @torch.no_grad()
    def neutral_state(self) -> Weights:
        return {
            name: _from_torch_layout(name, value.detach().cpu()).numpy().copy()
            for name, value in self._neutral_view().items()
        }

    def _neutral_view(self) -> dict[str, torch.Tensor]:
        """Neutral weight name → the torch tensor that holds it."""
        view: dict[str, torch.Tensor] = {}
        for conv in self.spec.convs():
            view[f"{conv.name}.kernel"] = self.layers[_key(conv.name)].weight
            bn = self.layers[_key(conv.bn)]
            for neutral, attribute in _BN_SLOTS.items():
                view[f"{conv.bn}.{neutral}"] = getattr(bn, attribute)
        view["head.W"] = self.head.weight
        view["head.b"] = self.head.bias
        return view


def _to_torch_layout(name: str, tensor: torch.Tensor) -> torch.Tensor:
    if name.endswith(".kernel"):
        return tensor.permute(3, 2, 0, 1)  # (kh, kw, cin, cout) → (cout, cin, kh, kw)
    if name.endswith(".W"):
        return tensor.T  # (in, out) → Linear's (out, in)
    return tensor


def _from_torch_layout(name: str, tensor: torch.Tensor) -> torch.Tensor:
    if name.endswith(".kernel"):
        return tensor.permute(2, 3, 1, 0)
    if name.endswith(".W"):
        return tensor.T
    return tensor


class TorchTrainer:
    def __init__(
        self,
        spec: ResNetSpec,
        weights: Weights,
        optimizer: SGDConfig,
        mode: str,
        device: str,
        dtype: torch.dtype = torch.float32,
        autocast: torch.dtype | None = None,
    ) -> None:
        """`dtype` float64 gives the reference trainer the equivalence tests compare with;
        `autocast` bfloat16 the mixed-precision one (BFLOAT16_POLICY)."""
        self.mode, self.device, self.dtype = mode, torch.device(device), dtype
        self.autocast = autocast
        self.model = ResNet(spec)
        self.model.load_neutral(weights)
        self.model.to(self.device, dtype).train()
        schedule = optimizer.schedule
        self.optimizer = torch.optim.SGD(
            self.model.parameters(),
            lr=schedule.base_lr,
            momentum=optimizer.momentum,
            weight_decay=optimizer.weight_decay,
        )
        self.scheduler = torch.optim.lr_scheduler.MultiStepLR(
            self.optimizer, milestones=list(schedule.milestones), gamma=schedule.gamma
        )
        self._counters_at_build = counter_snapshot()
        self.forward = torch.compile(self.model) if mode == "compiled" else self.model

    def _to_device(self, array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device, dtype=dtype, non_blocking=True)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """The forward, under autocast in a mixed-precision run; float32 logits either way."""
        if self.autocast is None:
            return self.forward(x)
        with torch.autocast(self.device.type, dtype=self.autocast):
            logits = self.forward(x)
        return logits.to(self.dtype)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def train_epoch(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        self.model.train()
        losses = []
        for images, labels in batches:
            x = self._to_device(images, self.dtype)
            y = self._to_device(labels, torch.int64)
            self.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self._logits(x), y)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
        self._sync()
        return torch.stack(losses).cpu().numpy().astype(np.float64)

    def end_epoch(self) -> None:
        self.scheduler.step()

    def learning_rate(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @torch.no_grad()
    def predict(self, images: np.ndarray) -> np.ndarray:
        self.model.eval()
        try:
            logits = self._logits(self._to_device(images, self.dtype))
            return logits.cpu().numpy()
        finally:
            self.model.train()

    def state(self) -> Weights:
        return self.model.neutral_state()

    def predict_in(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        """The trained model in `precision` as torch's cells run it: bfloat16, the module and
        its input cast (module.to(torch.bfloat16)); int8_static, torch's PT2E with the x86
        Inductor quantizer calibrated on `calibration` (frameworks.torch.quantize, as the
        compiled and aoti cells quantize), run as the converted graph: its
        quantize/dequantize pairs round as the integer kernels do, at float speed."""
        model, details = copy.deepcopy(self.model).eval(), {}
        dtype = torch.bfloat16 if precision == BFLOAT16 else torch.float32
        if precision == INT8_STATIC:
            model, details = pt2e(model, calibration)
        elif precision == BFLOAT16:
            model = model.to(dtype)
        else:
            raise NotImplementedError(
                f"torch's own modes run no {precision} (its {precision} cells run in ONNX "
                f"Runtime: {precision}_onnxrt)"
            )

        @torch.no_grad()
        def logits(images: np.ndarray) -> np.ndarray:
            return model(self._to_device(images, dtype)).float().cpu().numpy()

        return logits, details

    def onnx_export(self, path: str, example: np.ndarray) -> Exported:
        """The trained model, float32 and in eval mode on the CPU, as the onnxrt cells export
        theirs (frameworks.torch.export.onnx_export), `example` a batch in INPUT_LAYOUT."""
        model = copy.deepcopy(self.model).eval().to("cpu", torch.float32)
        return onnx_export(model, torch.from_numpy(np.asarray(example, np.float32)), path)

    def compile_info(self) -> CompileInfo:
        """From dynamo's counters since build (compile_info_since); raises before the first
        compiled step."""
        if self.mode != "compiled":
            return CompileInfo(compiled=False, how="eager: op by op")
        return compile_info_since(
            self._counters_at_build,
            how="torch.compile(model), inductor; loss and optimizer step eager",
        )

    def peak_device_memory_bytes(self) -> int | None:
        if self.device.type == "cuda":
            return int(torch.cuda.max_memory_allocated(self.device))
        return None


def _configure(device: str, threads: int | None, allow_tf32: bool) -> None:
    if threads is not None:
        torch.set_num_threads(threads)
        # Settable only before the first inter-op work in the process.
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(1)
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
        torch.backends.cudnn.benchmark = True
        torch.cuda.reset_peak_memory_stats()


def build(spec: ResNetSpec, weights: Weights, optimizer: SGDConfig, **options: Any) -> TorchTrainer:
    """A trainer for `spec` from the neutral `weights`; `options` as in TrainOptions. The
    schedule advances per epoch, so steps_per_epoch is not needed here."""
    run = TrainOptions(**options)
    check_framework_mode("torch", run.mode)
    _configure(run.device, run.threads, run.allow_tf32)
    autocast = torch.bfloat16 if run.precision == "bfloat16" else None
    return TorchTrainer(spec, weights, optimizer, run.mode, run.device, autocast=autocast)
