"""`cstorch.core.annotation`: decorators that tag the operations a function runs with an
attribute for the compiler (ModelZoo's named matmuls, expert blocks, wafer instruction tuning).

    @dataclass
    class NamedConfig(AnnotationMode.Config):          # enable_fwd, enable_bwd, then its own fields
        name: Optional[str]

    def attribute(config, is_backward):                 # what the ops are tagged with
        return AnnotationMode.Attribute("named_matmul", f"{config.name}.{'bwd' if is_backward else 'fwd'}")

    @create_annotation(NamedConfig, attribute, name="proj", enable_fwd=True, enable_bwd=True)
    def project(x): ...

An annotation is a compiler hint: on the real system the traced operations carry the attribute
into the compile, and no value changes. So here the decorated function runs as it is, with its
arguments and result untouched, while its annotation is active: the backend's `annotations`
maps each active config class to its config and forward attribute (an annotation inside another
of the same class replaces it for its body, then the outer one is active again, as the real
package's nesting has it). The config is built from the keyword arguments when the decorator is
made, so a wrong field fails there (a TypeError, the dataclass's); the attribute function is
called on entry, for the forward pass, and also for the backward pass when `enable_bwd`.
A None attribute value tags nothing, as in the real package.

As in the real package, an annotation made on a CPU or GPU backend warns that it has no effect
there, and one made before any backend also returns the function undecorated.
"""

from __future__ import annotations

import functools
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Optional

from csadmin.errors import InvalidArgument

from ..backend import current_backend_impl, use_cs


class AnnotationMode(ABC):
    """An annotation of one config class, active while entered (see the module docstring)."""

    @dataclass
    class Config:
        """The fields every annotation config has; a config class adds its own after them."""

        enable_fwd: bool
        enable_bwd: bool

    @dataclass
    class Attribute:
        """What the annotated operations are tagged with."""

        name: str
        value: Optional[Any]

    def __init__(self, config: AnnotationMode.Config):
        self.local_config = config
        self._outer = None

    @property
    def config(self) -> Optional[AnnotationMode.Config]:
        """The active config of this annotation's class (None when none is active)."""
        active = current_backend_impl().annotations.get(type(self.local_config))
        return None if active is None else active[0]

    @abstractmethod
    def get_attribute(self, config: AnnotationMode.Config, is_backward: bool) -> AnnotationMode.Attribute:
        """The attribute the operations of `config`'s pass are tagged with."""

    def __enter__(self):
        config = self.local_config
        attribute = self.get_attribute(config, is_backward=False)
        if config.enable_bwd:
            self.get_attribute(config, is_backward=True)
        annotations = current_backend_impl().annotations
        self._outer = annotations.get(type(config))
        if config.enable_fwd and attribute.value is not None:
            annotations[type(config)] = (config, attribute)
        else:
            annotations.pop(type(config), None)  # this body's forward ops carry no attribute of the class
        return self

    def __exit__(self, *exc) -> None:
        annotations = current_backend_impl().annotations
        if self._outer is None:
            annotations.pop(type(self.local_config), None)
        else:
            annotations[type(self.local_config)] = self._outer


class _FunctionAnnotation(AnnotationMode):
    """An annotation whose attribute is a function's (create_annotation's)."""

    def __init__(self, config: AnnotationMode.Config, get_attribute_fn: Callable):
        super().__init__(config)
        self._get_attribute_fn = get_attribute_fn

    def get_attribute(self, config, is_backward):
        attribute = self._get_attribute_fn(config, is_backward)
        if not isinstance(attribute, AnnotationMode.Attribute):
            raise TypeError(f"The annotation's attribute function returned {type(attribute).__name__}, not an "
                            f"AnnotationMode.Attribute(name, value).")
        return attribute


def annotate(annotation_mode: AnnotationMode) -> Callable[[Callable], Callable]:
    """A decorator running the function with `annotation_mode` active; off the system it warns
    that it has no effect (and, before any backend, leaves the function as it is)."""
    backend = current_backend_impl(raise_exception=False)
    if backend is None or not use_cs():
        where = backend.torch_device if backend is not None else None
        warnings.warn(f"Setting {type(annotation_mode).__name__} for \"{where}\" device doesn't have any effect.",
                      stacklevel=3)
        if backend is None:
            return lambda function: function

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def annotated(*args, **kwargs):
            with annotation_mode:
                return function(*args, **kwargs)

        return annotated

    return decorate


def create_annotation(annotation_config: type, get_attribute_fn: Callable, **kwargs) -> Callable[[Callable], Callable]:
    """A decorator that runs functions under an annotation of `annotation_config(**kwargs)`, whose
    operations are tagged with `get_attribute_fn(config, is_backward)`."""
    if not (isinstance(annotation_config, type) and issubclass(annotation_config, AnnotationMode.Config)):
        raise InvalidArgument(f"create_annotation takes a config class derived from AnnotationMode.Config, not "
                              f"{annotation_config!r}.",
                              hint="Declare it as @dataclass class MyConfig(AnnotationMode.Config): ...")
    return annotate(_FunctionAnnotation(annotation_config(**kwargs), get_attribute_fn))
