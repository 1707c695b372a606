"""Plain data across the jail's wall: `encode` turns a value into JSON-able data, `decode` rebuilds it.

Only values of EXACT built-in types cross: None, bool, int, float, complex, str, bytes, `Fraction`,
`Decimal`, and lists, tuples, dicts, sets and frozensets of them. JSON carries None, bool, int, float, str and list as
themselves; every other type is a one-key object (`{"tuple": [...]}`, `{"dict": [[k, v], ...]}`,
`{"float": "nan"}`, ...). `decode` accepts nothing else, so no object with its own `__eq__`, `__hash__`
or `__bool__` can reach the side that compares. `encode(..., convert=True)` (the jail side, on a
solution's return value) turns a subclass of a built-in type (an `IntEnum`, a `namedtuple`, a `Counter`,
an int whose `__eq__` always says yes) into the base type through the base type's own methods, so the
subclass's overrides never run; anything else is refused.

This file is stdlib-only: the jailed worker imports it by path (`rlvr/harness/worker.py`).

>>> decode(encode({(1, 2): [1.5, None, frozenset({"a"})]}))
{(1, 2): [1.5, None, frozenset({'a'})]}
>>> decode({"float": "nan"}) != decode({"float": "nan"})
True
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_SAME_HASH", "PlainDataError", "decode", "encode"]

MAX_DEPTH = 64  # nesting deeper than this (or a cycle) is refused on both sides
MAX_SAME_HASH = 64  # elements of one set or dict sharing one hash (a hash-flooding reply is refused)
_BIG_INT_BITS = 13_000  # about 3,900 decimal digits
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class PlainDataError(ValueError):
    """A value that is not plain data of an exact built-in type (or a malformed encoding of one)."""


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _convert(x: Any) -> Any:
    """A subclass instance of a built-in type as the base type, through the base type's own methods.
    `issubclass(type(x), ...)`, never `isinstance`, which a `__class__` property can fool."""
    t = type(x)
    if issubclass(t, int):
        return int.__int__(x)
    if issubclass(t, float):
        return float.__float__(x)
    if issubclass(t, str):
        return str.__str__(x)
    if issubclass(t, bytes):
        return bytes(memoryview(x))
    if issubclass(t, tuple):
        return tuple(tuple.__iter__(x))
    if issubclass(t, list):
        return list(list.__iter__(x))
    if issubclass(t, dict):
        return {k: dict.__getitem__(x, k) for k in dict.__iter__(x)}
    if issubclass(t, frozenset):
        return frozenset(frozenset.__iter__(x))
    if issubclass(t, set):
        return set(set.__iter__(x))
    raise PlainDataError(f"an object of type {t.__name__[:60]} is not plain data")


def encode(x: Any, *, convert: bool = False, _depth: int = 0) -> Any:
    """`x` as JSON-able data (see the module docstring); raises `PlainDataError` on anything else."""
    if _depth > MAX_DEPTH:
        raise PlainDataError(f"nested deeper than {MAX_DEPTH} levels")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:  # beyond ~4,000 digits as hex: json's decimal conversion is capped (sys.int_info)
        return x if x.bit_length() <= _BIG_INT_BITS else {"int": hex(x)}
    if t is float:
        return _float(x)
    d = _depth + 1
    if t is list:
        return [encode(v, convert=convert, _depth=d) for v in x]
    if t is tuple:
        return {"tuple": [encode(v, convert=convert, _depth=d) for v in x]}
    if t is dict:
        return {
            "dict": [[encode(k, convert=convert, _depth=d), encode(v, convert=convert, _depth=d)] for k, v in x.items()]
        }
    if t is set or t is frozenset:
        return {t.__name__: [encode(v, convert=convert, _depth=d) for v in x]}
    if t is complex:
        return {"complex": [_float(x.real), _float(x.imag)]}
    if t is bytes:
        return {"bytes": x.hex()}
    if t is Fraction:
        return {"fraction": [encode(x.numerator), encode(x.denominator)]}
    if t is Decimal:
        return {"decimal": str(x)}
    if convert:
        y = _convert(x)
        if type(y) is t:  # a built-in's method handed back the subclass: refuse rather than loop
            raise PlainDataError(f"an object of type {t.__name__[:60]} is not plain data")
        return encode(y, convert=True, _depth=_depth)
    raise PlainDataError(f"an object of type {t.__name__[:60]} is not plain data")


def _scalar_float(v: Any) -> float:
    if type(v) is float or type(v) is int:
        return float(v)
    if type(v) is dict and len(v) == 1 and v.get("float") in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[v["float"]]
    raise PlainDataError("malformed float")


def _hashable(items: list[Any]) -> list[Any]:
    """`items` if hashing them is cheap: ints (and floats, tuples) can be chosen to share one hash, and
    a set of n such values costs n^2 to build, so more than MAX_SAME_HASH elements with one hash are
    refused (sorting the hashes costs n log n)."""
    hashes = sorted(map(hash, items))
    run = 1
    for a, b in zip(hashes, hashes[1:], strict=False):
        run = run + 1 if a == b else 1
        if run > MAX_SAME_HASH:
            raise PlainDataError(f"more than {MAX_SAME_HASH} elements of a set or dict share one hash")
    return items


def decode(j: Any, _depth: int = 0) -> Any:
    """The value `encode` encoded; raises `PlainDataError` on anything `encode` never writes."""
    if _depth > MAX_DEPTH:
        raise PlainDataError(f"nested deeper than {MAX_DEPTH} levels")
    t = type(j)
    if j is None or t is bool or t is int or t is float or t is str:
        return j
    d = _depth + 1
    if t is list:
        return [decode(v, d) for v in j]
    if t is not dict or len(j) != 1:
        raise PlainDataError(f"not an encoding of plain data: {t.__name__}")
    ((tag, v),) = j.items()
    try:
        if tag == "float":
            return _scalar_float(j)
        if tag == "complex" and type(v) is list and len(v) == 2:
            return complex(_scalar_float(v[0]), _scalar_float(v[1]))
        if tag == "bytes" and type(v) is str:
            return bytes.fromhex(v)
        if tag == "int" and type(v) is str and len(v) <= _BIG_INT_BITS:
            return int(v, 16)
        if tag == "decimal" and type(v) is str and len(v) <= 10_000:
            return Decimal(v)
        if tag == "fraction" and type(v) is list and len(v) == 2:
            num, den = (decode(n, d) for n in v)
            if type(num) is not int or type(den) is not int:
                raise PlainDataError("malformed fraction")
            return Fraction(num, den)
        if type(v) is not list:
            raise PlainDataError(f"malformed {tag!r}")
        if tag == "tuple":
            return tuple(decode(x, d) for x in v)
        if tag == "set":
            return set(_hashable([decode(x, d) for x in v]))
        if tag == "frozenset":
            return frozenset(_hashable([decode(x, d) for x in v]))
        if tag == "dict":
            if not all(type(p) is list and len(p) == 2 for p in v):
                raise PlainDataError("malformed dict")
            keys = _hashable([decode(k, d) for k, _ in v])
            return dict(zip(keys, (decode(x, d) for _, x in v), strict=True))
    except (TypeError, ValueError, ZeroDivisionError, InvalidOperation) as e:  # unhashable, bad hex, 1/0
        raise PlainDataError(f"malformed {tag!r}: {e}") from e
    raise PlainDataError(f"unknown tag {str(tag)[:40]!r}")
