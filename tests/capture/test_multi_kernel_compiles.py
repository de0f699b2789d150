"""The Triton kernels compile for the GPUs TrainGuard is tuned on, with the sizes shipped for them.

The CPU tests run the kernels under Triton's interpreter, which ignores what only the compiler reads:
the block loop's software-pipelining stages, the warps, the register budget. Here each kernel is compiled
for sm_90 (H100, H200) with `gpu_config`'s sizes by the ptxas that ships with Triton, on any machine, so a
size or loop hint the compiler refuses fails here rather than on the first GPU that runs it.
"""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")
pytest.importorskip("triton.backends.nvidia")

import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from trainguard.capture.torch import _multi_kernel as kernels
from trainguard.store import run_format

H100_SMS = 132
CFG = kernels.gpu_config(H100_SMS)
TIER1_WARPS = CFG.tier1_warps or CFG.num_warps
"""The histogram and moved kernels' warps."""


def compile_for_sm90(
    fn: object,
    pointers: dict[str, str],
    constants: dict[str, object],
    num_warps: int,
    max_registers: int | None = None,
) -> object:
    """`fn` compiled for sm_90: its pointer and int32 arguments typed, its compile-time constants given."""
    names = list(fn.arg_names)  # type: ignore[attr-defined]
    signature = {n: pointers.get(n, "i32") if n not in constants else "constexpr" for n in names}
    consts = {(names.index(n),): v for n, v in constants.items()}
    return triton.compile(
        ASTSource(fn, signature, consts),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps, **({"maxnreg": max_registers} if max_registers else {})},
    )


TABLES = {"table_ptr": "*i64", "static_ptr": "*i64"}


@pytest.mark.parametrize(
    ("x", "history"),
    [(tl.bfloat16, False), (tl.float32, True), (tl.float16, False)],
    ids=["bf16", "fp32-history", "fp16"],
)
def test_the_partials_kernel_compiles_with_the_shipped_sizes(x: object, history: bool) -> None:
    kernel = compile_for_sm90(
        kernels._compiled[0],
        {**TABLES, "part_ptr": "*fp64"},
        {
            "X_DTYPE": x,
            "P_DTYPE": x,
            "F_DTYPE": x,
            "HISTORY": history,
            "ALIGNED": True,
            **dict(zip(("LANES", "ROW"), kernels.partials_block(CFG, x.primitive_bitwidth // 8))),
            "CHUNK": CFG.chunk,
            "STAGES": CFG.stages,
        },
        CFG.num_warps,
        CFG.max_registers,
    )
    assert kernel.metadata.num_warps == CFG.num_warps  # type: ignore[attr-defined]
    assert kernel.asm["cubin"]  # type: ignore[attr-defined]  # ptxas assembled it
    if CFG.stages and CFG.stages > 1:
        # the pipelined loop stages its loads through shared memory: the hint reached the compiler
        assert kernel.metadata.shared > 1024  # type: ignore[attr-defined]


def test_the_histogram_and_moved_kernels_compile_with_the_shipped_sizes() -> None:
    hist = compile_for_sm90(
        kernels._hist_compiled[0],
        {**TABLES, "part_ptr": "*i32"},
        {
            "X_DTYPE": tl.bfloat16,
            "ALIGNED": True,
            "BLOCK": CFG.hist_block or CFG.block,
            "CHUNK": CFG.chunk,
            "BINS": run_format.HIST_BINS,
            "LOW": 127 + run_format.HIST_MIN_EXPONENT - 1,  # as `_multi.multi_hist` launches it
        },
        TIER1_WARPS,
    )
    moved = compile_for_sm90(
        kernels._moved_compiled,
        {**TABLES, "out_ptr": "*fp64"},
        {"X_DTYPE": tl.float32, "P_DTYPE": tl.float32, "C_DTYPE": tl.float32, "BLOCK": CFG.block},
        TIER1_WARPS,
    )
    for kernel in (hist, moved):
        assert kernel.metadata.num_warps == TIER1_WARPS  # type: ignore[attr-defined]


@pytest.mark.parametrize("x", [tl.bfloat16, tl.float32], ids=["bf16", "fp32"])
def test_the_sampled_history_kernel_compiles_with_the_shipped_sizes(x: object) -> None:
    vectors = {
        "index_ptr": "*i64",
        **{f"{v}_ptr": "*fp32" for v in ("weight", "prev", "first", "upd", "dist")},
    }
    kernel = compile_for_sm90(
        kernels._sample_compiled, {**TABLES, **vectors}, {"X_DTYPE": x, "BLOCK": CFG.block}, TIER1_WARPS
    )
    assert kernel.metadata.num_warps == TIER1_WARPS  # type: ignore[attr-defined]
    assert kernel.asm["cubin"]  # type: ignore[attr-defined]


def test_the_shipped_sizes_fit_a_work_item_and_the_grid() -> None:
    assert CFG.chunk % CFG.block == 0 and CFG.chunk % (CFG.hist_block or CFG.block) == 0
    assert CFG.block % (32 * TIER1_WARPS) == 0  # whole elements per thread of the moved kernel
    for itemsize in (2, 4, 8):  # the partials kernel's block, a 16-byte row per thread, divides an item
        lanes, row = kernels.partials_block(CFG, itemsize)
        assert CFG.chunk % (lanes * row) == 0
    assert CFG.programs == 16 * H100_SMS
    # two partials programs fit a multiprocessor's 65,536 registers at once
    assert CFG.max_registers is not None and 2 * 32 * CFG.num_warps * CFG.max_registers <= 65536
