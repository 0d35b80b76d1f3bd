"""Resolve a PE spec reference given on the command line.

Forms: ``package.module:Class`` (imported from ``sys.path``), ``path/to/file.py:Class``
(loaded from the file; the module is registered in ``sys.modules`` under its file stem so
``spec_hash`` can read its source), and ``package.module:factory(8)`` (a call with int
arguments, e.g. ``peak.examples.toy_pe:make_toy_pe(8)``).
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

from cgra.errors import RuleError, SpecError
from peak.spec import Peak


def load_spec(ref: str) -> type:
    """The Peak spec class named by ``ref``.

    Raises :class:`RuleError` (one line, naming ``ref``) when the reference is malformed,
    the module does not import or has no such attribute, and :class:`SpecError` when the
    object is not a Peak spec class."""
    if ref.count(":") != 1:
        raise RuleError(f"PE spec '{ref}' is not of the form module:Class (or file.py:Class)")
    mod_name, attr = ref.split(":")
    if not mod_name or not attr:
        raise RuleError(f"PE spec '{ref}' is not of the form module:Class (or file.py:Class)")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise RuleError(f"PE spec '{ref}': file {path} does not exist")
            name = path.stem
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise RuleError(f"PE spec '{ref}': cannot load {path} as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except RuleError:
        raise
    except Exception as e:  # noqa: BLE001 - any import failure is reported in one line
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RuleError(f"PE spec '{ref}': module {mod_name} does not import "
                        f"({type(e).__name__}: {msg}); check the module path and that it "
                        "is importable") from None
    call_args: list[int] | None = None
    if "(" in attr:
        if not attr.endswith(")"):
            raise RuleError(f"PE spec '{ref}': malformed factory call '{attr}'")
        fname, argstr = attr[:-1].split("(", 1)
        try:
            parsed = ast.literal_eval(f"({argstr},)") if argstr.strip() else ()
        except (ValueError, SyntaxError) as e:
            raise RuleError(f"PE spec '{ref}': factory arguments '{argstr}' are not "
                            f"literals ({e})") from None
        call_args = list(parsed)
        attr = fname
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise RuleError(f"PE spec '{ref}': module {mod_name} has no attribute "
                            f"'{attr}'")
        obj = getattr(obj, part)
    if call_args is not None:
        if not callable(obj):
            raise RuleError(f"PE spec '{ref}': {attr} is not callable")
        try:
            obj = obj(*call_args)
        except Exception as e:  # noqa: BLE001 - reported in one line
            raise RuleError(f"PE spec '{ref}': {attr}({', '.join(map(repr, call_args))}) "
                            f"failed: {type(e).__name__}: {e}") from None
    if not (isinstance(obj, type) and issubclass(obj, Peak) and obj is not Peak):
        try:
            file = inspect.getsourcefile(module)
        except TypeError:
            file = None
        raise SpecError(f"PE spec '{ref}': {attr} is not a Peak spec class "
                        f"(got {type(obj).__name__}); name a subclass of peak.Peak", file)
    return obj
