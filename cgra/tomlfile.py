"""Reading a TOML file the user wrote (a design's parameters, a DSE sweep) with the
project's one-line error form: ``path:line: TOML syntax error: <what> (column C); <fix>``,
as every other spec error (``file:line: ...``, :class:`cgra.errors.SpecError`)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from cgra.errors import ConfigError

#: where Python's TOML parser (tomllib, 3.11) puts the location in its message
_AT = re.compile(r"^(?P<what>.*?)\s*\(at (?:line (?P<line>\d+), column (?P<col>\d+)|"
                 r"(?P<end>end of document))\)\s*$", re.S)


def syntax_error(path: str | Path, text: str, exc: tomllib.TOMLDecodeError,
                 fix: str) -> ConfigError:
    """The :class:`ConfigError` of a TOML syntax error ``exc`` in file ``path`` (its
    ``text``): ``path:line: TOML syntax error: <what> (column C); <fix>``, the line and
    column (1-based) taken from the parser's message (the last line for an error at the end
    of the document)."""
    msg = " ".join(str(exc).split())
    m = _AT.match(msg)
    if m is None:
        return ConfigError(f"{path}: TOML syntax error: {msg}; {fix}")
    if m.group("end"):
        line, col = max(1, len(text.splitlines())), None
    else:
        line, col = int(m.group("line")), int(m.group("col"))
    where = f" (column {col})" if col is not None else " (at the end of the file)"
    return ConfigError(f"{path}:{line}: TOML syntax error: {m.group('what')}{where}; {fix}")


def read_toml(path: str | Path, fix: str = "correct the TOML syntax") -> dict[str, Any]:
    """The document of TOML file ``path`` (an existing file: callers check and name it).
    Raises :class:`ConfigError` (one line) for text that is not UTF-8 (``path: not UTF-8
    text at byte N``) or a TOML syntax error (:func:`syntax_error`)."""
    p = Path(path)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}:{line}: not UTF-8 text (byte {exc.start}: "
                          f"{data[exc.start:exc.start + 1]!r}); save the file as UTF-8 "
                          f"TOML") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise syntax_error(p, text, exc, fix) from None


__all__ = ["read_toml", "syntax_error"]
