"""Builds the optional C kernel of the PyTorch hook's CPU path; everything else is in pyproject.toml.

Optional: without a C compiler the package still installs, and the hook reduces CPU tensors with
torch ops instead (`trainguard.capture.torch.c_kernel.AVAILABLE` tells which). Release builds set
TRAINGUARD_REQUIRE_C_KERNEL=1 (pyproject.toml's [tool.cibuildwheel]): a wheel that failed to
compile it then fails to build instead of shipping without it.
"""

import os

from setuptools import Extension, setup

REQUIRE_C_KERNEL = os.environ.get("TRAINGUARD_REQUIRE_C_KERNEL", "") == "1"

setup(
    ext_modules=[
        Extension(
            "trainguard.capture._cstats",
            ["trainguard/capture/_cstats.c"],
            # omp simd: lets the compiler vectorise the float64 reductions without -ffast-math
            # (which would break the NaN/Inf semantics); no OpenMP runtime is linked.
            extra_compile_args=["-O3", "-fopenmp-simd", "-std=c11"],
            optional=not REQUIRE_C_KERNEL,
        )
    ]
)
