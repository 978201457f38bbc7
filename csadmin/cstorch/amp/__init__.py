"""cstorch.amp: gradient scaling and mixed precision (004, "Using Gradient Scaling"; 001,
"Floating Point Precision")."""

from .grad_scaler import GradScaler
from .optimizer_step import optimizer_step
from .precision import autocast, check_float32_weights, half_dtype, use_bfloat16

__all__ = ["GradScaler", "optimizer_step", "use_bfloat16", "half_dtype", "autocast", "check_float32_weights"]
