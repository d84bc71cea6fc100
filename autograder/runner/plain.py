"""Plain data: what a hidden test's probe may hand over from the student's process to the judge.

A probe (run in the sandboxed kernel, next to the student's code) ends by setting `probe` to plain data;
`encode` turns it into JSON, and `decode` (in the judge, a clean interpreter) reads it back without
running anything: JSON, and tensors rebuilt from their raw bytes. Allowed:

- None, bool, int, float (nan and inf too), complex, str;
- lists, tuples, and dicts whose keys are strings;
- torch.Tensor exactly (an `nn.Parameter` too), never a subclass of it: a subclass could change what
  comparing it does, and a tensor-like object could answer anything. Tensors are detached and moved to
  the CPU;
- torch.Size (read back as a tuple), torch.dtype, torch.device (read back as its name);
- numpy arrays of numbers and numpy scalars (read back as numbers).

Anything else (an object, a function, a module, a tensor subclass, more than `MAX_BYTES` of data of any kind:
strings and dict keys by their UTF-8 bytes, tensors and arrays by their raw bytes, each number as 8) is refused with
`NotPlain`, which fails the test cell with its reason. Student code can make what it hands over wrong,
never make the judge run something.

Part of the runner (standard library, torch and numpy only), imported by the judge too: the format is
defined once.
"""

from __future__ import annotations

import base64
import math
from typing import Any

MAX_BYTES = 8 << 20  # of data in one probe, every kind counted (strings, keys, numbers, tensors, arrays)
NUMBER_BYTES = 8  # what one number counts
MAX_ITEMS = 100_000  # values in one probe (containers included)
MAX_DEPTH = 20

# the tags of encoded values that are not JSON's own (every encoded container is tagged)
LIST, TUPLE, DICT, FLOAT, COMPLEX = "list", "tuple", "dict", "float", "complex"
TENSOR, ARRAY, DTYPE = "tensor", "array", "dtype"
TAGS = {LIST, TUPLE, DICT, TENSOR, ARRAY, DTYPE, COMPLEX, FLOAT}
TENSOR_DTYPES = {
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint8", "int8", "int16", "int32", "int64", "bool",
}  # fmt: skip


class NotPlain(ValueError):
    """The probe handed over something that is not plain data (the message says what and where)."""


class _Budget:
    def __init__(self) -> None:
        self.bytes = 0
        self.items = 0

    def spend(self, items: int = 1, size: int = 0, where: str = "") -> None:
        self.items += items
        self.bytes += size
        if self.items > MAX_ITEMS:
            raise NotPlain(f"more than {MAX_ITEMS} values (at {where})")
        if self.bytes > MAX_BYTES:
            raise NotPlain(f"more than {MAX_BYTES >> 20} MiB of tensor data, strings and numbers (at {where})")

    def spend_text(self, text: str, where: str) -> None:
        """A string's UTF-8 bytes (its length first: a string over the limit is refused before it is encoded)."""
        size = len(text) if len(text) > MAX_BYTES else len(text.encode("utf-8", "surrogatepass"))
        self.spend(items=0, size=size, where=where)


def encode(value: Any) -> Any:
    """`value` as JSON-ready data, or NotPlain."""
    return _encode(value, _Budget(), "probe", 0)


def _encode(value: Any, budget: _Budget, where: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain(f"nested more than {MAX_DEPTH} deep (at {where})")
    kind = type(value)
    budget.spend(size=0 if value is None or kind is str else NUMBER_BYTES, where=where)
    if kind is str:
        budget.spend_text(value, where)
        return value
    if value is None or kind is bool:
        return value
    if kind is int:
        if abs(value) >= 1 << 63:
            raise NotPlain(f"{where} is an integer too large to hand over")
        return value
    if kind is float:
        return value if math.isfinite(value) else {FLOAT: repr(value)}
    if kind is complex:
        return {COMPLEX: [_encode(value.real, budget, where, depth + 1), _encode(value.imag, budget, where, depth + 1)]}
    if kind is list or kind is tuple:
        items = [_encode(item, budget, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
        return {LIST if kind is list else TUPLE: items}
    if kind is dict:
        pairs = []
        for key, item in value.items():
            if type(key) is not str:
                raise NotPlain(f"{where} has a key that is not a string: a {type(key).__name__}")
            budget.spend_text(key, f"{where}[a key]")
            pairs.append([key, _encode(item, budget, f"{where}[{key!r}]", depth + 1)])
        return {DICT: pairs}
    torch_value = _encode_torch(value, budget, where)
    if torch_value is not None:
        return torch_value
    numpy_value = _encode_numpy(value, budget, where, depth)
    if numpy_value is not None:
        return numpy_value
    raise NotPlain(f"{where} is a {_type_name(value)}, not plain data (numbers, strings, tensors, lists, dicts)")


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


def _encode_torch(value: Any, budget: _Budget, where: str) -> Any:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    kind = type(value)
    if kind is torch.Tensor or kind is torch.nn.Parameter:
        name = str(value.dtype).removeprefix("torch.")
        if name not in TENSOR_DTYPES:
            raise NotPlain(f"{where} is a tensor of {value.dtype}, which is not handed over")
        if value.layout is not torch.strided:
            raise NotPlain(f"{where} is a {value.layout} tensor: hand over a dense one")
        flat = value.detach().to("cpu").contiguous().reshape(-1)
        size = flat.numel() * flat.element_size()
        budget.spend(size=size, where=where)
        raw = flat.view(torch.uint8).numpy().tobytes() if size else b""
        return {TENSOR: {"dtype": name, "shape": list(value.shape), "data": base64.b64encode(raw).decode()}}
    if kind is torch.Size:
        return {TUPLE: [int(n) for n in value]}
    if kind is torch.dtype:
        return {DTYPE: str(value).removeprefix("torch.")}
    if kind is torch.device:
        return str(value)
    if isinstance(value, torch.Tensor):
        raise NotPlain(f"{where} is a {_type_name(value)}, a subclass of torch.Tensor: hand over a plain tensor")
    return None


def _encode_numpy(value: Any, budget: _Budget, where: str, depth: int) -> Any:
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    kind = type(value)
    if kind is numpy.ndarray:
        if value.dtype.kind not in "biufc":
            raise NotPlain(f"{where} is an array of {value.dtype}, not of numbers")
        budget.spend(size=value.nbytes, where=where)
        data = base64.b64encode(value.tobytes(order="C")).decode()  # a 0-d array stays 0-d (ascontiguousarray: 1-d)
        return {ARRAY: {"dtype": value.dtype.str, "shape": list(value.shape), "data": data}}
    if isinstance(value, numpy.generic) and kind.__module__ == "numpy" and numpy.dtype(kind).kind in "biufc":
        return _encode(value.item(), budget, where, depth + 1)
    return None


def decode(data: Any) -> Any:
    """What `encode` wrote, read back (tensors need torch, arrays numpy); NotPlain for anything else, including
    data forged to break the reader (bad base64, a short complex, an unknown array dtype)."""
    try:
        return _decode(data, "probe", 0, _Budget())
    except NotPlain:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise NotPlain(f"malformed data ({type(exc).__name__}: {str(exc)[:200]})") from None


def _decode(data: Any, where: str, depth: int, budget: _Budget) -> Any:
    if depth > MAX_DEPTH + 2:
        raise NotPlain(f"nested too deep (at {where})")
    # the same limit as `encode`: data written past it (a forged frame) is refused here too
    budget.spend(size=0 if data is None or type(data) is str else NUMBER_BYTES, where=where)
    if type(data) is str:
        budget.spend_text(data, where)
        return data
    if data is None or type(data) in (bool, int, float):
        return data
    if type(data) is not dict or len(data) != 1:
        raise NotPlain(f"{where}: not an encoded value")
    ((tag, body),) = data.items()
    if tag == LIST:
        return [_decode(item, f"{where}[{i}]", depth + 1, budget) for i, item in enumerate(_list(body, where))]
    if tag == TUPLE:
        return tuple(_decode(item, f"{where}[{i}]", depth + 1, budget) for i, item in enumerate(_list(body, where)))
    if tag == DICT:
        out = {}
        for pair in _list(body, where):
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise NotPlain(f"{where}: a malformed dict entry")
            budget.spend_text(pair[0], f"{where}[a key]")
            out[pair[0]] = _decode(pair[1], f"{where}[{pair[0]!r}]", depth + 1, budget)
        return out
    if tag == FLOAT:
        if body not in ("nan", "inf", "-inf"):
            raise NotPlain(f"{where}: {body!r} is not a float")
        return float(body)
    if tag == COMPLEX:
        real, imag = _list(body, where)
        return complex(_decode(real, where, depth + 1, budget), _decode(imag, where, depth + 1, budget))
    if tag == DTYPE:
        import torch

        if body not in TENSOR_DTYPES:
            raise NotPlain(f"{where}: {body!r} is not a dtype")
        return getattr(torch, body)
    if tag == TENSOR:
        return _decode_tensor(body, where, budget)
    if tag == ARRAY:
        return _decode_array(body, where, budget)
    raise NotPlain(f"{where}: unknown tag {tag!r}")


def _list(body: Any, where: str) -> list:
    if type(body) is not list:
        raise NotPlain(f"{where}: a malformed container")
    return body


def _shape(body: dict, where: str, budget: _Budget) -> tuple[list[int], bytes]:
    shape, data = body.get("shape"), body.get("data")
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape) or type(data) is not str:
        raise NotPlain(f"{where}: a malformed tensor")
    budget.spend(items=0, size=len(data) * 3 // 4, where=where)  # the raw bytes, counted before they are decoded
    return shape, base64.b64decode(data, validate=True)


def _decode_tensor(body: Any, where: str, budget: _Budget) -> Any:
    import torch

    if type(body) is not dict or body.get("dtype") not in TENSOR_DTYPES:
        raise NotPlain(f"{where}: a malformed tensor")
    shape, raw = _shape(body, where, budget)
    dtype = getattr(torch, body["dtype"])
    count = math.prod(shape)
    if len(raw) != count * torch.empty((), dtype=dtype).element_size():
        raise NotPlain(f"{where}: a tensor whose data does not match its shape")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).clone()


def _decode_array(body: Any, where: str, budget: _Budget) -> Any:
    import numpy

    if type(body) is not dict or type(body.get("dtype")) is not str:
        raise NotPlain(f"{where}: a malformed array")
    shape, raw = _shape(body, where, budget)
    dtype = numpy.dtype(body["dtype"])
    if dtype.kind not in "biufc" or len(raw) != math.prod(shape) * dtype.itemsize:
        raise NotPlain(f"{where}: a malformed array")
    return numpy.frombuffer(raw, dtype=dtype).reshape(shape).copy()
