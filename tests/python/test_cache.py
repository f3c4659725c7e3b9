"""The on-disk executable cache, seen from separate processes: a second
process loads what the first compiled; a corrupt entry is recompiled with one
warning; TORCH_PJRT_CACHE_DIR="" turns the cache off."""
import json
import os
import subprocess
import sys


_SCRIPT = r"""
import json, warnings
warnings.simplefilter("always")
import torch, torch_pjrt
x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
y = ((x.to("tpu") * 2 + 1).exp().sum(1)).cpu()
assert torch.allclose(y, (x * 2 + 1).exp().sum(1))
f = torch.compile(lambda a: torch.relu(a @ a.t()) - 1, backend="tpu")
z = f(x.to("tpu")).cpu()
assert torch.allclose(z, torch.relu(x @ x.t()) - 1)
m = torch_pjrt.metrics()
print(json.dumps({k: m[k] for k in ("compiles", "cache_hits_disk", "disk_writes", "disk_errors",
                                    "graph_compiles")}))
"""


def _run(cache_dir, **extra_env):
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=cache_dir, TORCH_PJRT_FALLBACK="allow",
               **extra_env)
    p = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_second_process_loads_instead_of_compiling(tmp_path):
    first, _ = _run(str(tmp_path))
    assert first["compiles"] > 0 and first["disk_writes"] == first["compiles"]
    assert first["cache_hits_disk"] == 0
    assert list(tmp_path.glob("*.tpjx"))
    second, _ = _run(str(tmp_path))
    assert second["compiles"] == 0
    assert second["cache_hits_disk"] == first["compiles"]

    # corrupt every entry: each is recompiled, rewritten, and one warning says so
    for f in tmp_path.glob("*.tpjx"):
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    third, err = _run(str(tmp_path))
    assert third["compiles"] == first["compiles"]
    assert third["disk_errors"] == first["compiles"]
    assert err.count("unreadable or corrupt") == 1
    fourth, _ = _run(str(tmp_path))
    assert fourth["compiles"] == 0


def test_empty_cache_dir_turns_the_disk_cache_off(tmp_path):
    m, _ = _run("")
    assert m["disk_writes"] == 0 and m["cache_hits_disk"] == 0


def test_xla_flags_are_part_of_the_disk_cache_key(tmp_path):
    # XLA_FLAGS change what the plugin compiles (fast math, a dump directory
    # the executable keeps): entries made under other flags are not reused.
    first, _ = _run(str(tmp_path))
    assert first["compiles"] > 0
    flagged, _ = _run(str(tmp_path), XLA_FLAGS="--xla_cpu_enable_fast_math=false")
    assert flagged["cache_hits_disk"] == 0
    assert flagged["compiles"] == first["compiles"]
    again, _ = _run(str(tmp_path), XLA_FLAGS="--xla_cpu_enable_fast_math=false")
    assert again["compiles"] == 0 and again["cache_hits_disk"] == first["compiles"]


def _unusable_dirs(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    dirs = {"file in its place": str(blocker), "under a file": str(blocker / "cache"),
            "virtual (/proc)": "/proc"}
    if os.geteuid() != 0:  # root writes into a read-only directory anyway
        ro = tmp_path / "read_only"
        ro.mkdir()
        ro.chmod(0o555)
        dirs["read-only"] = str(ro)
    return dirs


def test_unusable_cache_dir_warns_once_and_still_computes(tmp_path):
    # Issue 19, item 11: results stay right, and one warning names the
    # directory and why the cache is off.
    for why, d in _unusable_dirs(tmp_path).items():
        m, err = _run(d)
        assert m["disk_writes"] == 0 and m["cache_hits_disk"] == 0, why
        assert err.count("compiled programs are not kept across processes") == 1, (why, err)
        assert d in err, (why, err)
        assert "Not a directory" in err or "ermission" in err or "No such file" in err, (why, err)
