"""Linear layers that stay cheap at verification's few rows.

A speculative step runs the target over 2..k+1 tokens, and on this CPU (MKL sgemm, AVX2)
`F.linear` for 2..5 rows costs 1.7-2.3x its one-row (GEMV) cost, which eats most of what
drafting saves. The same product asked for as W @ x^T (output transposed, then made
contiguous) takes another MKL kernel, much flatter over few rows. Measured with
`python benchmarks/verify_gemm_bench.py` (one thread, medians, ms):

    rows                              1    2    3    4    5    6    7    8
    211 weight matrices  F.linear    42   71   95   74   91   81   96   84
                         W @ x^T     41   52   69   59   74   88  109   97
    whole forward        stock       56   96  115   99  110  111  124  111
                         routed      56   73   90   77   96  115  132  122

so the transposed form is used from 2 to MAX_ROWS rows; one row (plain decoding), wider
verification and prefill keep `F.linear`. The two forms round differently, as any two GEMM
kernels do; verification was never bit-identical to one-row decoding, and the lossless
check compares served outputs token for token, whatever the kernels.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

MIN_ROWS = 2
MAX_ROWS = 5  # past this the transposed kernel stops winning (see the table above)


def verify_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear, through the transposed product when x holds MIN_ROWS..MAX_ROWS rows."""
    rows = x.numel() // x.shape[-1]
    if not MIN_ROWS <= rows <= MAX_ROWS:
        return F.linear(x, weight, bias)
    out = torch.mm(weight, x.reshape(rows, x.shape[-1]).t()).t().contiguous()
    if bias is not None:
        out += bias
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return verify_linear(x, self.weight, self.bias)


def use_verify_gemm(model: torch.nn.Module) -> int:
    """Route every nn.Linear of `model` through verify_linear; returns how many were routed.

    Only this model object changes: another copy of the checkpoint loaded elsewhere (as the
    HF comparison loads for HF's own generate) keeps the stock forward.
    """
    count = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.forward = _forward.__get__(module)
            count += 1
    return count
