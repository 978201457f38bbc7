"""cstorch.amp: gradient scaling and mixed precision (004, "Using Gradient Scaling"; 001,
"Floating Point Precision"; 002, "Use cbfloat16")."""

from .floating_point import (enable_mixed_precision, get_floating_point_dtype, get_floating_point_dtype_str,
                             mixed_precision)
from .grad_scaler import GradScaler
from .optimizer_step import optimizer_step
from .precision import (autocast, check_float32_weights, get_half_dtype, get_half_dtype_str, half_dtype,
                        is_cbfloat16_tensor, set_half_dtype, use_bfloat16)

__all__ = ["GradScaler", "optimizer_step", "set_half_dtype", "get_half_dtype", "get_half_dtype_str", "use_bfloat16",
           "half_dtype", "autocast", "check_float32_weights", "is_cbfloat16_tensor", "mixed_precision",
           "enable_mixed_precision", "get_floating_point_dtype", "get_floating_point_dtype_str"]
