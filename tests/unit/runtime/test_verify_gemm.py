"""Verification-shaped linear layers: same products as F.linear, other kernel for few rows."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from specops.runtime.verify_gemm import MAX_ROWS, MIN_ROWS, use_verify_gemm, verify_linear
from tests.unit.runtime.conftest import tiny_llama


@pytest.mark.parametrize("rows", range(1, MAX_ROWS + 3))
@pytest.mark.parametrize("bias", [False, True])
def test_verify_linear_computes_the_same_product(rows, bias):
    torch.manual_seed(rows)
    weight = torch.randn(96, 40)
    b = torch.randn(96) if bias else None
    x = torch.randn(1, rows, 40)
    out = verify_linear(x, weight, b)
    assert out.shape == (1, rows, 96) and out.is_contiguous()
    torch.testing.assert_close(out, F.linear(x, weight, b), rtol=1e-5, atol=1e-5)


def test_verify_linear_takes_the_transposed_kernel_only_for_few_rows(monkeypatch):
    calls = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda a, b: calls.append(a.shape) or real_mm(a, b))
    weight = torch.randn(16, 8)
    for rows in (1, MIN_ROWS, MAX_ROWS, MAX_ROWS + 1, 64):
        verify_linear(torch.randn(rows, 8), weight)
    assert calls == [(16, 8), (16, 8)]  # MIN_ROWS and MAX_ROWS only


def test_use_verify_gemm_routes_one_model_and_keeps_its_outputs():
    routed, stock = tiny_llama(64, seed=3), tiny_llama(64, seed=3)
    linears = sum(isinstance(m, torch.nn.Linear) for m in routed.modules())
    assert use_verify_gemm(routed) == linears == 2 * 7 + 1  # q k v o gate up down per layer, lm_head
    ids = torch.randint(0, 64, (1, 4))  # a verification-sized batch: the routed path runs
    with torch.inference_mode():
        torch.testing.assert_close(routed(input_ids=ids).logits, stock(input_ids=ids).logits,
                                   rtol=1e-5, atol=1e-5)
    assert "forward" in vars(routed.lm_head) and "forward" not in vars(stock.lm_head)
