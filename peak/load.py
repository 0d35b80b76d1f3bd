"""Resolve a reference to a PE spec class: the one resolver of the command line, the garnet
configuration (field ``pe``) and the mapper.

Grammar of ``ref`` (exactly one ``:``)::

    package.module:Class            imported from sys.path (``peak.examples.cgra_pe:PE``)
    path/to/file.py:Class           loaded from the file (``my_pe.py:PE``)
    package.module:factory(8, 16)   a call with literal arguments
                                    (``peak.examples.toy_pe:make_toy_pe(8)``)
    package.module:Outer.Inner      a dotted attribute path

A relative ``file.py`` is resolved against ``base`` when given (a TOML configuration passes
its own directory) and against the current directory otherwise. The file is executed once
per (resolved path, content) as a module named ``_peak_spec_<stem>_<sha12>`` (sha256 of the
resolved path and the file's bytes) registered in ``sys.modules``, so :func:`peak.spec_hash`
finds its source, two files with the same stem never collide, and loading an unchanged file
again returns the same class (while an edited file gets a new module and new classes).
While the file executes its directory is first on ``sys.path`` (sibling imports work).

Errors: every failure raises :class:`cgra.errors.SpecError` with a one-line message that
starts with ``where`` (e.g. ``"configs/x.toml: field 'pe' = 'my_pe.py:PE': ..."``) or with
``"PE spec 'my_pe.py:PE': ..."`` and ends with the fix; a file that does not import (a
syntax error, an exception while it executes) leads with the place: ``path:line:
SyntaxError: invalid syntax (<where>: the file does not import); fix ...`` (``.file`` and
``.line`` on the exception), as the spec's own errors do. Resolution does not normalise the
spec; call :func:`peak.normal_form` for the spec's own errors (``file:line: ...``).
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from cgra.errors import SpecError
from peak.spec import Peak

_FORM = ("give it as module:Class, path/to/file.py:Class or module:factory(args) "
         "(e.g. peak.examples.cgra_pe:PE)")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _module_name(path: Path, source: bytes) -> str:
    digest = hashlib.sha256(str(path).encode() + b"\0" + source).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    return f"_peak_spec_{stem}_{digest}"


def _load_file(file: str, base: str | Path | None, prefix: str) -> Any:
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
    name = _module_name(path, source)
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


def load_spec(ref: str, where: str | None = None, base: str | Path | None = None) -> type:
    """The :class:`~peak.spec.Peak` subclass named by ``ref`` (grammar in the module
    docstring).

    ``where`` names the origin of ``ref`` for messages (a configuration field such as
    ``"configs/x.toml: field 'pe'"``); ``base`` is the directory a relative ``file.py`` is
    resolved against (default: the current directory).

    Raises :class:`cgra.errors.SpecError` (one line, naming ``where`` or ``ref`` and the fix)
    when ``ref`` is malformed, its module or file does not import, the attribute does not
    exist, a factory call fails, or the object is not a Peak spec class."""
    prefix = f"{where} = {ref!r}" if where else f"PE spec {ref!r}"
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise SpecError(f"{prefix}: not of the form module:Class (or file.py:Class); {_FORM}")
    mod_name, attr = (s.strip() for s in ref.split(":"))
    if not mod_name or not attr:
        raise SpecError(f"{prefix}: not of the form module:Class (or file.py:Class); {_FORM}")
    if mod_name.endswith(".py") or "/" in mod_name or "\\" in mod_name:
        module = _load_file(mod_name, base, prefix)
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
    if "(" in attr:
        if not attr.endswith(")"):
            raise SpecError(f"{prefix}: malformed factory call '{attr}'; write "
                            "factory(arg, ...) with literal arguments")
        fname, argstr = attr[:-1].split("(", 1)
        try:
            call_args = ast.literal_eval(f"({argstr},)") if argstr.strip() else ()
        except (ValueError, SyntaxError) as e:
            raise SpecError(f"{prefix}: factory arguments '{argstr}' are not literals "
                            f"({_first_line(e)}); pass ints, strings or other literals") \
                from None
        attr = fname.strip()
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n, v in vars(module).items()
                            if not n.startswith("_") and isinstance(v, type)
                            and issubclass(v, Peak) and v is not Peak)
            where_mod = f"file {module.__file__}" if module.__name__ != mod_name \
                else f"module {mod_name}"
            raise SpecError(f"{prefix}: {where_mod} has no attribute '{attr}'; Peak spec "
                            f"classes there: {public or 'none'}")
        obj = getattr(obj, part)
    if call_args is not None:
        if not callable(obj):
            raise SpecError(f"{prefix}: {attr} is not callable; drop the (...) or name a "
                            "factory function")
        try:
            obj = obj(*call_args)
        except SpecError:
            raise
        except Exception as e:  # noqa: BLE001 - reported in one line
            raise SpecError(f"{prefix}: {attr}({', '.join(map(repr, call_args))}) failed "
                            f"({type(e).__name__}: {_first_line(e)}); check the factory's "
                            "arguments") from None
    if not (isinstance(obj, type) and issubclass(obj, Peak) and obj is not Peak):
        try:
            file = inspect.getsourcefile(module)
        except TypeError:
            file = None
        what = "a factory" if callable(obj) and not isinstance(obj, type) else \
            f"a {type(obj).__name__}" if not isinstance(obj, type) else f"class {obj.__name__}"
        hint = f" (call it: {attr}(...))" if what == "a factory" else ""
        raise SpecError(f"{prefix}: {attr} is not a PEak spec class (got {what}{hint}"
                        f"{', in ' + file if file else ''}); name a subclass of peak.Peak")
    return obj


def spec_ref(spec: type) -> str:
    """A reference :func:`load_spec` resolves back to ``spec`` in another process:
    ``module:Qualname``, or ``/abs/path/file.py:Qualname`` for a spec loaded from a file,
    or the spec's own ``peak_ref`` attribute when its class sets one (a class made by a
    factory, e.g. ``peak.examples.cgra_pe:make_pe(32)``)."""
    ref = vars(spec).get("peak_ref")
    if isinstance(ref, str):
        return ref
    mod = sys.modules.get(spec.__module__)
    if spec.__module__.startswith("_peak_spec_") and getattr(mod, "__file__", None):
        return f"{mod.__file__}:{spec.__qualname__}"
    return f"{spec.__module__}:{spec.__qualname__}"
