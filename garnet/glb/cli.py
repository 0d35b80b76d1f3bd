"""``cgra glb``: the global buffer's RTL and collateral, and a bitstream as a GLB image with
its configuration cycles (loaded lazily by :mod:`cgra.cli`)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from cgra.errors import CollateralError, ConfigError
from garnet.glb.collateral import write as write_collateral
from garnet.glb.confignet import glb_image, image_json, read_bitstream, simulate
from garnet.glb.params import GlbParams, load_toml
from garnet.glb.rtl import glb_verilog


def write_glb(p: GlbParams, out: str | Path) -> Path:
    """Write ``glb.v`` (:func:`garnet.glb.rtl.glb_verilog`) and ``glb.json`` into directory
    ``out`` (created); returns it. Raises :class:`ConfigError` when ``out`` is a file."""
    o = Path(out)
    if o.exists() and not o.is_dir():
        raise ConfigError(f"--out {o} is a file; give a directory")
    o.mkdir(parents=True, exist_ok=True)
    (o / "glb.v").write_text(glb_verilog(p))
    write_collateral(p, o)
    return o


@click.group("glb")
def glb() -> None:
    """The global buffer (AHA §4.4): RTL, glb.json, configuration through the GLB."""


@glb.command("rtl")
@click.option("--config", "config", required=True, type=click.Path(dir_okay=False),
              help="TOML file with a [glb] table (e.g. configs/small_glb.toml)")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="output directory: glb.v, glb.json")
def rtl_cmd(config: str, out: str) -> None:
    """Write the GLB's Verilog (glb.v: glb_tile, glb) and collateral (glb.json) into OUT."""
    p = load_toml(config)
    o = write_glb(p, out)
    click.echo(f"GLB: {p.tiles} tiles x {p.banks} banks x {p.bank_words} x {p.word_width} bits "
               f"({p.tiles * p.tile_words * p.word_width // 8 // 1024} KiB), "
               f"{p.columns} columns -> {o}/glb.v, {o}/glb.json")


def _height(run_dir: Path) -> int:
    app = run_dir / "app.json"
    try:
        design = Path(json.loads(app.read_text())["design"])
        return int(json.loads((design / "design.json").read_text())["params"]["height"])
    except (OSError, KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise CollateralError(f"{run_dir}: cannot find the array height through app.json's "
                              f"design ({exc}); pass --height") from None


@glb.command("config")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--config", "config", required=True, type=click.Path(dir_okay=False),
              help="TOML file with a [glb] table")
@click.option("--height", type=click.IntRange(1, 254), default=None,
              help="array rows (default: the run's design)")
@click.option("--row-multicast", is_flag=True, help="send identical words of a column once "
              "with a row mask")
def config_cmd(run_dir: str, config: str, height: int | None, row_multicast: bool) -> None:
    """Turn RUN_DIR's bitstream into a GLB image (<app>.glb.json) and print the cycles to
    configure it: the single config port (one word per cycle) vs the GLB's modes."""
    rd = Path(run_dir)
    p = load_toml(config)
    bs_files = sorted(f for f in rd.glob("*.bs") if f.name != "sim.bs")
    if len(bs_files) != 1:
        raise CollateralError(f"{rd}: expected one <app>.bs, found "
                              f"{[f.name for f in bs_files]}; run `cgra bitstream {rd}`")
    words = read_bitstream(bs_files[0])
    h = height or _height(rd)
    img = glb_image(p, words, h, row_multicast)
    out = rd / (bs_files[0].stem + ".glb.json")
    out.write_text(json.dumps(image_json(img), indent=1) + "\n")
    serial = simulate(p, words, h, "serial").cycles
    click.echo(f"{bs_files[0].name}: {len(words)} words -> {out.name} ({img.words} GLB words)")
    for mode, rm in (("broadcast", False), ("unicast", False), ("unicast", True)):
        r = simulate(p, words, h, mode, rm)
        name = mode + (" + row multicast" if rm else "")
        click.echo(f"  {name:28s} {r.cycles:7d} cycles  {serial / r.cycles:6.2f}x vs the "
                   f"single port ({serial} cycles)")
