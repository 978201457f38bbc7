"""`cstorch.BackendType`, and what the process's backend says about itself in the later releases'
names: its type, whether it traces now, whether its steps execute.

    cstorch.BackendType.CSX.is_csx                 # True (WSE, the deprecated name, too)
    cstorch.BackendType.from_str("cpu")            # BackendType.CPU
    cstorch.backend().backend_type.name            # "CSX", "CPU" or "GPU"
    cstorch.current_backend_impl().compile_only    # the implementation's settings (one object here)

The real package splits its backend in two, the object scripts hold (`cstorch.backend()`) and an
implementation behind it (`cstorch.current_backend_impl()`); here one object (process_backend.Backend) is
both, and `BackendFacts` gives it the read-only answers of each that scripts read, and
`require()`: the backend, or the real "No active Cerebras backend found" before one. Stdlib only:
backend/process_backend.py imports it, and importing that never imports torch.
"""

from __future__ import annotations

import enum

from csadmin.errors import InvalidArgument, InvalidState

# The real package's words when something needs a backend and none was made.
NO_BACKEND = (
    "No active Cerebras backend found. Please make sure that your model has been prepared for compilation "
    "(compiled_model = cstorch.compile(model, backend=...)) or explicitly instantiate a backend "
    "(backend = cstorch.backend(...))."
)


class BackendType(enum.Enum):
    """What runs a backend's math: CPU, GPU, or the system (CSX; WSE is its deprecated name)."""

    CPU = enum.auto()
    GPU = enum.auto()
    CSX = enum.auto()
    WSE = enum.auto()

    @property
    def is_cpu(self) -> bool:
        return self is BackendType.CPU

    @property
    def is_gpu(self) -> bool:
        return self is BackendType.GPU

    @property
    def is_csx(self) -> bool:
        """True for CSX and for WSE, which names the same system."""
        return self in (BackendType.CSX, BackendType.WSE)

    @staticmethod
    def from_str(backend_type: str) -> "BackendType":
        """The member named `backend_type`, in any case; InvalidArgument, with the real package's
        message, for another name or a value that is not a string."""
        if not isinstance(backend_type, str):
            raise InvalidArgument(f"Expected backend_type to be of type BackendType, or a string representing the "
                                  f"backend type. Got: {type(backend_type)}",
                                  hint='Pass "CSX", "CPU" or "GPU" (or a cstorch.BackendType member).')
        name = backend_type.strip().upper()
        if name not in BackendType.__members__:
            raise InvalidArgument(f"Invalid Cerebras PyTorch backend type specified. Expected one of "
                                  f"{list(BackendType.__members__)}. Got {backend_type}.",
                                  hint='"CSX" runs on the system (csd); "CPU" and "GPU" run the same script '
                                       "without one.")
        return BackendType[name]


class BackendFacts:
    """The real backend's and its implementation's read-only answers, for a class that has
    `kind` ("CSX", "CPU", "GPU" or None), `config` (config.Config or None) and `in_step()`."""

    @property
    def backend_type(self) -> BackendType | None:
        """The backend's BackendType: CSX for one `cstorch.configure` made (R1.8 configures the
        system only); None while no backend is made."""
        kind = self.kind or ("CSX" if self.config is not None else None)
        return None if kind is None else BackendType[kind]

    @property
    def compile_only(self) -> bool:
        return self.config is not None and self.config.compile_only

    @property
    def validate_only(self) -> bool:
        return self.config is not None and self.config.validate_only

    @property
    def is_e2e_execution(self) -> bool:
        """Whether the steps execute end to end: False when the backend only compiles or
        validates (compile_only, validate_only)."""
        return not (self.compile_only or self.validate_only)

    @property
    def is_tracing(self) -> bool:
        """True while a traced step function runs (`@cstorch.trace`, `@cstorch.compile_step`)."""
        return self.in_step()

    @property
    def made(self) -> bool:
        """Whether a backend exists: cstorch.backend, cstorch.configure or cstorch.compile made it."""
        return self.backend_type is not None

    def require(self, hint: str):
        """This backend, or INVALID_STATE (a RuntimeError, as the real one) with NO_BACKEND and
        `hint` before one is made."""
        if not self.made:
            raise InvalidState(NO_BACKEND, hint=hint)
        return self
