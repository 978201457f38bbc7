"""cstorch.sparse.utils: the mask arithmetic the sparsity algorithms share.

`make_mask_topk_sparsity(score, sparsity)` keeps the top k = int((1 - sparsity) * numel) entries
of `score` (flattened: unstructured sparsity), as the real helper does: True where kept.
"""

import torch


def make_mask_topk_sparsity(score: torch.Tensor, sparsity: torch.Tensor, score_shaper=None) -> torch.Tensor:
    """A bool mask of `score`'s shape, True at the top int((1 - sparsity) * numel) scores.
    `score_shaper` (the real package's structured shapers) is not built: None only."""
    if score_shaper is not None:
        from csadmin.errors import InvalidArgument  # only on this refusal
        raise InvalidArgument("make_mask_topk_sparsity: score shapers (structured sparsity) are not built here; "
                              "the mask is unstructured over the whole tensor.", hint="Pass score_shaper=None.")
    flat = score.reshape(-1)
    density = 1.0 - torch.as_tensor(sparsity, dtype=torch.float32)
    keep = int((density * flat.numel()).to(torch.int64))
    mask = torch.zeros(flat.numel(), dtype=torch.bool, device=score.device)
    if keep > 0:
        mask[torch.topk(flat, keep, sorted=False).indices] = True
    return mask.reshape(score.shape)
