"""Process priming: what a kernel process does once, after it has isolated itself and before any notebook runs
(part of the runner, which runs inside the sandbox: standard library and the notebook's packages only).

The order is the defence: every module tests rely on is imported (`pre_warm`) and the random state seeded
(`seed_everything`) before the kernel's Runner makes its shell and its Guard snapshots those modules, so a
student's cell finds them already imported and cannot patch them before the snapshot. In a fork server this
happens once, before the fork (with `prepare_for_forks`), and each child seeds again before its Runner.
"""

from __future__ import annotations

import sys

from .guard import GUARDED_MODULES, remember_classes
from .shell import make_shell

# Imported once, before any notebook runs (and, in a fork server, before the fork). torch._dynamo, before the
# guard's snapshot: when first imported (by an optimizer's first step, say) it rebinds torch.manual_seed and others,
# which the guard would report as changed by the code under test; it also brings what assert_close's first call
# imports (sympy) and what torch.use_deterministic_algorithms imports (Inductor's config, 1 s when done there).
PRE_WARMED = (
    "numpy",
    "torch",
    "torch._dynamo",
    "matplotlib",
    "matplotlib.pyplot",
    "IPython.core.interactiveshell",
    "matplotlib_inline.backend_inline",
    "traitlets.config",
)


def pre_warm() -> None:
    """Import the notebook's packages and every guarded module (those a notebook does not need are skipped)."""
    for name in (*PRE_WARMED, *GUARDED_MODULES):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001, S110 - exercises that do not need it
            pass


def seed_everything(seed: int = 0) -> None:
    """Every kernel starts from the same random state, with torch's deterministic algorithms
    on where the platform has them (warn_only: an op without one still runs)."""
    import random

    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # CPU and every CUDA device
        try:
            torch.use_deterministic_algorithms(True, warn_only=True)  # free once torch._dynamo is imported
        except Exception:  # noqa: BLE001, S110 - an old or partial torch: seeded is still better than nothing
            pass


def prepare_for_forks() -> None:
    """What every child of a fork server would otherwise redo: the shell, and the Guard's walk over all classes
    (together about 60 ms of each submission's start on a quiet machine, three times that on a busy one).
    Nothing of a submission runs before the fork, so each child starts from the same untouched shell."""
    make_shell()
    remember_classes()
