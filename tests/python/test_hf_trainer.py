"""transformers.Trainer on tpu. TrainingArguments picks tpu:0 by itself
(Transformers asks torch.accelerator), but Accelerate's PartialState, which
Trainer's Accelerator moves the model with, only knows a fixed list of
device families and would pick the CPU: ACCELERATE_TORCH_DEVICE=tpu is the
switch it reads."""
import os

import pytest
import torch

import torch_pjrt

transformers = pytest.importorskip("transformers")
accelerate = pytest.importorskip("accelerate")

import hf_models as H  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_leaks")


def _reset_accelerate():
    from accelerate.state import AcceleratorState, PartialState

    AcceleratorState._reset_state(reset_partial_state=True)
    PartialState._reset_state()


@pytest.fixture
def on_tpu(monkeypatch):
    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "tpu")
    _reset_accelerate()
    yield
    _reset_accelerate()


class Counting(torch.utils.data.Dataset):
    """Rows that count up by a per-row stride: learnable, so the loss falls."""

    def __len__(self):
        return 20

    def __getitem__(self, i):
        start, stride = (i * 37) % 200, 1 + i % 2
        ids = (start + stride * torch.arange(16)) % (H.VOCAB - 3) + 3
        return {"input_ids": ids, "labels": ids.clone()}


def _eval_loss(model, batch):
    model.eval()
    with torch.no_grad():
        return model(**H.to(batch, model.device)).loss.item()


def test_trainer_five_steps_and_checkpoint_round_trip(on_tpu, tmp_path):
    path = H.save("llama", str(tmp_path))
    model = H.load(path, device_map="tpu")
    data = Counting()
    held = {k: torch.stack([data[i][k] for i in range(8)]) for k in ("input_ids", "labels")}
    before = _eval_loss(model, held)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, max_steps=5,
        learning_rate=1e-2, lr_scheduler_type="constant", logging_steps=1,
        save_strategy="steps", save_steps=5, report_to=[], seed=0)
    assert args.device == torch.device("tpu", 0)
    assert args.optim == "adamw_torch_fused"  # the default: aten::_fused_adamw_, native
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    assert trainer.accelerator.device.type == "tpu"
    torch_pjrt.reset_metrics()
    trainer.train()
    assert torch_pjrt.fallbacks() == {}
    assert {p.device.type for p in model.parameters()} == {"tpu"}
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 5
    after = _eval_loss(model, held)
    assert after < before - 0.1, (before, after, losses)

    ckpt = tmp_path / "out" / "checkpoint-5"
    assert (ckpt / "model.safetensors").exists() and (ckpt / "optimizer.pt").exists()
    trained = {k: v.cpu() for k, v in model.state_dict().items()}
    on_tpu_again = transformers.LlamaForCausalLM.from_pretrained(str(ckpt), device_map="tpu")
    on_cpu = transformers.LlamaForCausalLM.from_pretrained(str(ckpt), device_map="cpu")
    for k, v in trained.items():
        assert on_tpu_again.state_dict()[k].device.type == "tpu"
        assert torch.equal(on_tpu_again.state_dict()[k].cpu(), v), k
        assert torch.equal(on_cpu.state_dict()[k], v), k
    # The optimizer state was saved from tpu tensors and loads on the CPU.
    opt = torch.load(ckpt / "optimizer.pt", map_location="cpu", weights_only=True)
    assert all(t.device.type == "cpu" for s in opt["state"].values() for t in s.values())
    assert _eval_loss(on_cpu, held) == pytest.approx(after, abs=1e-4)


def test_without_the_switch_accelerate_picks_the_cpu(monkeypatch, tmp_path):
    """Documents the hard-coded check: without ACCELERATE_TORCH_DEVICE the
    Accelerator's device is the CPU although TrainingArguments says tpu:0."""
    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    _reset_accelerate()
    try:
        args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[])
        assert args.device == torch.device("tpu", 0)
        from accelerate.state import PartialState

        assert PartialState().device.type == "cpu"
    finally:
        _reset_accelerate()
    assert os.environ.get("ACCELERATE_TORCH_DEVICE") is None
