"""Resolve a reference to a PE spec class: the one resolver of the command line, the garnet
configuration (field ``pe``) and the mapper.

Grammar of ``ref`` (exactly one ``:``)::

    package.module:Class            imported from sys.path (``peak.examples.cgra_pe:PE``)
    path/to/file.py:Class           loaded from the file (``my_pe.py:PE``)
    package.module:factory(8, 16)   a call with literal arguments, positional or keyword
                                    (``peak.examples.toy_pe:make_toy_pe(8)``,
                                    ``peak.examples.dataflow_pe:make_dataflow_pe(32, div=True)``)
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

import inspect
import sys
from pathlib import Path

from cgra.errors import SpecError
from cgra.load import resolve
from peak.spec import Peak


def _spec_classes(module) -> list[str]:
    return [n for n, v in vars(module).items() if not n.startswith("_") and isinstance(v, type)
            and issubclass(v, Peak) and v is not Peak]


_FORM = ("give it as module:Class, path/to/file.py:Class or module:factory(args) "
         "(e.g. peak.examples.cgra_pe:PE)")


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
    obj, module, attr = resolve(ref, prefix, base, form=_FORM, noun="Peak spec classes",
                                module_prefix="_peak_spec_", candidates=_spec_classes)
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
