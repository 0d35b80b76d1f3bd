"""Plots of a sweep (matplotlib, Agg): the Pareto front runtime vs area per app, PE count per
PE variant, MEM count per MEM preset, Fmax vs tracks. Failed points are left out."""
from __future__ import annotations

from pathlib import Path


def pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points not dominated in (x, y), both minimised, sorted by x."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def _ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok" and r.get("runtime_us")]


def _label(r: dict, grid: list[str]) -> str:
    return ",".join(str(r.get(k)) for k in grid)


def plot_all(rows: list[dict], grid: list[str], out: Path) -> list[Path]:
    import matplotlib  # deferred: loads matplotlib, PIL, numpy, 5 more only when called
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: loads matplotlib, PIL, numpy, 7 more only when called

    out = Path(out)
    ok = _ok(rows)
    apps = sorted({r["app"] for r in rows})
    files: list[Path] = []

    fig, axes = plt.subplots(1, max(1, len(apps)), figsize=(5 * max(1, len(apps)), 4),
                             squeeze=False)
    for ax, app in zip(axes[0], apps, strict=False):
        pts = [r for r in ok if r["app"] == app]
        ax.set_title(app)
        ax.set_xlabel("area proxy (yosys cells)")
        ax.set_ylabel("runtime (us) = cycles / Fmax")
        if not pts:
            ax.text(0.5, 0.5, "no point mapped", ha="center", transform=ax.transAxes)
            continue
        ax.scatter([r["area_cells"] for r in pts], [r["runtime_us"] for r in pts], s=18)
        for r in pts:
            ax.annotate(_label(r, grid), (r["area_cells"], r["runtime_us"]), fontsize=6)
        front = pareto([(r["area_cells"], r["runtime_us"]) for r in pts])
        ax.plot([p[0] for p in front], [p[1] for p in front], "r-", drawstyle="steps-post",
                label="Pareto front")
        ax.legend(fontsize=7)
    fig.tight_layout()
    files.append(out / "pareto.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    for field, metric, name in (("pe", "pe_count", "pe_count.png"),
                                ("mem_preset", "mem_count", "mem_count.png"),
                                ("tracks", "fmax_mhz", "fmax_tracks.png")):
        if field not in grid:
            continue
        variants = sorted({str(r.get(field)) for r in rows})
        fig, ax = plt.subplots(figsize=(6, 4))
        width = 0.8 / max(1, len(variants))
        for i, v in enumerate(variants):
            vals = []
            for app in apps:
                got = [r[metric] for r in ok if r["app"] == app and str(r.get(field)) == v]
                vals.append(min(got) if metric != "fmax_mhz" and got else
                            (max(got) if got else 0))
            ax.bar([j + i * width for j in range(len(apps))], vals, width, label=f"{field}={v}")
        ax.set_xticks([j + width * (len(variants) - 1) / 2 for j in range(len(apps))], apps)
        ax.set_ylabel(metric + (" (best over the other fields)"))
        ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / name)
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    return files


def plot_search(trials: list[dict], grid: list[str], out: Path) -> Path:
    """``search_pareto.png``: every completed trial of a search, summed runtime (us) vs area
    proxy (cells), labelled by its grid values and trial numbers, the Pareto front in red.
    Failed trials are left out (they are in trials.csv)."""
    import matplotlib  # deferred: loads matplotlib, PIL, numpy, 5 more only when called
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: loads matplotlib, PIL, numpy, 7 more only when called

    ok = [t for t in trials if t["status"] == "ok"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.set_xlabel("area proxy (yosys cells)")
    ax.set_ylabel("runtime (us), summed over the apps")
    ax.set_title(f"search: {len(trials)} trials, {len(trials) - len(ok)} failed")
    if ok:
        by_design: dict[tuple, list[int]] = {}
        for t in ok:
            by_design.setdefault((t["area_cells"], t["runtime_us"], _label(t, grid)),
                                 []).append(t["trial"])
        ax.scatter([t["area_cells"] for t in ok], [t["runtime_us"] for t in ok], s=18)
        for (x, y, lab), nums in by_design.items():
            ax.annotate(f"{lab} (#{','.join(map(str, nums))})", (x, y), fontsize=6)
        front = pareto([(t["area_cells"], t["runtime_us"]) for t in ok])
        ax.plot([p[0] for p in front], [p[1] for p in front], "r-", drawstyle="steps-post",
                label="Pareto front")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no trial completed", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    path = Path(out) / "search_pareto.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
