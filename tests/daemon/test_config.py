"""Settings: defaults < config file < flags; unknown keys, wrong types and bad values are errors
that name the key and the file; `csd --check-config` validates and prints, exiting 0 or 2."""

import os
import subprocess
import sys
import tomllib

import pytest

from csadmin.daemon.process import config
from csadmin.daemon.process.config import Config, ConfigError, load
from tests.harness import ROOT


def write(tmp_path, text: str) -> str:
    path = tmp_path / "csd.toml"
    path.write_text(text)
    return str(path)


@pytest.fixture(autouse=True)
def no_env_config(monkeypatch):
    monkeypatch.delenv("CSD_CONFIG", raising=False)


def test_defaults_when_the_default_file_is_absent(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "DEFAULT_CONFIG_PATH", str(tmp_path / "absent.toml"))
    c = load({})
    assert (c.activate_seconds, c.standby_seconds, c.serial, c.log_level) == (5.0, 3.0, "CS2-0001", "info")
    assert (c.lease_seconds, c.keep_events) == (60.0, 10_000)


def test_the_default_file_is_read_when_present(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "DEFAULT_CONFIG_PATH", write(tmp_path, 'serial = "CS2-0007"\n'))
    assert load({}).serial == "CS2-0007"


def test_file_overrides_defaults_and_flags_override_the_file(tmp_path):
    path = write(tmp_path, 'serial = "CS2-0007"\nactivate_seconds = 7\nlog_level = "debug"\n')
    c = load({"serial": "CS2-0009"}, path)
    assert c.serial == "CS2-0009"  # flag beats file
    assert c.activate_seconds == 7.0 and isinstance(c.activate_seconds, float)  # file beats default
    assert c.log_level == "debug"
    assert c.standby_seconds == 3.0  # default


def test_csd_config_env_names_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("CSD_CONFIG", write(tmp_path, "standby_seconds = 0.5\n"))
    assert load({}).standby_seconds == 0.5


def test_an_explicit_file_must_exist(tmp_path):
    missing = str(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="nope.toml: cannot read the config file"):
        load({}, missing)


@pytest.mark.parametrize(
    "text, message",
    [
        ("activate_secs = 1\n", "unknown key `activate_secs`"),
        ('activate_seconds = "5"\n', "`activate_seconds` must be a number"),
        ("activate_seconds = true\n", "`activate_seconds` must be a number"),
        ("keep_events = 1.5\n", "`keep_events` must be an integer"),
        ("serial = 2\n", "`serial` must be a string"),
        ("standby_seconds = -1\n", "`standby_seconds` must be 0 or more"),
        ('log_level = "loud"\n', "`log_level` must be one of debug, info, warning, error"),
        ('endpoint = "/run/csd.sock"\n', "`endpoint` must be an ipc:// or tcp:// endpoint"),
        ('tcp_endpoint = "ipc:///x"\n', "`tcp_endpoint` must be a tcp:// endpoint"),
        ("[log]\nlevel = 'info'\n", "unknown key `log`"),
        ("serial = \n", "not valid TOML"),
    ],
)
def test_bad_files_are_refused_naming_key_and_file(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load({}, path)
    line = "" if "not valid TOML" in message else ":1"  # a TOML syntax error says its line in its text
    assert str(info.value).startswith(f"{path}{line}: ")
    assert message in str(info.value)


def test_bad_flag_values_are_refused_naming_the_flag(tmp_path):
    with pytest.raises(ConfigError, match="--activate-seconds must be 0 or more"):
        load({"activate_seconds": -2.0}, write(tmp_path, ""))


def test_every_setting_round_trips_through_as_toml(tmp_path):
    c = Config(serial='CS2-"quoted"', activate_seconds=0.25, tcp_endpoint="tcp://*:9000")
    path = write(tmp_path, c.as_toml())
    assert load({}, path) == c


def test_the_sample_config_is_valid_and_documents_every_key():
    sample = os.path.join(ROOT, "systemd", "csd.toml")
    with open(sample) as f:
        text = f.read()
    # Every key appears, commented out (the sample changes nothing until an admin edits it).
    for key in config.TYPES:
        assert f"# {key} = " in text, key
    uncommented = "\n".join(line.removeprefix("# ") for line in text.splitlines() if line.startswith("# ") and " = " in line)
    assert set(tomllib.loads(uncommented)) == set(config.TYPES)
    load({}, sample)


def csd(*args, env=None):
    return subprocess.run([sys.executable, "-m", "csadmin.daemon", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=60)


def test_check_config_prints_the_effective_settings(tmp_path):
    path = write(tmp_path, 'serial = "CS2-0007"\nactivate_seconds = 7\n')
    done = csd("--config", path, "--check-config", "--standby-seconds", "0.5")
    assert done.returncode == 0, done.stderr
    effective = tomllib.loads(done.stdout)
    assert effective["serial"] == "CS2-0007"
    assert effective["activate_seconds"] == 7.0
    assert effective["standby_seconds"] == 0.5
    assert set(effective) == set(config.TYPES)


def test_check_config_exits_2_naming_the_unknown_key(tmp_path):
    path = write(tmp_path, "activate_secs = 1\n")
    done = csd("--check-config", env={"CSD_CONFIG": path})
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"csd: {path}:1: unknown key `activate_secs` (did you mean `activate_seconds`?)" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_config_quiet_says_only_its_exit_code(tmp_path):
    # The unit's ExecReload= runs it before the SIGHUP: silent when valid (the journal stays JSON
    # lines), the reason on stderr and exit 2 when not, so `systemctl reload` fails visibly.
    good = csd("--config", write(tmp_path, "activate_seconds = 7\n"), "--check-config", "--quiet")
    assert (good.returncode, good.stdout, good.stderr) == (0, "", "")
    bad = csd("--config", write(tmp_path, "log_levle = 'debug'\n"), "--check-config", "--quiet")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "unknown key `log_levle`" in bad.stderr


def test_csd_refuses_to_start_with_a_bad_config(tmp_path):
    done = csd("--config", write(tmp_path, "serial = 1\n"), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2
    assert "`serial` must be a string" in done.stderr


def test_default_state_dir_is_systemds_then_the_services_then_private(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/csd-a:/var/lib/csd-b")
    assert config.default_state_dir() == "/var/lib/csd-a"  # under the unit: StateDirectory=
    monkeypatch.delenv("STATE_DIRECTORY")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    service = tmp_path / "var-lib-csd"
    service.mkdir()
    monkeypatch.setattr(config, "SERVICE_STATE_DIR", str(service))
    # The service's state dir is owned by its user (csd), as systemd leaves it on a host.
    owner = os.getuid()
    if owner == 0:
        owner = 4242
        os.chown(service, owner, owner)
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # neither root nor csd: a private csd
    assert config.default_state_dir() == str(tmp_path / "home" / ".local" / "state" / "csd")
    monkeypatch.setattr(os, "geteuid", lambda: owner)  # `runuser -u csd -- csd keys …` finds it
    assert config.default_state_dir() == str(service)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert config.default_state_dir() == str(service)


def test_check_config_reports_every_mistake_at_once_with_lines_and_suggestions(tmp_path):
    """It stopped at the first mistake and suggested nothing (`log_levle`)."""
    path = write(tmp_path, 'serial = "CS2-0007"\nlog_levle = "debug"\n\n# a comment\nactivate_seconds = -1\n'
                           'keep_events = "many"\nmetrics_endpoint = "http://localhost:9464"\nlog_format = "xml"\n')
    done = csd("--config", path, "--check-config", "--standby-seconds", "-2")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "csd: the configuration cannot be used:"
    assert lines[1:] == [
        f"  {path}:2: unknown key `log_levle` (did you mean `log_level`?)",
        f"  {path}:5: `activate_seconds` must be 0 or more (got -1.0)",
        f"  {path}:6: `keep_events` must be an integer, not str 'many'",
        lines[4],  # the metrics endpoint's own explanation, checked below
        f"  {path}:8: `log_format` must be one of auto, json, console (got 'xml')",
        "  --standby-seconds must be 0 or more (got -2.0)",
    ]
    assert lines[4].startswith(f"  {path}:7: `metrics_endpoint` ") and "is a URL" in lines[4]
