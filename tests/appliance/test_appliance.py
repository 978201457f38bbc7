"""csadmin.appliance, the later releases' `cerebras.appliance`, behaves as the real one where
ModelZoo 2.x reaches it: storage chosen by path (HDF5 written atomically in the real layout; S3
refused with a coded error), the log levels and class loggers, debug args and INIs, units, the
telemetry client that reports nothing and says so once."""

from __future__ import annotations

import logging
from io import BytesIO

import numpy as np
import pytest

from csadmin.appliance import log
from csadmin.appliance.cluster.client import TelemetryClient
from csadmin.appliance.environment import ApplianceEnviron
from csadmin.appliance.storage import (H5Deleter, H5Reader, H5Writer, S3Deleter, S3Reader, S3Writer, StorageDeleter,
                                       StorageReader, StorageWriter)
from csadmin.appliance.utils import units
from csadmin.appliance.utils.debug_args import DebugArgs, get_debug_args, update_debug_args_from_keys, write_debug_args
from csadmin.appliance.utils.file import create_symlink
from csadmin.appliance.utils.ini import set_default_ini, set_ini
from csadmin.errors import InvalidArgument, InvalidState, NotFound


def test_a_checkpoint_is_written_whole_on_leaving_its_block_and_read_back_by_key(tmp_path):
    path = tmp_path / "checkpoint_2.mdl"
    assert StorageWriter.get_type(str(path)) is H5Writer and StorageReader.get_type(str(path)) is H5Reader
    writer = StorageWriter.get(str(path))
    with writer:
        writer.write("model.weight", np.arange(6, dtype=np.float32).reshape(2, 3), {"dtype": "float32"})
        writer.write("blob", BytesIO(b"pickled"), {"kind": "bytes"})
        writer.write(None, None, {"__version__": "2.10.0"})
        assert not path.exists() and writer.temp_path.exists()  # not there until the block ends
    assert path.exists() and not writer.temp_path.exists() and StorageReader.path_exists(str(path))
    reader = StorageReader.get(str(path))
    array, meta = reader.read("model.weight")
    assert array.tolist() == [[0, 1, 2], [3, 4, 5]] and meta["dtype"] == "float32" and meta["__NUMPY__"]
    blob, meta = reader.read("blob")
    assert blob.read() == b"pickled" and meta["kind"] == "bytes"
    assert reader.global_metadata == {"__version__": "2.10.0"}
    # what `cszoo checkpoint info` prints: the file's size and modification time
    assert reader.fstat.st_size == path.stat().st_size and reader.stats.st_mtime == path.stat().st_mtime
    with pytest.raises(FileExistsError, match="already exists"):
        StorageWriter.get(str(path))
    assert H5Deleter(str(path)).delete("blob") and not H5Deleter(str(path)).delete("blob")
    assert StorageDeleter.get(str(path)).delete() and not path.exists()


def test_a_block_that_fails_leaves_no_checkpoint(tmp_path):
    path = tmp_path / "checkpoint_4.mdl"
    with pytest.raises(RuntimeError):
        with H5Writer(str(path)) as writer:
            writer.write("x", np.zeros(3), {})
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_s3_paths_are_recognised_and_refused_with_a_coded_error():
    url = "s3://bucket/model_dir/checkpoint_2.mdl"
    assert S3Writer.is_valid_path(url) and not S3Writer.is_valid_path("/tmp/checkpoint_2.mdl")
    assert not H5Writer.is_valid_path(url)
    for attempt in (lambda: StorageWriter.path_exists(url), lambda: S3Reader(url), lambda: S3Writer(url),
                    lambda: StorageDeleter.get(url), lambda: S3Deleter.path_exists(url)):
        with pytest.raises(InvalidState, match="S3 storage .* is not built here: this system reaches no object store"):
            attempt()


def test_levels_and_class_loggers():
    assert (log.get_level_name("verbose"), log.get_level_name(5), log.get_level_name("INFO")) == (15, "TRACE", 20)

    @log.named_class_logger("Trainer")
    class Trainer(log.ClassLogger):
        pass

    @log.named_class_logger
    class Other:
        pass

    assert Trainer.logger.name == "cerebras.Trainer" and Other.logger.name == f"cerebras.{__name__}.Other"
    Trainer.logger.setLevel(logging.INFO)
    assert Trainer._should_log_info() and not Trainer._should_log_verbose()
    with pytest.raises(TypeError):
        log.named_class_logger(3)


def test_wsc_log_settings_are_collected_generic_first_and_misnamed_ones_left_out(caplog):
    names = ("cerebras.wsc", "cerebras.wsc.<execute>.<wgt>.sync", "cerebras.wsc.<compile>", "cerebras.wsc.<bad>")
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        settings = log.collect_wsc_log_settings()
        assert [(s.mode, s.role, s.tag) for s in settings] == [
            (None, None, None), ("compile", None, None), ("execute", "wgt", "sync")]
        assert "Invalid Wafer-Scale Cluster server log specification: `cerebras.wsc.<bad>`" in caplog.text
    finally:
        for name in names:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_debug_args_hold_the_ini_options_written_and_read_in_text_format(tmp_path):
    args = DebugArgs()
    set_default_ini(args, ws_opt_bidir_act=False, ws_opt_target_max_actv_wios=16)
    set_default_ini(args, ws_opt_target_max_actv_wios=8)  # a default does not override
    set_ini(args, name="x y", ratio=0.5)
    assert args.settings() == {"bools": {"ws_opt_bidir_act": False}, "ints": {"ws_opt_target_max_actv_wios": 16},
                               "floats": {"ratio": 0.5}, "strings": {"name": "x y"}}
    path = tmp_path / ".debug_args.proto"
    write_debug_args(args, str(path))
    assert 'key: "ws_opt_bidir_act"' in path.read_text()
    assert get_debug_args(str(path)) == args and get_debug_args(None) == DebugArgs()
    update_debug_args_from_keys(args, {"ini": {"bools": {"flag": True}}})
    assert args.ini.bools["flag"] is True
    with pytest.raises(InvalidArgument, match="`debug_mgr.labels.x` is not built here"):
        update_debug_args_from_keys(args, {"debug_mgr.labels.x": "1"})
    path.write_text('debug_mgr {\n  labels { key: "a" value: "b" }\n}\n')
    with pytest.raises(InvalidArgument, match="field `debug_mgr` is not built here"):
        get_debug_args(str(path))
    with pytest.raises(NotFound):
        get_debug_args(str(tmp_path / "absent"))


def test_units_environment_and_links(tmp_path, monkeypatch):
    assert units.bytes_to_human(1536) == "1.5KiB" and units.bytes_to_human(999) == "999.0B"
    assert units.convert_byte_unit(3, "MB", src_unit="GB") == 3000
    assert units.convert_time_unit(90, "s", "m", precision=1) == 1.5
    environ = ApplianceEnviron()
    monkeypatch.delenv("CSADMIN_TEST_VAR", raising=False)
    environ["CSADMIN_TEST_VAR"] = "1"
    assert dict(environ.copy()) == {"CSADMIN_TEST_VAR": "1"} and len(environ) == 1
    del environ["CSADMIN_TEST_VAR"]
    assert len(environ) == 0
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    create_symlink(tmp_path / "latest", "run1")
    create_symlink(tmp_path / "latest", "run2")
    assert (tmp_path / "latest").readlink().name == "run2"


def test_telemetry_is_taken_and_reported_nowhere_said_once(caplog):
    from csadmin.appliance.cluster import client

    client._say_once.cache_clear()
    with caplog.at_level(logging.INFO, logger="cerebras.appliance.cluster.client"):
        with TelemetryClient(None, max_buffer_size=5) as telemetry:
            telemetry.push({"loss": 1.0}, labels={"run": "1"})
        TelemetryClient(None)
    assert caplog.text.count("there is no cluster management server here") == 1
