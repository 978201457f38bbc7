"""The real package's helpers that name and mark a step's work without changing its values —
cstorch.name_scope, set_debug_scope, add_debug_name / get_debug_name, make_constant, the
core.annotation decorators — and cstorch.current_executor(): on a CPU backend in this process,
and inside a traced step on CSX."""

import warnings
from dataclasses import dataclass
from typing import Optional

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import model
from csadmin.cstorch.core.annotation import AnnotationMode, create_annotation
from tests.cstorch.v2 import Trainer, csx, synthetic_input


@dataclass
class NamedConfig(AnnotationMode.Config):  # ModelZoo's named_matmul shape
    name: Optional[str]


def named_attribute(config, is_backward):
    return AnnotationMode.Attribute("named_matmul", None if config.name is None else
                                    f"{config.name}.{'bwd' if is_backward else 'fwd'}")


def named(name, enable_fwd=True, enable_bwd=True):
    return create_annotation(NamedConfig, named_attribute, name=name, enable_fwd=enable_fwd, enable_bwd=enable_bwd)


def _active():
    return {cls.__name__: attribute.value for cls, (config, attribute) in cstorch.current_backend_impl().annotations.items()}


def test_name_scope_sets_the_backends_scope_for_its_body_and_restores_it(tmp_path):
    with pytest.raises(errors.InvalidState, match=r"^No active Cerebras backend found"):
        with cstorch.name_scope("early"):
            pass
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    assert backend.current_scope_name is None
    with cstorch.name_scope("params_norm"):
        assert str(cstorch.current_backend_impl().current_scope_name) == "params_norm"
        with cstorch.name_scope("inner"):  # the inner scope replaces the outer, as the real backend's does
            assert str(backend.current_scope_name) == "inner"
        assert str(backend.current_scope_name) == "params_norm"
    assert backend.current_scope_name is None
    with pytest.raises(KeyError):
        with cstorch.name_scope("failing"):
            raise KeyError("x")
    assert backend.current_scope_name is None  # restored when the body raises too
    scope = cstorch.name_scope("lr")  # ModelZoo's scheduler callback enters and exits it by hand
    scope.__enter__()
    assert str(backend.current_scope_name) == "lr"
    scope.__exit__(None, None, None)
    assert backend.current_scope_name is None
    with pytest.raises(errors.InvalidArgument, match="must be a string"):
        with cstorch.name_scope(3):
            pass


def test_set_debug_scope_records_the_scope_and_none_clears_it():
    cstorch.set_debug_scope("eval")
    assert process_backend.current().debug_scope == "eval"
    cstorch.set_debug_scope(None)
    assert process_backend.current().debug_scope == ""
    with pytest.raises(errors.InvalidArgument):
        cstorch.set_debug_scope(["eval"])


def test_add_debug_name_names_every_submodule_by_its_path():
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 1)))
    assert cstorch.get_debug_name(net[1][1]) == "Linear"  # never named: its class name
    cstorch.add_debug_name(net)
    names = {cstorch.get_debug_name(m) for m in net.modules()}
    assert names == {"Sequential", "0", "1", "1.0", "1.1"}  # the root's name is "": its class name answers
    cstorch.add_debug_name(net, root_name="model")
    assert [cstorch.get_debug_name(m) for m in net.modules()] == ["model", "model.0", "model.1", "model.1.0",
                                                                  "model.1.1"]
    with pytest.raises(errors.InvalidArgument, match="torch.nn.Module"):
        cstorch.add_debug_name(net.state_dict())


def test_make_constant_returns_its_argument_off_the_system(tmp_path):
    tensor = torch.arange(3.0)
    assert cstorch.make_constant(tensor) is tensor  # before any backend
    cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    assert cstorch.make_constant(tensor) is tensor
    assert cstorch.make_constant(2.5) == 2.5  # the real CPU backend hands anything back as it is


def test_current_executor_is_the_running_loops_executor_on_cpu(tmp_path):
    with pytest.raises(errors.InvalidState, match=r"^No active Cerebras backend found"):
        cstorch.current_executor()
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    t = Trainer(backend, model)
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(synthetic_input), num_steps=2)
    with pytest.raises(errors.InvalidState, match="data executor was not used"):
        cstorch.current_executor()
    seen = []
    for batch in executor:
        t.step(batch)
        seen.append((cstorch.current_executor(), cstorch.current_executor().artifact_dir))
    assert seen == [(executor, executor.artifact_dir)] * 2
    with pytest.raises(errors.InvalidState):
        cstorch.current_executor()  # the loop ended


def test_on_csx_the_names_and_constants_leave_a_traced_steps_values_as_they_were(ws_csd, tmp_path):
    """The same two steps twice from the same weights, once plain and once with every helper in
    the step: the losses are equal bit for bit; make_constant's non-tensor is refused on CSX."""
    backend = csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument, match="expects a torch.Tensor"):
        cstorch.make_constant(1.0)
    t = Trainer(backend, model)
    start = {k: v.clone() for k, v in t.net.state_dict().items()}
    cstorch.add_debug_name(t.net, "model")

    @cstorch.trace
    def named_step(batch):
        inputs, targets = batch
        with cstorch.name_scope("forward"):
            scale = cstorch.make_constant(torch.ones(()))
            loss = named("model")(t.compiled)(inputs * scale)
            loss = t.loss_fn(loss, targets)
        loss.backward()
        t.optimizer.step()
        t.optimizer.zero_grad()
        return loss

    losses = {}
    for label, step in (("plain", t.step), ("named", named_step)):
        t.net.load_state_dict(start)
        t.optimizer = cstorch.optim.SGD(t.net.parameters(), lr=0.1, momentum=0.9)
        executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(synthetic_input), num_steps=2)
        losses[label] = []

        @cstorch.step_closure
        def record(loss):
            losses[label].append(loss.item())

        for batch in executor:
            assert cstorch.current_executor() is executor
            record(step(batch))
    assert losses["named"] == losses["plain"] and len(losses["plain"]) == 2
    assert backend.current_scope_name is None


def test_an_annotation_off_the_system_warns_and_runs_the_function_as_it_is(tmp_path):
    def double(x):
        return x * 2

    with pytest.warns(UserWarning, match='for "None" device doesn.t have any effect'):
        assert named("early")(double) is double  # before any backend: the function itself
    cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    with pytest.warns(UserWarning, match='for "cpu" device doesn.t have any effect'):
        annotated = named("proj")(double)
    assert annotated.__name__ == "double" and torch.equal(annotated(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(TypeError):
        create_annotation(NamedConfig, named_attribute, nme="x", enable_fwd=True, enable_bwd=True)
    with pytest.raises(errors.InvalidArgument, match="AnnotationMode.Config"):
        create_annotation(dict, named_attribute, name="x")


def test_on_csx_an_annotation_is_active_in_its_function_and_nests_by_config_class(ws_csd, tmp_path):
    csx(ws_csd, tmp_path)
    seen = {}

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # on the system: no "no effect" warning

        @named("outer")
        def outer(x):
            seen["outer"] = _active()
            return inner(x) + 1

        @named("inner")
        def inner(x):
            seen["inner"] = _active()
            return quiet(x) * 3

        @named("quiet", enable_fwd=False)
        def quiet(x):
            seen["quiet"] = _active()
            return x

    assert torch.equal(outer(torch.ones(2)), torch.full((2,), 4.0))
    assert seen == {"outer": {"NamedConfig": "outer.fwd"}, "inner": {"NamedConfig": "inner.fwd"}, "quiet": {}}
    assert _active() == {}
    broken = create_annotation(NamedConfig, lambda config, is_backward: "named", name="x", enable_fwd=True,
                               enable_bwd=False)
    with pytest.raises(TypeError, match="AnnotationMode.Attribute"):
        broken(lambda: None)()
    assert _active() == {}
