"""The model directory after a run (003): the compile directory, the run's yaml, TensorBoard
event files read back with tensorboard's own reader, and `cs runs show` naming both."""

from __future__ import annotations

import os

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import csadmin.cstorch as cstorch
from csadmin.cstorch.core import model_dir
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.utils.tensorboard import run_events as summaries
from tests.cstorch.helpers import batches, configure, files, model, run_record

STEPS = 25


def train(ws_csd, tmp_path, **configure_kwargs):
    config = configure(ws_csd, tmp_path, checkpoint_steps=10, **configure_kwargs)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    scheduler = cstorch.optim.lr_scheduler.SequentialLR(optimizer, [
        cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=0.01, end_learning_rate=0.1, total_iters=10),
        cstorch.optim.lr_scheduler.ConstantLR(optimizer, learning_rate=0.1)], milestones=[10])
    loss_fn = torch.nn.CrossEntropyLoss()
    data = batches(5)
    loader = cstorch.utils.data.DataLoader(lambda shuffle: data, num_steps=STEPS, shuffle=False)

    @cstorch.compile_step
    def training_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(compiled(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        return loss

    seen = {}
    for step, (x, y) in enumerate(loader, 1):
        loss = training_step(x, y)
        seen[step] = (loss.item(), float(optimizer.param_groups[0]["lr"]))
    return config, (net, loader), seen


def test_tensorboard_scalars_read_back_with_tensorboards_reader(ws_csd, tmp_path):
    _, _, seen = train(ws_csd, tmp_path)
    (events,) = [f for f in files(tmp_path / "model") if f.startswith("events.out.tfevents.")]
    acc = EventAccumulator(str(tmp_path / "model"))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == ["learning_rate", "loss", "samples_per_sec"]
    logged = [1, 10, 20, STEPS]
    assert [e.step for e in acc.Scalars("loss")] == logged == [e.step for e in acc.Scalars("learning_rate")]
    for e in acc.Scalars("loss"):
        assert e.value == pytest.approx(seen[e.step][0], rel=1e-6)
    for e in acc.Scalars("learning_rate"):
        assert e.value == pytest.approx(seen[e.step][1], rel=1e-6)
    assert all(e.value > 0 for e in acc.Scalars("samples_per_sec"))
    assert summaries.LOG_EVERY_STEPS == 10


def test_the_compile_directory_and_the_yaml_round_trip(ws_csd, tmp_path):
    config, (net, loader), _ = train(ws_csd, tmp_path)
    rt = process_backend.current().run
    checksum = rt.program.checksum[:16]
    link = tmp_path / "model" / f"cs_{checksum}"
    assert os.path.islink(link) and os.path.realpath(link) == str(tmp_path / "compile" / f"cs_{checksum}")
    assert files(link) == ["compile.log", "graph.txt", "program.json", "program.py"]
    path = tmp_path / "model" / "train" / "params_train.yaml"
    loaded = yaml.safe_load(path.read_text())
    record = run_record(ws_csd)
    expected = model_dir.run_params(process_backend.current(), rt.program, {"run_id": record["runId"],
                                                                  "system": rt.csd.serial, "backend": "wse_ws"})
    expected["optimizer"][0]["lr"] = loaded["optimizer"][0]["lr"]  # the yaml has the lr at the first step
    assert loaded == expected
    assert loaded["runconfig"]["checkpoint_steps"] == 10 and loaded["runconfig"]["num_workers_per_csx"] == 1
    assert loaded["run"]["compile_checksum"] == checksum and loaded["run"]["batch_size"] == 32
    assert loaded["optimizer"][0]["optimizer_type"] == "SGD" and loaded["optimizer"][0]["momentum"] == 0.9
    (sched,) = loaded["lr_scheduler"]
    assert sched["scheduler"] == "SequentialLR" and sched["milestones"] == [10]
    assert [s["scheduler"] for s in sched["schedulers"]] == ["LinearLR", "ConstantLR"]
    assert loaded["train_input"][0]["num_steps"] == STEPS and loaded["train_input"][0]["batch_size"] == 32
    assert loaded["train_input"][0]["input_fn_kwargs"] == {"shuffle": False}
    assert loaded["model"][0]["layers"]["0"] == "Linear(in_features=8, out_features=32, bias=True)"


def test_cs_runs_show_names_the_model_dir_and_the_compile_checksum(ws_csd, tmp_path):
    train(ws_csd, tmp_path)
    record = run_record(ws_csd)
    checksum = process_backend.current().run.program.checksum[:16]
    assert record["modelDir"] == str(tmp_path / "model")
    shown = ws_csd.cs("runs", "show", record["runId"])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any(line.startswith("Model dir") and line.endswith(str(tmp_path / "model")) for line in lines), shown.stdout
    assert any(line.startswith("Compile checksum") and f"cs_{checksum}" in line for line in lines), shown.stdout


def test_compile_only_leaves_the_compile_directory_and_the_yaml_but_no_events(ws_csd, tmp_path, capsys):
    train(ws_csd, tmp_path, compile_only=True)
    names = files(tmp_path / "model")
    assert any(n.startswith("cs_") for n in names) and "train" in names
    assert not any(n.startswith("events.out") for n in names)
    assert yaml.safe_load((tmp_path / "model" / "train" / "params_train.yaml").read_text())["run"]["run_id"] is None
