"""Runs `torchrun --nproc_per_node N -m torchtitan.train ...` as a user
would, in a subprocess, and reads TorchTitan's own metrics lines back."""
import os
import re
import subprocess
import sys

_STEP = re.compile(r"step:\s*(\d+)\s+loss:\s*([-\d.naif]+)\s+grad_norm:\s*([-\d.naif]+)\s+"
                   r"memory:\s*([\d.]+)GiB\(([\d.]+)%\)\s+tps:\s*([\d,]+)\s+"
                   r"tflops:\s*([\d.,]+)\s+mfu:\s*([\d.]+)%")


class TitanFailed(AssertionError):
    pass


def train(assets, out_dir, *extra, nproc=1, module="llama3", config="llama3_debugmodel_varlen_attn",
          steps=20, seq_len=64, batch=2, timeout=420, env=None, args=(),
          entry=("-m", "torchtitan.train")):
    """Returns ({step: metrics dict}, full output). entry: what torchrun
    starts on each rank (bench/titan.py --profile passes a script that wraps
    the trainer)."""
    tok, data = assets
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost:0", "--local-ranks-filter", "0",
           *entry, "--module", module, "--config", config,
           "--hf_assets_path", tok, "--dataloader.dataset_path", data,
           "--dump_folder", out_dir,
           "--training.steps", str(steps), "--training.seq_len", str(seq_len),
           "--training.local_batch_size", str(batch),
           "--metrics.disable_color_printing", "--metrics.log_freq", "1",
           "--validator.no-enable", "--checkpoint.no-enable", *args, *extra]
    e = dict(os.environ)
    e.update({"OMP_NUM_THREADS": "1", "TORCH_PJRT_FALLBACK": "error",
              "TORCH_PJRT_CPU_DEVICES": "1"})
    e.update(env or {})
    p = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout, cwd=out_dir)
    text = p.stdout.decode(errors="replace")
    if p.returncode != 0:
        raise TitanFailed(f"torchtitan.train exited {p.returncode}:\n{text[-6000:]}")
    steps_seen = {}
    for m in _STEP.finditer(text):
        steps_seen[int(m.group(1))] = {
            "loss": float(m.group(2)), "grad_norm": float(m.group(3)),
            "memory_gib": float(m.group(4)), "tps": int(m.group(6).replace(",", "")),
            "tflops": float(m.group(7).replace(",", "")), "mfu": float(m.group(8))}
    return steps_seen, text
