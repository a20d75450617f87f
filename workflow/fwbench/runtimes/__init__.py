"""Deployment runtimes: the packages an export mode's cells run in instead of the framework
(frameworks.FrameworkInfo.runtime_modes). Each module `<runtime>.py` is the only one that
imports its runtime, and none imports a framework: a cell of torch/onnxrt loads the ONNX file
torch's export job wrote into ONNX Runtime, as a deployed service would, without torch.

`<runtime>.adapter(framework)` is the runtime's frameworks.protocols.InferenceAdapter for one
framework's artifacts; runtimes.base holds what every runtime does alike.
"""
