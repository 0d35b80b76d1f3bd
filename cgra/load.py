"""Resolve a reference to a Python object given in a configuration: a PE spec class
(:mod:`peak.load`), a Lake memory spec (field ``mem``), an interconnect build function
(field ``interconnect``).

Grammar of ``ref`` (exactly one ``:``)::

    package.module:name             imported from sys.path (``peak.examples.cgra_pe:PE``)
    path/to/file.py:name            loaded from the file (``my_mem.py:MEM``)
    package.module:factory(8, 16)   a call with literal arguments, positional or keyword
                                    (``make_dataflow_pe(32, 3, 16, 64, div=True)``)
    package.module:Outer.Inner      a dotted attribute path

A relative ``file.py`` is resolved against ``base`` when given (a TOML configuration passes
its own directory) and against the current directory otherwise. The file is executed once
per (resolved path, content) as a module named ``<module_prefix><stem>_<sha12>`` (sha256 of
the resolved path and the file's bytes) registered in ``sys.modules``, so two files with
the same stem never collide and loading an unchanged file again returns the same objects
(an edited file gets a new module). While the file executes its directory is first on
``sys.path`` (sibling imports work). The module's ``__peak_source__`` holds the bytes
executed (content hashes of the spec).

Errors: every failure raises :class:`cgra.errors.SpecError` with a one-line message that
starts with ``where`` (e.g. ``"configs/x.toml: field 'mem' = 'my_mem.py:MEM': ..."``) and
ends with the fix; a file that does not import (a syntax error, an exception while it
executes) leads with the place: ``path:line: SyntaxError: invalid syntax (<where>: the file
does not import); fix ...`` (``.file`` and ``.line`` on the exception).
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from cgra.errors import SpecError

def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _module_name(path: Path, source: bytes, prefix: str) -> str:
    digest = hashlib.sha256(str(path).encode() + b"\0" + source).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    return f"{prefix}{stem}_{digest}"


def load_file(file: str, base: str | Path | None, prefix: str,
              module_prefix: str = "_cgra_ref_") -> Any:
    """The module of Python file ``file`` (relative to ``base``), executed once per (resolved
    path, content) as ``<module_prefix><stem>_<sha12>``; errors as in the module docstring,
    led by ``prefix``."""
    path = Path(file).expanduser()
    if not path.is_absolute():
        path = Path(base or ".") / path
    path = path.resolve()
    if not path.is_file():
        rel = "absolute, or relative to the current directory"
        if base is not None:
            rel = f"absolute, or relative to {Path(base)}"
        raise SpecError(f"{prefix}: file {path} does not exist; give the path of an "
                        f"existing Python file ({rel})")
    source = path.read_bytes()
    name = _module_name(path, source, module_prefix)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SpecError(f"{prefix}: cannot load {path} as a Python module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    module.__peak_source__ = source    # the text executed (spec_hash; the file may change)
    sys.modules[name] = module
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except SpecError as e:
        del sys.modules[name]
        raise SpecError(f"{prefix}: {e}") from None
    except Exception as e:  # noqa: BLE001 - any failure of the user's file is one line
        del sys.modules[name]
        file, line = _error_site(e, path)
        if line is None:
            raise SpecError(f"{prefix}: file {path} does not import ({type(e).__name__}: "
                            f"{_first_line(e)}); fix the file so that `python {path}` "
                            f"runs") from None
        raise SpecError(f"{type(e).__name__}: {_message(e)} ({prefix}: the file does not "
                        f"import); fix the file so that `python {path}` runs",
                        file=file, line=line) from None
    finally:
        if folder in sys.path:          # the first occurrence: the one inserted above
            sys.path.remove(folder)
    return module


def _message(e: BaseException) -> str:
    """The first line of ``e``'s message; a SyntaxError's without its ``(file, line N)``
    suffix (the location leads the error: :func:`_error_site`)."""
    if isinstance(e, SyntaxError) and e.msg:
        return str(e.msg).splitlines()[0]
    return _first_line(e)


def _error_site(e: BaseException, path: Path) -> tuple[str, int | None]:
    """``(file, line)`` where the import of ``path`` failed: a SyntaxError's own location
    (``path`` or a file it imports), else the last line of ``path`` in the traceback of
    ``e``; ``(str(path), None)`` when neither is known."""
    if isinstance(e, SyntaxError) and e.lineno and e.filename:
        return e.filename, int(e.lineno)
    line = None
    tb = e.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return str(path), line



def resolve(ref: str, prefix: str, base: str | Path | None = None, *,
            form: str = "give it as module:name, path/to/file.py:name or module:factory(args)",
            noun: str = "names", module_prefix: str = "_cgra_ref_",
            candidates: Callable[[Any], Iterable[str]] | None = None) -> tuple[Any, Any, str]:
    """``(object, module, attribute text)`` named by ``ref`` (grammar in the module
    docstring), a factory already called. ``prefix`` leads every message (``"<where> =
    '<ref>'"``); ``form`` is the fix for a malformed reference; ``candidates(module)`` lists
    the names offered when the attribute is missing (``noun``: what they are, plural). An
    exception raised by a factory of a file (``file.py:factory(...)``) carries that file's line of the raise. Raises
    :class:`SpecError` (one line) when ``ref`` is malformed, its module or file does not
    import, the attribute does not exist or a factory call fails. The caller checks the
    object's kind."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise SpecError(f"{prefix}: not of the form module:Class (or file.py:Class); {form}")
    mod_name, attr = (s.strip() for s in ref.split(":"))
    if not mod_name or not attr:
        raise SpecError(f"{prefix}: not of the form module:Class (or file.py:Class); {form}")
    if mod_name.endswith(".py") or "/" in mod_name or "\\" in mod_name:
        module = load_file(mod_name, base, prefix, module_prefix)
    else:
        try:
            module = importlib.import_module(mod_name)
        except SyntaxError as e:        # the module's own text: its file and line lead
            raise SpecError(f"SyntaxError: {_message(e)} ({prefix}: module {mod_name} does "
                            f"not import); fix the file", file=e.filename or mod_name,
                            line=e.lineno) from None
        except Exception as e:  # noqa: BLE001 - any import failure is reported in one line
            raise SpecError(f"{prefix}: module {mod_name} does not import "
                            f"({type(e).__name__}: {_first_line(e)}); check the module path "
                            "and that it is importable (or give path/to/file.py)") from None
    call_args: tuple | None = None
    call_kwargs: dict[str, Any] = {}
    if "(" in attr:
        if not attr.endswith(")"):
            raise SpecError(f"{prefix}: malformed factory call '{attr}'; write "
                            "factory(arg, ...) with literal arguments")
        fname, argstr = attr[:-1].split("(", 1)
        try:
            node = ast.parse(f"f({argstr})", mode="eval").body
            if not isinstance(node, ast.Call) or any(k.arg is None for k in node.keywords):
                raise ValueError("malformed argument list")
            call_args = tuple(ast.literal_eval(a) for a in node.args)
            call_kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except (ValueError, SyntaxError) as e:
            raise SpecError(f"{prefix}: factory arguments '{argstr}' are not literals "
                            f"({_first_line(e)}); pass ints, strings or other literals") \
                from None
        attr = fname.strip()
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(candidates(module)) if candidates else []
            where_mod = f"file {module.__file__}" if module.__name__ != mod_name \
                else f"module {mod_name}"
            raise SpecError(f"{prefix}: {where_mod} has no attribute '{attr}'; {noun} "
                            f"there: {public or 'none'}")
        obj = getattr(obj, part)
    from_file = module.__name__.startswith(module_prefix)
    if call_args is not None:
        if not callable(obj):
            raise SpecError(f"{prefix}: {attr} is not callable; drop the (...) or name a "
                            "factory function")
        try:
            obj = obj(*call_args, **call_kwargs)
        except SpecError as e:
            if e.file is not None or not from_file:
                raise
            file, line = _error_site(e, Path(module.__file__))
            raise SpecError(f"{prefix}: {e}", file=file if line else None, line=line) from None
        except Exception as e:  # noqa: BLE001 - reported in one line
            args = [*map(repr, call_args), *(f"{k}={v!r}" for k, v in call_kwargs.items())]
            call = f"{attr}({', '.join(args)})"
            file, line = (_error_site(e, Path(module.__file__)) if from_file
                          else (None, None))
            raise SpecError(f"{prefix}: {call} failed ({type(e).__name__}: {_first_line(e)}); "
                            "check the factory's arguments", file=file if line else None,
                            line=line) from None
    return obj, module, attr
