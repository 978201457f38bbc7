"""cstorch.summarize_tensor and cstorch.utils.tensorboard.SummaryReader: a step's tensors written
after its activation steps in the real package's layout, read back with the reader (scalars
through TensorBoard's own EventMultiplexer), equal to plain torch eager's on CPU and to what the
step hands back on CSX; and every refusal once."""

import json
import warnings

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import as_the_system, model
from tests.cstorch.v2 import Trainer, csx, input_fn

SummaryReader, SummaryWriter = cstorch.utils.tensorboard.SummaryReader, cstorch.utils.tensorboard.SummaryWriter


def _summarizing(trainer: Trainer):
    """A traced step that trains and summarizes its logits (a tensor) and loss (a scalar)."""

    def body(batch):
        inputs, targets = batch
        logits = trainer.compiled(inputs)
        loss = trainer.loss_fn(logits, targets)
        loss.backward()
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()
        cstorch.summarize_tensor("logits", logits)
        cstorch.summarize_scalar("loss", loss)
        return loss, logits

    return cstorch.trace(body)


def _run(step, writer, num_steps: int, **kwargs) -> list:
    executor = cstorch.utils.data.DataExecutor(cstorch.DataLoader(input_fn), num_steps=num_steps, writer=writer,
                                               **kwargs)
    results = [tuple(t.detach().clone() for t in step(batch)) for batch in executor]
    writer.flush()
    return results


def test_on_cpu_the_summarized_tensors_are_plain_torch_eagers(tmp_path):
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    trainer = Trainer(backend, model)
    _run(_summarizing(trainer), SummaryWriter(log_dir=str(tmp_path / "tb")), num_steps=4)

    net = model()  # the same initial weights, trained by plain torch on the same batches
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    expected_logits, expected_losses = [], []
    for inputs, targets in input_fn():
        logits = net(inputs)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        expected_logits.append(logits.detach().clone())
        expected_losses.append(loss.item())
        if len(expected_logits) == 4:
            break

    reader = SummaryReader(str(tmp_path / "tb"))
    tensors = reader.read_tensor("logits")
    assert sorted(tensors) == [1, 2, 3, 4] and reader.tensor_names() == {"logits"}
    for step, expected in enumerate(expected_logits, start=1):
        assert tensors[step].step == step and torch.equal(tensors[step].tensor, expected)
    assert [s.step for s in reader.read_scalar("loss")] == [1, 2, 3, 4]
    assert [s.value for s in reader.read_scalar("loss")] == pytest.approx(expected_losses, rel=1e-6)
    assert reader.read_scalar("loss", step=3).value == pytest.approx(expected_losses[2], rel=1e-6)


def test_on_csx_the_tensors_are_what_the_step_hands_back_in_the_real_layout(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    trainer = Trainer(backend, model)
    first_inputs = next(iter(input_fn()))[0]
    with as_the_system():  # the first step's logits: the initial weights, the system's numerics
        first_logits = model()(first_inputs)
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))
    results = _run(_summarizing(trainer), writer, num_steps=3)

    tensors = SummaryReader(str(tmp_path / "tb")).read_tensor("logits")
    assert sorted(tensors) == [1, 2, 3]
    for step, (loss, logits) in enumerate(results, start=1):
        assert tensors[step].tensor.dtype == logits.dtype and torch.equal(tensors[step].tensor, logits)
    assert torch.equal(tensors[1].tensor, first_logits.detach())
    # the layout the real package's reader reads: beside the event file, its csevents twin
    (events,) = (tmp_path / "tb").glob("events.out.tfevents.*")
    twin = tmp_path / "tb" / events.name.replace("tfevents", "csevents")
    assert writer.cs_events_dir == twin
    assert json.loads((twin / "__metadata__").read_text()) == {"__version__": 1.1}
    files = sorted((twin / "tensors" / "logits").iterdir())
    assert [f.name.split(".")[0] for f in files] == ["1", "2", "3"]
    saved = torch.load(str(files[0]))
    assert set(saved) == {"step", "ns_since_epoch", "tensor"} and saved["step"] == 1


def test_summaries_follow_the_activation_steps_and_base_step(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    trainer = Trainer(backend, model)
    results = _run(_summarizing(trainer), SummaryWriter(log_dir=str(tmp_path / "tb"), base_step=10), num_steps=4,
                   activation_steps=2)
    reader = SummaryReader(str(tmp_path / "tb"))
    tensors = reader.read_tensor("logits")
    assert sorted(tensors) == [11, 13]  # the executor's steps 1 and 3 (0-indexed): its activation steps
    assert torch.equal(tensors[13].tensor, results[3][1])
    assert [s.step for s in reader.read_scalar("loss")] == [11, 13]


def test_summarize_tensor_refusals(ws_csd, tmp_path):
    with pytest.raises(errors.InvalidState, match="^No active Cerebras backend found"):
        cstorch.summarize_tensor("x", torch.ones(2))
    with pytest.raises(errors.InvalidState, match="^No active Cerebras backend found"):
        cstorch.summarize_scalar("x", torch.ones(()))
    backend = csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument, match="Expected torch.Tensor for tensor summary but got: <class 'list'>"):
        cstorch.summarize_tensor("x", [1.0])
    with pytest.raises(errors.InvalidArgument, match=r"Expected tensor to be a scalar but tensor has size: "
                                                     r"torch.Size\(\[2\]\)"):
        cstorch.summarize_scalar("x", torch.ones(2))
    with pytest.warns(UserWarning, match="The tensor summary 'x' was not saved as no SummaryWriter was provided"):
        cstorch.summarize_tensor("x", torch.ones(2))
    trainer = Trainer(backend, model)
    step = _summarizing(trainer)
    torch_writer = torch.utils.tensorboard.SummaryWriter(log_dir=str(tmp_path / "plain"))
    executor = cstorch.utils.data.DataExecutor(cstorch.DataLoader(input_fn), num_steps=1, writer=torch_writer)
    with pytest.raises(errors.InvalidArgument, match="the DataExecutor's writer is a torch.utils.tensorboard.writer"
                                                     ".SummaryWriter, which does not write Cerebras "
                                                     "tensor summaries"):
        for batch in executor:
            step(batch)


def test_the_reader_refusals_and_its_choices(tmp_path):
    with pytest.raises(errors.NotFound, match="No event files found under"):
        SummaryReader(str(tmp_path))
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))
    writer.add_scalar("train/loss", 0.5, 1)
    writer.add_scalar("eval/loss", 0.7, 1)
    writer.add_text("note", "hello", 1)
    writer.add_tensor("w", torch.zeros(2), step=1)
    writer.add_tensor("w", torch.ones(2), step=1)  # twice at one step: the latest wins
    writer.add_tensor("group/b", torch.ones(1), step=2)
    writer.flush()
    reader = SummaryReader(str(tmp_path / "tb"))
    assert reader.scalar_names() == {"train/loss", "eval/loss"} and reader.scalar_groups() == {"train", "eval"}
    assert reader.tensor_names() == {"w", "group/b"}
    assert reader.read_text_summary("note")[0].step == 1 and "note/text_summary" in reader.Tags()["tensors"]
    with pytest.raises(errors.NotFound, match=r"Could not find scalar loss. Valid scalar names:\n\['eval/loss', "
                                              r"'train/loss'\]"):
        reader.read_scalar("loss")
    with pytest.raises(errors.NotFound, match="Could not find scalar train/loss at step 9"):
        reader.read_scalar("train/loss", step=9)
    assert SummaryReader(str(tmp_path / "tb"), filter="train").scalar_names() == {"train/loss"}
    with pytest.warns(UserWarning, match="Multiple summarized tensors with name w found at step 1"):
        assert torch.equal(reader.read_tensor("w", step=1).tensor, torch.ones(2))
    both = reader.read_tensor("w", step=1, latest_only=False)
    assert [d.tensor.sum().item() for d in both] == [0.0, 2.0]
    assert both[0].utctime <= both[1].utctime
    with pytest.warns(UserWarning, match="No tensor with name nothing has been summarized at step 3"):
        assert reader.read_tensor("nothing", step=3) is None
    # another version of the format is skipped; a tensor directory without its metadata refused
    (writer.cs_events_dir / "__metadata__").write_text(json.dumps({"__version__": 2}))
    with pytest.warns(UserWarning, match="Unknown version 2 for Cerebras summaries"):
        assert SummaryReader(str(tmp_path / "tb")).tensor_names() == set()
    (writer.cs_events_dir / "__metadata__").unlink()
    with pytest.raises(errors.NotFound, match="Could not detect version of Cerebras summaries"):
        SummaryReader(str(tmp_path / "tb"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reader of a directory without tensors says nothing
        other = SummaryWriter(log_dir=str(tmp_path / "other"))
        other.add_scalar("a", 1.0, 1)
        other.flush()
        assert SummaryReader(str(tmp_path / "other")).tensor_names() == set()
