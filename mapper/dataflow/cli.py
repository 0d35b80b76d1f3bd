"""``cgra dataflow``: compile a nested-loop program with the SARA dataflow compiler and run it
in the token-level simulator (issue 34).

    cgra dataflow APP [--par N] [--seed S] [--design DIR] [--latency LO,HI] [--sequential]
                      [--out DIR]
    cgra dataflow --list

Steps: the program (:data:`mapper.dataflow.apps.APPS`) is interpreted sequentially (the golden
model, itself checked against numpy); lowered to virtual units
(:func:`mapper.dataflow.lower.lower`); synchronised by tokens and credits
(:func:`mapper.dataflow.cmmc.cmmc`); partitioned and merged onto the units of ``--design``
(its ``resources.json``) or of SARA's Plasticine PCU/PMU
(:func:`mapper.dataflow.resource_map.map_units`); simulated with random link latencies
(:func:`mapper.dataflow.sim.simulate`); and the simulated final memory state compared bit for
bit with the interpreter's. ``<out>/dataflow_report.json`` records every figure, the
control tokens of sequential controllers among them (``control_tokens``). ``--sequential``
makes the app's iteration loop Spatial's ``Sequential.Foreach`` (PLDI'18 §3; the apps whose
builder takes ``sequential``: logreg, pagerank).

Exit status 0 when bit-exact; 2 with a one-line error for a mismatch or a deadlock
(:class:`~cgra.errors.SimulationError`), a program the units cannot hold
(:class:`~cgra.errors.MappingError`) or a bad option.
"""
from __future__ import annotations

import inspect
import json
import time
from pathlib import Path

import click
import numpy as np

from cgra.errors import ConfigError, SimulationError
from cgra.outputs import claim_output_dir
from mapper.dataflow.apps import APPS, TOLERANCES
from mapper.dataflow.cmmc import cmmc
from mapper.dataflow.interp import interpret
from mapper.dataflow.lower import lower
from mapper.dataflow.resource_map import map_units
from mapper.collateral import load_resources
from mapper.dataflow.resources import units as design_units
from mapper.dataflow.sim import simulate
from mapper.dataflow.units import SARA_PCU

REPORT_SCHEMA = "mapper.dataflow_report/1"


def _latency(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"--latency {text!r}: give LO,HI cycles, e.g. 1,4") from None
    if not 1 <= lo <= hi:
        raise ConfigError(f"--latency {text!r}: need 1 <= LO <= HI")
    return lo, hi


def _print_list(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for name, builder in APPS.items():
        doc = (builder.__doc__ or "").strip().splitlines()
        click.echo(f"{name:15s} {doc[0] if doc else ''}")
    ctx.exit()


def _compare(golden: dict, got: dict, names: list[str]) -> list[str]:
    bad = []
    for n in names:
        a, b = np.asarray(golden[n]), np.asarray(got[n])
        if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(
                a.view(np.uint32) if a.dtype == np.float32 else a,
                b.view(np.uint32) if b.dtype == np.float32 else b):
            idx = np.argwhere(a != b) if a.shape == b.shape else []
            where = f" first at {tuple(int(i) for i in idx[0])}" if len(idx) else ""
            bad.append(f"{n}{where}")
    return bad


@click.command("dataflow")
@click.argument("app", type=click.Choice(sorted(APPS)))
@click.option("--list", "list_apps", is_flag=True, is_eager=True, expose_value=False,
              callback=_print_list, help="list the shipped dataflow programs and exit")
@click.option("--par", default=1, show_default=True, type=click.IntRange(1, 64),
              help="parallelisation factor of the program's parallel loops")
@click.option("--seed", default=0, show_default=True, help="seed of the program's inputs")
@click.option("--sim-seed", "sim_seed", default=0, show_default=True,
              help="seed of the simulated link latencies")
@click.option("--latency", default="1,4", show_default=True, metavar="LO,HI",
              help="link latency range of the simulator, cycles (drawn per message)")
@click.option("--design", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="map onto this design's units (its resources.json); default: SARA's "
                   "Plasticine PCU (6 stages) and 64 Ki-word PMUs, unbounded")
@click.option("--partitioner", default="traversal", show_default=True,
              type=click.Choice(["traversal", "solver"]),
              help="SARA's traversal partitioner/merger or the MILP (HiGHS) reference")
@click.option("--sequential", is_flag=True,
              help="make the app's iteration loop sequential (Spatial's Sequential.Foreach: "
                   "iterations never overlap); logreg and pagerank")
@click.option("--out", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="directory of dataflow_report.json (default build/dataflow/<app>)")
def dataflow_cmd(app: str, par: int, seed: int, sim_seed: int, latency: str,
                 design: Path | None, partitioner: str, sequential: bool,
                 out: Path | None) -> None:
    """Compile APP (a nested-loop program: `cgra dataflow --list`) to virtual units with
    tokens and credits, map them onto a design's units, simulate, compare bit for bit."""
    t0 = time.perf_counter()
    lat = _latency(latency)
    kw = {}
    if sequential:
        if "sequential" not in inspect.signature(APPS[app]).parameters:
            takers = [n for n, b in APPS.items()
                      if "sequential" in inspect.signature(b).parameters]
            raise ConfigError(f"--sequential: app {app!r} has no iteration loop to make "
                              f"sequential; apps that have one: {', '.join(takers)}")
        kw["sequential"] = True
    program, inputs, reference = APPS[app](par=par, seed=seed, **kw)
    if design is not None:
        res = load_resources(design)
        units = design_units(res)
        capacity = res.mem.capacity_words if res.mem is not None else None
        target = f"design {design}"
    else:
        units, capacity, target = {"pcu": SARA_PCU}, None, "SARA Plasticine units"
    run_dir = out if out is not None else Path("build") / "dataflow" / app
    with claim_output_dir(run_dir, "--out"):
        golden = interpret(program, inputs)
        expected = reference(inputs)
        rtol, atol = TOLERANCES.get(app, (0.0, 0.0))
        for name, want in expected.items():
            if not np.allclose(golden[name], want, rtol=rtol, atol=atol):
                raise SimulationError(f"{app}: the interpreter's {name!r} differs from numpy "
                                      f"beyond rtol {rtol}, atol {atol}")
        vudfg = lower(program)
        tokens = cmmc(vudfg)
        mapping = map_units(vudfg, units, mem_capacity=capacity, partitioner=partitioner)
        sim = simulate(vudfg, tokens, inputs, seed=sim_seed, latency=lat)
        drams = [m.name for m in program.inputs()]
        bad = _compare(golden, sim.memories, drams)
        report = {"schema": REPORT_SCHEMA, "app": app, "par": par, "seed": seed,
                  "sequential": sequential,
                  "sim_seed": sim_seed, "latency": list(lat), "target": target,
                  "partitioner": partitioner, "bit_exact": not bad,
                  "cycles": sim.cycles, "vcus": len(vudfg.vcus), "vmus": len(vudfg.vmus),
                  "tokens": {"after_reduction": tokens.count(reduced=True),
                             "before_reduction": tokens.count(reduced=False),
                             "control": len(tokens.control)},
                  "control_tokens": [{"controller": c.controller, "src": c.src,
                                      "dst": c.dst, "backward": c.backward,
                                      "credit": c.credit,
                                      "streams": len(c.push_units) * len(c.pop_units)}
                                     for c in tokens.control],
                  "mapping": mapping.to_dict(),
                  "seconds": round(time.perf_counter() - t0, 3)}
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "dataflow_report.json").write_text(json.dumps(report, indent=1) + "\n")
    if bad:
        raise SimulationError(f"{app}: the token-level simulation differs from the sequential "
                              f"interpreter in {', '.join(bad)} (par {par}, sim seed "
                              f"{sim_seed}, latency {lat[0]}..{lat[1]}); report in "
                              f"{run_dir}/dataflow_report.json")
    used = ", ".join(f"{v} {k}" for k, v in sorted(mapping.units.items()) if v)
    seq = ", sequential" if sequential else ""
    click.echo(f"{app} (par {par}{seq}): bit-exact with the interpreter and numpy; "
               f"{sim.cycles} cycles (latency {lat[0]}..{lat[1]}); {len(vudfg.vcus)} VCUs, "
               f"{len(vudfg.vmus)} VMUs, {tokens.count(reduced=True)} token/credit edges "
               f"({tokens.count(reduced=False)} before reduction); {mapping.vus} virtual units on "
               f"{used} of {target}; {time.perf_counter() - t0:.1f} s -> "
               f"{run_dir}/dataflow_report.json")
