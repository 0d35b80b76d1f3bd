"""Shared pieces of the CGRA generator: the error hierarchy and the `cgra` command line.

The hardware DSLs live in :mod:`peak` (processing elements), :mod:`lake` (memories),
:mod:`canal` (interconnect) and :mod:`garnet` (the array); the application compiler in
:mod:`mapper`.
"""
