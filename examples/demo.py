"""A model moved to `tpu` by changing one string, its result, and the device."""
import torch

import torch_pjrt

torch.manual_seed(0)


class TinyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(4, 8))
        self.shift = torch.nn.Parameter(torch.randn(4, 8))

    def forward(self, x):
        return x * self.scale + self.shift


model = TinyMLP()
x = torch.randn(4, 8)
expected = model(x)

model = model.to("tpu")           # the one change
y = model(x.to("tpu"))

print("result on tpu:\n", y)
print("matches the CPU:", torch.allclose(y.cpu(), expected, atol=1e-6))
print("device:", torch.tpu.get_device_name(), "| devices:", torch.tpu.device_count(),
      "| accelerator:", torch.accelerator.current_accelerator())
info = torch_pjrt.info()
print("plugin:", info["plugin_path"])
print("platform:", info["platform"], "| PJRT C API %d.%d" % info["pjrt_api_version"])
print("metrics:", torch_pjrt.metrics())
print("CPU fallbacks:", torch_pjrt.fallbacks() or "none")
