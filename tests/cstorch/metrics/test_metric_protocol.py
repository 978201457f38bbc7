"""cstorch.metrics.Metric, the later releases' base a script subclasses: reset / update / compute,
register_state, forward, num_updates, the cached compute, float(metric), get_all_metrics(), and
the refusals (a metric never updated computed on CSX; compute inside a step of each release)."""

import copy
import pickle

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.metrics import Metric
from csadmin.errors import InvalidArgument, InvalidState
from tests.cstorch.run_state import fresh_run  # noqa: F401


class MeanAbsoluteError(cstorch.metrics.Metric):
    """Written as the real package's documentation writes a custom metric."""

    def reset(self):
        self.register_state("total", torch.tensor(0, dtype=torch.float32))
        self.register_state("count", torch.tensor(0, dtype=torch.float32))

    def update(self, predictions, targets):
        self.total.add_((predictions - targets).abs().sum())
        self.count.add_(targets.numel())

    def compute(self):
        return self.total / self.count


def test_a_custom_metric_updates_counts_and_computes_as_plain_torch():
    torch.manual_seed(0)
    mae = MeanAbsoluteError("mae")
    assert isinstance(mae, torch.nn.Module) and mae.num_updates == 0
    batches = [(torch.randn(5), torch.randn(5)) for _ in range(4)]
    for i, (p, t) in enumerate(batches, 1):
        value = mae(p, t)  # forward: update, then compute
        seen = batches[:i]
        total = sum((a - b).abs().sum() for a, b in seen)
        assert torch.equal(value, total / torch.tensor(5.0 * i)) and mae.num_updates == i
    assert float(mae) == float(value)
    mae.update(*batches[0])  # direct calls count too
    assert mae.num_updates == 5 and float(mae.compute()) == pytest.approx(
        float(sum((a - b).abs().sum() for a, b in batches + batches[:1]) / 25), rel=1e-6)
    mae.reset()
    assert mae.num_updates == 0 and mae.total.item() == 0 and mae.count.item() == 0


def test_compute_is_cached_until_the_next_update():
    mae = MeanAbsoluteError("mae")
    mae(torch.ones(2), torch.zeros(2))
    first = mae.compute()
    assert mae.compute() is first
    with torch.no_grad():
        mae.total.add_(100)  # a change behind update's back is not seen until the next update
    assert mae.compute() is first
    mae.update(torch.ones(2), torch.zeros(2))
    assert mae.compute() is not first and mae.compute().item() == (2 + 100 + 2) / 4


def test_state_is_a_buffer_kept_in_place_by_reset():
    mae = MeanAbsoluteError("mae")
    total = mae.total
    assert dict(mae.named_buffers()).keys() == {"total", "count"} and mae.state_dict() == {}
    mae(torch.ones(3), torch.zeros(3))
    mae.reset()  # the same tensors, zero: a program captured before keeps updating what mae reads
    assert mae.total is total and total.item() == 0
    mae.register_state("total", torch.zeros(2))  # another shape: a new tensor
    assert mae.total is not total and mae.total.shape == (2,)
    mae.register_state("kept", torch.ones(()), persistent=True)
    assert list(mae.state_dict()) == ["kept"]
    with pytest.raises(InvalidArgument, match="the state 'x' must be a tensor"):
        mae.register_state("x", 0.0)


def test_update_records_no_autograd_history():
    mae = MeanAbsoluteError("mae")
    predictions = torch.ones(3, requires_grad=True)
    mae(predictions * 2, torch.zeros(3))
    assert not mae.total.requires_grad and mae.total.grad_fn is None


def test_names_and_the_listing_of_every_metric():
    class Unnamed(MeanAbsoluteError):
        pass

    first, other, second = MeanAbsoluteError("err"), Unnamed(), MeanAbsoluteError("err")
    assert other.name == "Unnamed"
    # grouped by name in the order each name first appeared, shared names numbered
    assert list(cstorch.metrics.get_all_metrics()) == [("err.0", first), ("err.1", second), ("Unnamed", other)]
    for metric, value in ((first, 1.0), (other, 2.0), (second, 3.0)):
        metric(torch.full((2,), value), torch.zeros(2))
    assert dict(cstorch.metrics.compute_all_metrics()) == {"err.0": 1.0, "err.1": 3.0, "Unnamed": 2.0}
    with pytest.raises(InvalidArgument, match="A metric's name is a non-empty string; got ''"):
        MeanAbsoluteError("")
    with pytest.raises(TypeError, match="abstract"):
        Metric("incomplete")


def test_copies_count_their_own_updates():
    mae = MeanAbsoluteError("mae")
    mae(torch.ones(2), torch.zeros(2))
    for twin in (copy.deepcopy(mae), pickle.loads(pickle.dumps(mae))):
        twin(torch.full((2,), 3.0), torch.zeros(2))
        assert (twin.num_updates, float(twin)) == (2, 2.0)
    assert (mae.num_updates, float(mae)) == (1, 1.0)


def test_a_metric_never_updated_cannot_be_computed_on_csx(fresh_run):
    fresh_run.target = "CSX"
    mae = MeanAbsoluteError("mae")
    with pytest.raises(InvalidState, match=r"^Trying to compute metric `mae`, but the metric has not been updated. "
                                           r"This is currently not supported when running on CSX."):
        float(mae)
    mae(torch.ones(1), torch.zeros(1))
    mae.reset()  # reset: never updated again
    with pytest.raises(InvalidState, match="has not been updated"):
        cstorch.metrics.compute_all_metrics()
    fresh_run.target = "CPU"  # off the system the value is what the state gives
    assert torch.isnan(mae.compute())


def test_inside_a_traced_step_compute_is_the_steps_tensor_and_reading_it_is_refused(fresh_run):
    fresh_run.executor_required = True  # the later releases' backend: compute is part of the step
    mae = MeanAbsoluteError("mae")
    with fresh_run.stepping():
        value = mae(torch.ones(2), torch.zeros(2))
        assert mae.compute() is value and value.item() == 1.0
        with pytest.raises(InvalidState, match="'mae' was read inside a step: Eval metrics are only allowed"):
            float(mae)
    fresh_run.executor_required = False  # the first release: compute() inside compile_step read the value
    with fresh_run.stepping(), pytest.raises(InvalidState, match="'mae' was read inside a step"):
        mae.compute()
