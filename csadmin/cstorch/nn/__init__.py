"""`cstorch.nn` (2.x): the real package's torch.nn look-alike, for what ModelZoo 2.10 reaches.

`functional` (the real module's functions: one_hot, sparse_act_matmul, ...); the loss modules of the
real package that torch has too — BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss,
CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss,
MSELoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss,
TripletMarginLoss, TripletMarginWithDistanceLoss — which here are torch's own classes: the real ones
are reimplementations for the system's compiler that compute torch's numbers, and a captured step
here runs torch's ops. `SelectiveGrad` (ModelZoo's selective-gradient callback) is refused when
built, naming it: it is not built. R1.8's `cerebras_pytorch.nn` (`Scope`) is core/r18's.
"""

from torch.nn import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, CTCLoss, GaussianNLLLoss,
                      HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                      MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss,
                      TripletMarginLoss, TripletMarginWithDistanceLoss)

from csadmin.errors import InvalidArgument

from . import functional


class SelectiveGrad:
    """The real class masks chosen weights' gradients by a per-weight rule ("outlier"): not built
    here, so building one is refused (InvalidArgument, a ValueError, naming it)."""

    def __init__(self, param_filter=None, init_method="outlier"):
        raise InvalidArgument("cstorch.nn.SelectiveGrad (selective gradient updates) is not built here.",
                              hint="Remove the SelectiveGrad callback (model.selective_grad) from the config.")


__all__ = ["functional", "SelectiveGrad", "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss",
           "CTCLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MarginRankingLoss",
           "MSELoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss"]
