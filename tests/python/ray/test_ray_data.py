"""Ray Data with a tpu stage: tokenize on CPU, a model's forward in
map_batches on a pool of two actors holding a tpu device each
(torch_pjrt.ray.RESOURCE), then a CPU stage; the rows equal the same
pipeline with the forward on the CPU."""

import numpy as np
import pytest
import torch

import torch_pjrt

ray = pytest.importorskip("ray", reason="ray is not installed (make ray)")
pytest.importorskip("ray.data", reason="Ray Data is not installed")
import torch_pjrt.ray  # noqa: E402
from _ray_cluster import cluster  # noqa: E402,F401  (the module's Ray node)

pytestmark = pytest.mark.skipif(torch_pjrt.plugin()["platform"] != "cpu",
                                reason="the suite's two CPU-plugin devices")

SEQ, VOCAB = 12, 64
TEXTS = [f"request {i}: " + "abcdefghij"[i % 10] * (1 + i % 7) for i in range(40)]


def _tokenize(batch):
    ids = np.zeros((len(batch["text"]), SEQ), dtype=np.int64)
    for r, text in enumerate(batch["text"]):
        codes = [ord(c) % VOCAB for c in text[:SEQ]]
        ids[r, :len(codes)] = codes
    return {"text": batch["text"], "ids": ids}


class Scorer:
    """A small model's forward on this actor's device."""

    def __init__(self, device):
        torch.manual_seed(0)
        self.device = device
        self.model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, 16), torch.nn.Flatten(),
                                         torch.nn.Linear(16 * SEQ, 8)).to(device).eval()
        self.where = torch_pjrt._C._info()["devices"][0]["description"] if device == "tpu" else "cpu"

    def __call__(self, batch):
        with torch.no_grad():
            logits = self.model(torch.from_numpy(batch["ids"]).to(self.device)).cpu()
        return {"text": batch["text"], "logits": logits.numpy(),
                "where": np.array([self.where] * len(batch["text"]))}


def _label(batch):
    return {"text": batch["text"], "label": batch["logits"].argmax(1), "logits": batch["logits"],
            "where": batch["where"]}


def _run(device, resources):
    ds = ray.data.from_items([{"text": t} for t in TEXTS])
    ds = ds.map_batches(_tokenize, batch_size=8)
    ds = ds.map_batches(Scorer, fn_constructor_kwargs={"device": device}, batch_size=8,
                        compute=ray.data.ActorPoolStrategy(size=2), num_cpus=0,
                        resources=resources)
    ds = ds.map_batches(_label, batch_size=8)
    return sorted(ds.take_all(), key=lambda r: TEXTS.index(r["text"]))


@pytest.fixture(scope="module")
def data_cluster(cluster):
    ray.data.DataContext.get_current().enable_progress_bars = False


def test_a_tpu_stage_between_cpu_stages_matches_cpu(data_cluster):
    on_tpu = _run("tpu", {torch_pjrt.ray.RESOURCE: 1})
    on_cpu = _run("cpu", None)
    assert [r["text"] for r in on_tpu] == TEXTS
    for t, c in zip(on_tpu, on_cpu):
        np.testing.assert_allclose(t["logits"], c["logits"], rtol=1e-5, atol=1e-5)
        assert t["label"] == c["label"]
    # the pool's two actors each held one device
    assert {r["where"] for r in on_tpu} <= {"TFRT_CPU_0", "TFRT_CPU_1"}
    assert {r["where"] for r in on_cpu} == {"cpu"}
