"""Typed errors of the host runtime (each a :class:`cgra.errors.CgraError`: the command line
prints one line and exits 2)."""
from __future__ import annotations

from cgra.errors import CgraError


class DeviceError(CgraError):
    """A runtime API call is invalid: no such platform or device, a buffer too large for
    the GLB or of the wrong shape, a command on a released object, a program the platform
    cannot run. The message names the object and the fix."""
