"""`cstorch.utils.call_once`: a decorator that runs a function once and answers every later call
with the first call's result.

    @call_once()
    def setup_logging():                 # the body runs at the first call only
        ...
    @call_once(error_callable=lambda: warn("already set up"))
    def init(): ...                      # later calls run error_callable first (it may raise)

The arguments of later calls are ignored (the first result is returned whatever they are). A
first call that raises caches nothing: the next call runs the function again. Calls from
several threads are serialized, so the function body runs once even when they race.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable, Optional


def call_once(error_callable: Optional[Callable[[], object]] = None) -> Callable[[Callable], Callable]:
    """A decorator: the decorated function runs at its first call; every later call runs
    `error_callable()` (when given) and returns the first call's result."""

    def decorate(function: Callable) -> Callable:
        lock = threading.Lock()
        results: list = []  # the first call's result, once it returned

        @functools.wraps(function)
        def once(*args, **kwargs):
            with lock:
                if not results:
                    results.append(function(*args, **kwargs))
                    return results[0]
            if error_callable is not None:
                error_callable()
            return results[0]

        return once

    return decorate
