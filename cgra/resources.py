"""What the three DSLs' resource vectors (``peak.resources``, ``lake.resources``,
``canal.resources``: the ``resources.json`` of a design, issue 34 item 4) share: the width
class of a port or track, and the typed reading of a per-class count table."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cgra.errors import CollateralError


def width_class(width: int, data_width: int) -> str:
    """The width class of a ``width``-bit port or track: ``"word"`` (``data_width`` bits),
    ``"bit"`` (1 bit) or ``"<width>b"``."""
    if width == data_width:
        return "word"
    if width == 1:
        return "bit"
    return f"{width}b"


def counts(doc: Any, key: str) -> Mapping[str, int]:
    """``doc[key]``, an object of width class -> count, as a read-only mapping of ints.
    Raises ``KeyError`` / ``TypeError`` / ``ValueError`` for a malformed table (the readers
    turn them into a :class:`~cgra.errors.CollateralError` naming the file)."""
    value = doc[key]
    if not isinstance(value, dict):
        raise TypeError(f"'{key}' is not an object")
    return MappingProxyType({str(k): int(v) for k, v in value.items()})


def check_schema(doc: Any, schema: str, where: str) -> None:
    """Raise :class:`~cgra.errors.CollateralError` naming ``where`` unless ``doc`` is an
    object whose ``schema`` is ``schema`` (the design must then be regenerated)."""
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise CollateralError(f"{where}: schema {got!r} is not {schema!r}; regenerate the "
                              f"design with `cgra rtl`")
