"""The vendor's ModelZoo releases in ../shared, for the tests of tests/zoo: where one is absent (a
fresh clone without ../shared) or its import-time requirements are not installed, the test skips
and says which and how to get them."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.harness import ROOT

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "modelzoo")


def require_release(archive: str, release: str, requires: dict[str, str], install: str) -> None:
    """Skip unless `archive` exists and every module of `requires` (module name: PyPI name)
    imports; `install` says how to install the missing ones."""
    if not os.path.isfile(archive):
        pytest.skip(f"ModelZoo {release} archive absent ({archive}): the vendor's library lives in ../shared "
                    "beside the project's checkout, not in the repository")
    missing = [pypi for module, pypi in requires.items() if importlib.util.find_spec(module) is None]
    if missing:
        pytest.skip(f"ModelZoo {release} imports {', '.join(missing)} on every path: {install}")
