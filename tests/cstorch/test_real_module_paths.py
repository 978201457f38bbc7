"""The real package's module paths that ModelZoo 2.10 imports, reached under `cerebras.pytorch`
as a script run by `python -m csadmin.cstorch` reaches them, and what each does: utils.nest's
walks over nested structures, utils.call_once, utils.data.utils's helpers, optim.optimizer's
ParamsT, data_executor's MbsSetting, backend.Backend and the top-level __version__."""

import collections
import importlib
import sys
import threading
from collections import OrderedDict, UserDict

import pytest
import torch
from packaging.version import parse

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.__main__ import alias_modules
from csadmin.cstorch.utils import call_once as call_once_module, utils as param_utils

# module path -> the names ModelZoo 2.10 imports from it (or reads off it as an attribute).
PATHS = {
    "cerebras.pytorch": ["__version__", "_generating_docs", "make_constant", "name_scope", "add_debug_name",
                         "get_debug_name", "set_debug_scope", "current_executor"],
    "cerebras.pytorch.backend": ["Backend", "BackendType", "current_backend_impl", "get_backend_args", "use_cs"],
    "cerebras.pytorch.core.name_scope": ["name_scope", "add_debug_name", "get_debug_name", "set_debug_scope"],
    "cerebras.pytorch.core.annotation": ["AnnotationMode", "create_annotation"],
    "cerebras.pytorch.utils.nest": ["visit_structure", "visit_torch_tensors", "visit_device_tensors",
                                    "map_structure", "map_torch_tensors", "recurse_spec", "diff"],
    "cerebras.pytorch.utils.call_once": ["call_once"],
    "cerebras.pytorch.utils.constant": ["make_constant"],
    "cerebras.pytorch.utils.data.utils": ["Schedule", "infer_batch_size", "compute_num_steps", "from_numpy",
                                          "to_numpy"],
    "cerebras.pytorch.utils.data.data_executor": ["MbsSetting", "current_executor", "DataExecutor"],
    "cerebras.pytorch.optim.optimizer": ["ParamsT", "Optimizer"],
    "cerebras.pytorch.utils.utils": ["FilterCallable", "convert_glob_to_regex", "make_param_filter"],
    "cerebras.pytorch.metrics": ["AccuracyMetric", "PerplexityMetric", "FBetaScoreMetric", "MeanMetric"],
    "cerebras.pytorch.optim.scheduler": ["Scheduler", "SequentialScheduler", "ChainedScheduler",
                                         "PiecewiseConstantScheduler"],
    "cerebras.pytorch.optim.weight_decay_scheduler": ["WeightDecayScheduler", "CosineDecayWD", "LinearWD"],
    "cerebras.pytorch.optim.lr_scheduler": ["LRScheduler", "ScalePerParamLR", "SequentialLR"],
    "cerebras.pytorch.sparse": ["SparsityAlgorithm", "Group", "configure", "Static", "GMP", "SET", "RigL"],
    "cerebras.pytorch.sparse.configure": ["default_sparse_param_filter"],
    "cerebras.pytorch.experimental.listener": ["register_traced_tensor_hook"],
    "cerebras.pytorch.backend.ltc_backend": ["register_after_tensor_to_cpu"],
    "cerebras.pytorch.utils.kernel": ["kernel_annotater"],
    "cerebras.pytorch.utils.num_kv_groups": ["groups_annotater"],
    "cerebras.pytorch.utils.pol": ["pol", "current_pol"],
    "cerebras.pytorch.utils.data.sampler": ["pad_index", "DistributedSampler"],
    "cerebras.pytorch.utils.data": ["DistributedSampler"],
    "cerebras.pytorch.distributed.cluster_resolver": ["ClusterSpec", "TaskSpec"],
    "cerebras.pytorch.distributed": ["service_resolver"],
    "cerebras.pytorch.nn": ["SmoothL1Loss", "SelectiveGrad", "functional"],
    "cerebras.pytorch.nn.functional": ["one_hot"],
    "cerebras.pytorch.lib": ["cerebras_pytorch_lib"],
}


@pytest.fixture
def aliased():
    """The aliases registered as the runner registers them, and removed afterwards (this process
    runs other tests, which must not find a `cerebras` package)."""
    before = set(sys.modules)
    alias_modules()
    yield
    for name in set(sys.modules) - before:
        if name.split(".")[0] in ("cerebras", "cerebras_pytorch", "cerebras_appliance"):
            del sys.modules[name]


def test_every_module_path_modelzoo_imports_is_there_under_the_real_name(aliased):
    for path, names in PATHS.items():
        module = importlib.import_module(path)
        ours = importlib.import_module("csadmin.cstorch" + path[len("cerebras.pytorch"):])
        assert module is ours, path
        missing = [name for name in names if not hasattr(module, name)]
        assert not missing, f"{path} lacks {missing}"
    from cerebras.pytorch.utils.data.utils import Schedule, infer_batch_size

    assert Schedule is cstorch.utils.data.Schedule and infer_batch_size is cstorch.utils.data.infer_batch_size
    import cerebras.pytorch as real_name

    assert real_name.utils.nest.recurse_spec is cstorch.utils.nest.recurse_spec  # ModelZoo reads it so


def test_the_version_is_the_release_modelzoo_checks_checkpoints_against():
    version = parse(cstorch.__version__)
    assert (version.major, version.minor, version.local) == (2, 10, None)
    assert f"cs-{version.major}.{version.minor}" == "cs-2.10"  # ModelZoo's checkpoint format name
    assert cstorch._generating_docs is False


def test_params_t_and_mbs_setting_are_the_real_types():
    from torch.optim.optimizer import ParamsT

    assert cstorch.optim.optimizer.ParamsT is ParamsT
    assert "explore" in str(cstorch.utils.data.data_executor.MbsSetting)
    assert cstorch.backend.__module__ == "csadmin.cstorch.backend"  # the function; the module holds the class
    assert importlib.import_module("csadmin.cstorch.backend").Backend is cstorch.Backend


def _batch():
    Pair = collections.namedtuple("Pair", "first second")
    return {"x": torch.ones(2), "y": [torch.zeros(3), 7, Pair(torch.ones(1), "text")], "z": UserDict(w=torch.ones(4)),
            "empty": {}}


def test_visit_torch_tensors_yields_each_tensor_with_its_scope_in_order():
    nest = cstorch.utils.nest
    found = [(".".join(scope), tuple(t.shape)) for scope, t in nest.visit_torch_tensors(_batch(), scope=["input"])]
    assert found == [("input.x", (2,)), ("input.y.0", (3,)), ("input.y.2.0", (1,)), ("input.z.w", (4,))]
    with pytest.raises(ValueError, match="Unknown data structure: 7"):
        list(nest.visit_torch_tensors(_batch(), strict=True))
    assert list(nest.visit_structure({"a": [1, "b"]}, lambda item: isinstance(item, int))) == [(["a", "0"], 1)]
    assert list(nest.visit_device_tensors(_batch(), "cuda")) == []
    assert len(list(nest.visit_device_tensors(_batch(), "cpu"))) == 4
    assert list(nest.visit_torch_tensors(torch.ones(1), scope=None))[0][0] == []  # a lone tensor: the empty scope


def test_map_torch_tensors_keeps_the_structure_and_passes_each_scope():
    nest = cstorch.utils.nest
    mapped = nest.map_torch_tensors(lambda scope, t: ".".join(scope), OrderedDict(a=torch.ones(1), b=(2, torch.ones(1))))
    assert mapped == OrderedDict(a="a", b=(2, "b.1")) and type(mapped) is OrderedDict
    Pair = collections.namedtuple("Pair", "first second")
    pair = nest.map_structure(lambda scope, v: v * 10, Pair(1, "s"), lambda v: isinstance(v, int), scope=["p"])
    assert pair == Pair(10, "s") and type(pair) is Pair


def test_recurse_spec_names_a_state_dicts_leaves_as_its_keys():
    """What ModelZoo does with it: the dotted names of a flattened state dict."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    state = {"model": model.state_dict(), "global_step": torch.tensor(5), "lr": [0.1, 0.2]}
    leaves, spec = torch.utils._pytree.tree_flatten(state)
    names = [".".join(s) for s in cstorch.utils.nest.recurse_spec(spec)]
    assert names == [f"model.{k}" for k in model.state_dict()] + ["global_step", "lr.0", "lr.1"]
    assert len(names) == len(leaves)
    Pair = collections.namedtuple("Pair", "first second")
    _, spec = torch.utils._pytree.tree_flatten({"p": Pair(1, 2), "none": []})
    assert list(cstorch.utils.nest.recurse_spec(spec, ["root"])) == [["root", "p", "0"], ["root", "p", "1"]]


def test_diff_names_the_keys_and_values_that_differ():
    diff = list(cstorch.utils.nest.diff({"a": 1, "b": {"c": 2}}, {"a": 1, "b": {"c": 3}, "d": 4}))
    assert diff[0].startswith("Data structures have differing keys.") and "['d']" in diff[0]
    assert diff[1] == "Found mismatching values for b.c: 2 != 3"
    assert list(cstorch.utils.nest.diff([1, (2,)], [1, (2,)])) == []


def test_call_once_runs_the_body_once_and_answers_later_calls_with_its_result():
    call_once = call_once_module.call_once
    calls, warned = [], []

    @call_once()
    def setup(value):
        calls.append(value)
        return value * 2

    assert (setup(1), setup(5), calls) == (2, 2, [1])
    assert setup.__name__ == "setup"

    @call_once(error_callable=lambda: warned.append("again"))
    def init():
        return object()

    first = init()
    assert init() is first and warned == ["again"]

    attempts = []

    @call_once()
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first try")
        return "ok"

    with pytest.raises(RuntimeError):
        flaky()
    assert (flaky(), flaky(), len(attempts)) == ("ok", "ok", 2)  # a raise caches nothing


def test_call_once_runs_the_body_once_when_threads_race():
    entered, release, runs = threading.Event(), threading.Event(), []

    @call_once_module.call_once()
    def slow():
        runs.append(1)
        entered.set()
        release.wait(10)
        return len(runs)

    results = []
    first = threading.Thread(target=lambda: results.append(slow()))
    first.start()
    entered.wait(10)
    others = [threading.Thread(target=lambda: results.append(slow())) for _ in range(3)]
    for t in others:
        t.start()
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert runs == [1] and results == [1, 1, 1, 1]


def test_the_data_utils_module_schedules_as_modelzoo_builds_schedules():
    Schedule = cstorch.utils.data.utils.Schedule
    schedule = Schedule([Schedule.Range(start=4, step=5, end=12, include_last=True)])  # run_schedule.py's shape
    assert [i for i in range(12) if schedule.match(i)] == [4, 9, 11]
    assert list(schedule.steps(12)) == [5, 10, 12]
    assert cstorch.utils.data.utils.infer_batch_size({"x": torch.ones(4, 2), "y": torch.ones(4)}) == 4


def test_param_filters_match_whole_names_by_glob_or_by_function():
    utils = param_utils
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.LayerNorm(3))
    params = dict(net.named_parameters())
    keep = utils.make_param_filter(["*.bias"])
    assert [n for n, p in params.items() if keep(n, p)] == ["0.bias", "1.bias"]
    assert [n for n, p in params.items() if utils.make_param_filter("1.*")(n, p)] == ["1.weight", "1.bias"]
    assert not utils.make_param_filter("bias")("0.bias", params["0.bias"])  # the whole name, not a part
    one_dim = lambda name, param: param.ndim == 1  # noqa: E731
    assert utils.make_param_filter(one_dim) is one_dim
    assert utils.convert_glob_to_regex("layers.*.weight").match("layers.3.weight")
    with pytest.raises(errors.InvalidArgument, match="Unknown `param_filter`"):
        utils.make_param_filter(lambda name: True)
    with pytest.raises(errors.InvalidArgument, match="must be a string or a list of strings"):
        utils.make_param_filter(["*.bias", 3])
    with pytest.raises(errors.InvalidArgument):
        utils.make_param_filter(None)
