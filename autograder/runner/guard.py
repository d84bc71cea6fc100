"""The guard: what hidden tests rely on, snapshotted before any student code runs and put back before
every test cell (part of the runner, which runs inside the sandbox: standard library and the notebook's
packages only)."""

from __future__ import annotations

import builtins
import copyreg
import os
import sys
import threading

# Modules whose attributes tests rely on; snapshotted before any student code runs.
GUARDED_MODULES = (
    "builtins",
    "math",
    "operator",
    "functools",
    "torch",
    "torch.testing",
    "torch.testing._comparison",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.modules.module",
    "torch.linalg",
    "torch.autograd",
    "numpy",
    "numpy.testing",
    "numpy.testing._private.utils",
    "numpy.linalg",
    "numpy.random",
)
# Python-level classes whose methods tests use implicitly (comparisons, reductions).
GUARDED_CLASSES = ("torch.Tensor", "torch.nn.Module", "torch.nn.Parameter")
# Hooks through which an object can impersonate a tensor or an array.
IMPERSONATION_HOOKS = ("__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__")
TRUSTED_PACKAGES = ("torch", "numpy", "matplotlib", "IPython", "PIL", "scipy", "sympy", "functorch", "typing", "abc")


_known_classes: dict[int, type] | None = None  # set by remember_classes, in a fork server


def remember_classes() -> None:
    """In a fork server, before it forks: walk every class once (thousands, with torch loaded) so that each
    child starts its Guard from the walk's result instead of walking again. Fork copies the memory: the
    classes are the child's own."""
    global _known_classes
    _known_classes = _by_id(Guard._all_classes())


def _by_id(classes: list[type]) -> dict[int, type]:
    """Classes keyed by identity, each held by a strong reference. An id alone is not enough: once a known
    class is freed, a class the notebook makes next can get its address and so its id (CPython reuses the
    block at once), and would pass for known. A set of classes is not enough either: a metaclass's __eq__ and
    __hash__ decide membership. Holding the class keeps its id from being reused; `is` compares identity."""
    return {id(cls): cls for cls in classes}


def _resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(sys.modules[module], attr)


class Guard:
    """The state tests depend on, captured before any student code runs."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.modules = {name: sys.modules[name] for name in GUARDED_MODULES if name in sys.modules}
        self.module_attrs = {name: dict(vars(mod)) for name, mod in self.modules.items()}
        self.classes = {}
        for dotted in GUARDED_CLASSES:
            try:
                cls = _resolve(dotted)
            except (KeyError, AttributeError):
                continue
            # pickling an instance (torch.save) caches `__slotnames__` on its class: cache it before the snapshot,
            # or every torch.save reads as a change to torch.Tensor (a false tampering note)
            copyreg._slotnames(cls)  # type: ignore[attr-defined]
            self.classes[dotted] = (cls, dict(vars(cls)))
        known = _known_classes if _known_classes is not None else _by_id(self._all_classes())
        self.known_classes = dict(known)
        self.threads = self._thread_count()
        self.trusted: dict[str, object] = {}  # names bound by locked cells
        self.suspects: list[type] = []  # classes made by the notebook that imitate tensors
        self.torch = sys.modules.get("torch")
        if self.torch is not None:
            self.default_dtype = self.torch.get_default_dtype()
            self.default_device = self._default_device()

    @staticmethod
    def _thread_count() -> int:
        import _thread

        return _thread._count()

    def _default_device(self):
        getter = getattr(self.torch, "get_default_device", None)
        return getter() if getter else None

    @staticmethod
    def _all_classes() -> list[type]:
        seen, out, stack = set(), [], [object]
        while stack:
            cls = stack.pop()
            try:
                subclasses = type.__subclasses__(cls)
            except TypeError:
                continue
            for sub in subclasses:
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
                    stack.append(sub)
        return out

    # -- what student code may have changed -------------------------------------------------

    def changed(self) -> list[str]:
        """Guarded names whose value is not the one captured (identity)."""
        found = []
        for name, mod in self.modules.items():
            if sys.modules.get(name) is not mod:
                found.append(f"sys.modules[{name!r}]")
            current = vars(mod)
            for attr, value in self.module_attrs[name].items():
                if current.get(attr, _MISSING) is not value:
                    found.append(f"{name}.{attr}")
        for dotted, (cls, attrs) in self.classes.items():
            current = vars(cls)
            for attr in set(current) | set(attrs):
                if current.get(attr, _MISSING) is not attrs.get(attr, _MISSING):
                    found.append(f"{dotted}.{attr}")
        return found

    def restore_builtins(self) -> list[str]:
        if not self.enabled or "builtins" not in self.module_attrs:
            return []
        current, saved = vars(builtins), self.module_attrs["builtins"]
        fixed = [f"builtins.{name}" for name, value in saved.items() if current.get(name, _MISSING) is not value]
        current.update({name: saved[name] for name in saved if current.get(name, _MISSING) is not saved[name]})
        return fixed

    def restore(self, namespace: dict) -> list[str]:
        """Put every guarded name back; return what had to be put back."""
        fixed = self.changed()
        for name, mod in self.modules.items():
            sys.modules[name] = mod
            current = vars(mod)
            for attr, value in self.module_attrs[name].items():
                if current.get(attr, _MISSING) is not value:
                    current[attr] = value  # module __dict__ is a plain dict: no __setattr__ to fool
        for cls, attrs in self.classes.values():
            for attr in list(vars(cls)):
                if attr not in attrs:
                    type.__delattr__(cls, attr)
            for attr, value in attrs.items():
                if vars(cls).get(attr, _MISSING) is not value:
                    type.__setattr__(cls, attr, value)
        for name, value in self.trusted.items():
            if namespace.get(name, _MISSING) is not value:
                fixed.append(f"the name {name!r} defined by a provided cell")
                namespace[name] = value
        if self.torch is not None:
            torch = self.torch
            if torch.get_default_dtype() != self.default_dtype:
                fixed.append("torch's default dtype")
                torch.set_default_dtype(self.default_dtype)
            if self.default_device is not None and self._default_device() != self.default_device:
                fixed.append("torch's default device")
                torch.set_default_device(self.default_device)
            if not torch.is_grad_enabled():
                torch.set_grad_enabled(True)
        if sys.gettrace() is not None or sys.getprofile() is not None:
            fixed.append("a trace or profile function")
        fixed += _clear_global_module_hooks()
        sys.settrace(None)
        sys.setprofile(None)
        threading.settrace(None)
        threading.setprofile(None)
        return fixed

    def unfixable(self, new_classes: bool = True) -> list[str]:
        """Things that could make a test lie and that cannot simply be put back. `new_classes` False skips the
        walk over every class for new ones (5 ms with torch loaded, most of the guard's cost): the runner walks
        once per test, after it, and what it finds then (made by the test or before it) stays a suspect."""
        problems = []
        if self._thread_count() > self.threads:
            problems.append("a background thread started by the notebook is still running")
        torch = self.torch
        if torch is not None:
            if torch._C._len_torch_function_stack() > 0:
                problems.append("a torch function mode (TorchFunctionMode) is active")
                while torch._C._len_torch_function_stack() > 0:
                    torch._C._pop_torch_function_stack()
            try:
                from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

                if _get_current_dispatch_mode_stack():
                    problems.append("a torch dispatch mode (TorchDispatchMode) is active")
            except Exception:  # noqa: BLE001, S110 - private API; absent in some versions
                pass
        for cls in self._all_classes() if new_classes else ():
            if self.known_classes.get(id(cls)) is cls:
                continue
            self.known_classes[id(cls)] = cls
            if self._impersonates(cls):
                self.suspects.append(cls)
        if self.suspects:
            names = ", ".join(sorted({c.__qualname__ for c in self.suspects}))
            problems.append(
                f"the notebook defines a class that imitates tensors or arrays ({names}); graded code must return "
                "plain tensors"
            )
        return problems

    def _impersonates(self, cls: type) -> bool:
        bases = [_resolve(name) for name in ("torch.Tensor", "numpy.ndarray") if name.split(".")[0] in sys.modules]
        relevant = any(issubclass(cls, base) for base in bases if isinstance(base, type)) or any(
            hook in vars(cls) for hook in IMPERSONATION_HOOKS
        )
        if not relevant:
            return False
        return not _defined_by_trusted_package(cls)


_MISSING = object()


def _clear_global_module_hooks() -> list[str]:
    """torch.nn's global hooks run on every module call: one could rewrite every output."""
    module = sys.modules.get("torch.nn.modules.module")
    found = []
    for name, value in vars(module).items() if module else ():
        if name.startswith("_global_") and name.endswith("hooks") and isinstance(value, dict) and value:
            found.append(f"torch.nn global hooks ({name})")
            value.clear()
    return found


def _defined_by_trusted_package(cls: type) -> bool:
    """A class of an installed package (torch creates tensor subclasses lazily), not of a cell."""
    module = getattr(cls, "__module__", "") or ""
    if module.split(".")[0] not in TRUSTED_PACKAGES:
        return False
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and not any(os.path.realpath(code.co_filename).startswith(r) for r in roots):
            return False
    return True
