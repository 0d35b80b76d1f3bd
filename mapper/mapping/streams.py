"""A vectorised cycle-level stream model of a memory-mapped netlist (the checker of memory
mapping).

Every netlist signal is a pair of numpy arrays over cycles ``0 .. T-1``: the word value and a
*valid* flag.  Semantics:

- ``io_in`` lane ``q`` drives pixel ``(U*xo + q, y)`` at the cycle of iteration ``(xo, y)`` of
  its program (``y*P + xo`` for a single-rate pipeline; valid inside the image);
- ``kernel`` placeholders are evaluated with :func:`mapper.interp.eval_kernel` on their input
  streams; output ``out_l`` at cycle ``t + latency`` is ``f(inputs at t)`` and is valid only if
  ``t`` is an iteration of the stage (``start + c0*xo + c1*y``, :attr:`StageSchedule.strides`), the lane's pixel is inside the stage's domain and every
  live input element is valid;
- ``reg``: ``out[t] = in[t-1]``;
- ``mem``: each port program is expanded into (cycle, address) events per the unified-buffer
  semantics (Lake's golden model): writes store ``in[cycle]`` at ``address``; a read at cycle
  ``c`` returns the last word written to its address at a cycle ``<= c`` (writes before reads in
  the same cycle) and presents it at ``c + read_latency`` (each read port is evaluated from the
  input ports whose address ranges overlap its own, so delay lines of different buffers that
  share a tile do not form false loops);
- ``io_out`` samples its input at its program's cycles.

:func:`run_streams` returns the output image over the output stage's domain and raises
:class:`SimulationError` if any output pixel is invalid (read garbage or was never produced).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cgra.errors import SimulationError
from mapper import ir
from mapper.interp import eval_kernel
from mapper.mapping.memory import MemoryMapping


def program_events(prog: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, addresses) of a port program, in iteration order (dimension 0 innermost)."""
    ext = prog["extents"]
    grids = np.meshgrid(*[np.arange(e) for e in reversed(ext)], indexing="ij")
    idx = [g.ravel() for g in reversed(grids)]
    cyc = prog["schedule"]["offset"] + sum(s * i for s, i in zip(prog["schedule"]["strides"], idx, strict=True))
    addr = np.zeros_like(cyc)
    if "address" in prog:
        addr = prog["address"]["offset"] + sum(s * i for s, i in zip(prog["address"]["strides"], idx, strict=True))
    return np.asarray(cyc, dtype=np.int64), np.asarray(addr, dtype=np.int64)


def stream_events(prog: dict[str, Any]) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """(cycles, (index along dimension 0, index along dimension 1)) of a 2-D stream program
    (an IO program), in iteration order; an ``address`` entry is ignored."""
    cyc, _ = program_events({k: v for k, v in prog.items() if k != "address"})
    k = np.arange(len(cyc))
    ext0 = int(prog["extents"][0])
    return cyc, (k % ext0, k // ext0)


def _lane_inputs(kernel: ir.Kernel, output: str) -> set[tuple[str, int]]:
    """Input elements reachable from one kernel output."""
    seen: set[int] = set()
    stack = [kernel.outputs[output]]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(kernel.nodes[n].args)
    return {kernel.nodes[n].input for n in seen if kernel.nodes[n].op == ir.INPUT}


def run_streams(mm: MemoryMapping, images: dict[str, np.ndarray]) -> np.ndarray:
    """Run the memory-mapped netlist of ``mm`` on input images (``[y, x]`` arrays).

    Returns the (first) output image (uint16, or int16 for a signed output stage) over the
    output stage's valid domain (:func:`run_streams_outputs` for every output).  Raises
    :class:`SimulationError` on an invalid output pixel.
    """
    return run_streams_outputs(mm, images)[mm.pipeline.output]


def run_streams_outputs(mm: MemoryMapping, images: dict[str, np.ndarray]
                        ) -> dict[str, np.ndarray]:
    """:func:`run_streams` for every output stage: stage name -> its image over its domain."""
    p, sched, nl = mm.pipeline, mm.schedule, mm.netlist
    u, _pitch = sched.unroll, sched.row_pitch
    lat = mm.spec.read_latency
    horizon = sched.completion_cycle() + 2
    for inst in nl.instances.values():
        progs = list(inst.config["ports"].values()) if inst.kind == "mem" else \
            [inst.config["program"]] if inst.kind == "io_in" else []
        for prog in progs:
            c, _ = program_events(prog)
            horizon = max(horizon, int(c.max()) + lat + 2)
    T = horizon
    vals: dict[tuple[str, str], np.ndarray] = {}
    valid: dict[tuple[str, str], np.ndarray] = {}
    driver: dict[tuple[str, str], tuple[str, str]] = {}
    for net in nl.nets:
        for s in net.sinks:
            driver[s] = net.source

    for inst in nl.instances.values():
        if inst.kind == "io_in":
            c = inst.config
            img = ir.pad_image(np.asarray(images[c["input"]]),
                            tuple(c.get("pad", ir.NO_PAD))).astype(np.int64) & 0xFFFF
            v, ok = np.zeros(T, np.int64), np.zeros(T, bool)
            cyc, (i0, y) = stream_events(c["program"])
            x = u * i0 + c["lane"]
            sel = (x < c["width"]) & (y < c["height"])
            v[cyc[sel]], ok[cyc[sel]] = img[y[sel], x[sel]], True
            vals[(inst.name, "out")], valid[(inst.name, "out")] = v, ok

    def get(port: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
        if port not in driver:
            raise SimulationError(f"stream model: port {port[0]}.{port[1]} is not driven")
        src = driver[port]
        if src not in vals:
            inst = nl.instances[src[0]]
            if inst.kind == "mem" and "rom" in inst.config:
                # a coordinate-pattern ROM: its words at the stream schedule (pipelining
                # balances the tile's read latency, memory mapping does not see it)
                prog = inst.config["ports"][src[1]]
                c, a = program_events(prog)
                rom = np.asarray(inst.config["rom"], np.int64)
                v, ok = np.zeros(T, np.int64), np.zeros(T, bool)
                keep = c < T
                v[c[keep]], ok[c[keep]] = rom[a[keep]], True
                vals[src], valid[src] = v, ok
            elif inst.kind == "mem" and src[1].startswith("valid_out_"):
                # a bank's valid_out: high one read latency after each read of its port
                q = src[1].removeprefix("valid_out_")
                c, _ = program_events(inst.config["ports"][f"data_out_{q}"])
                t = c + lat
                v = np.zeros(T, np.int64)
                v[t[(t >= 0) & (t < T)]] = 1
                vals[src], valid[src] = v, np.ones(T, bool)
            elif inst.kind == "mem":
                ports = inst.config["ports"]
                mem_port(src[0], src[1], ports, {pn: program_events(pr) for pn, pr in ports.items()})
            else:
                evaluate(src[0])
        return vals[src], valid[src]

    busy: set[str] = set()

    def mem_port(name: str, pname: str, ports: dict[str, Any],
                 events: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """One MEM read port: the writes of every input port whose address range overlaps."""
        key_name = f"{name}.{pname}"
        if key_name in busy:
            raise SimulationError(f"stream model: combinational loop through {key_name}")
        busy.add(key_name)
        c, a = events[pname]
        lo, hi = int(a.min()), int(a.max())
        wc, wa, wv, wok = [], [], [], []
        for iname in ports:
            if not iname.startswith("data_in"):
                continue
            ic, ia = events[iname]
            if int(ia.max()) < lo or int(ia.min()) > hi:
                continue
            v, ok = get((name, iname))
            inside = ic < T
            ic, ia = ic[inside], ia[inside]
            wc.append(ic), wa.append(ia), wv.append(v[ic]), wok.append(ok[ic])
        out_v, out_ok = np.zeros(T, np.int64), np.zeros(T, bool)
        if wc:
            wc_, wa_ = np.concatenate(wc), np.concatenate(wa)
            wv_, wok_ = np.concatenate(wv), np.concatenate(wok)
            key = wa_ * (T + 1) + wc_
            order = np.argsort(key, kind="stable")
            key, wv_, wok_, wa_ = key[order], wv_[order], wok_[order], wa_[order]
            pos = np.searchsorted(key, a * (T + 1) + c, side="right") - 1
            hit = (pos >= 0) & (wa_[np.maximum(pos, 0)] == a)
            t_out = c + lat
            keep = (t_out >= 0) & (t_out < T)
            out_v[t_out[keep]] = np.where(hit, wv_[np.maximum(pos, 0)], 0)[keep]
            out_ok[t_out[keep]] = (hit & wok_[np.maximum(pos, 0)])[keep]
        vals[(name, pname)], valid[(name, pname)] = out_v, out_ok
        busy.discard(key_name)

    def evaluate(name: str) -> None:
        if name in busy:
            raise SimulationError(f"stream model: combinational loop through {name}")
        busy.add(name)
        inst = nl.instances[name]
        if inst.kind == "reg":
            v, ok = get((name, "in"))
            vals[(name, "out")] = np.concatenate([[0], v[:-1]])
            valid[(name, "out")] = np.concatenate([[False], ok[:-1]])
        elif inst.kind == "kernel":
            st = sched.stages[inst.config["stage"]]
            kernel = ir.Kernel.from_dict(inst.config["dag"])   # with any bank merges
            live = {(n.input) for n in kernel.live_nodes() if n.op == ir.INPUT}
            ins: dict[str, list[np.ndarray]] = {}
            oks: dict[tuple[str, int], np.ndarray] = {}
            for iname, size in kernel.inputs.items():
                ins[iname] = []
                for i in range(size):
                    if (iname, i) in live:
                        v, oks[(iname, i)] = get((name, f"{iname}.{i}"))
                    else:
                        v = np.zeros(T, np.int64)
                    ins[iname].append(v)
            for din, _vin in inst.config.get("banked", []):
                # banked reads: exactly one bank reads each iteration, so the merged word is
                # valid when any bank's word is
                keys = [(din, i) for i in range(kernel.inputs[din])]
                any_ok = np.logical_or.reduce([oks[k] for k in keys])
                for k in keys:
                    oks[k] = any_ok
            outs = eval_kernel(kernel, ins)
            t = np.arange(T)
            rel = t - st.start
            c0, c1 = st.strides
            xo, y = (rel % c1) // c0, rel // c1
            for lane in range(u):
                x = u * xo + lane
                in_dom = (rel >= 0) & (rel % c1 % c0 == 0) & (xo >= st.xo_range[0]) & \
                    (xo < st.xo_range[1]) & \
                    (y >= st.box.y0) & (y < st.box.y1) & (x >= st.box.x0) & (x < st.box.x1)
                o = np.broadcast_to(outs[f"out_{lane}"], (T,)).astype(np.int64)
                ok = in_dom.copy()
                for key in _lane_inputs(kernel, f"out_{lane}"):
                    ok &= oks[key]
                shift = st.latency
                vals[(name, f"out_{lane}")] = np.concatenate([np.zeros(shift, np.int64), o[:T - shift]])
                valid[(name, f"out_{lane}")] = np.concatenate([np.zeros(shift, bool), ok[:T - shift]])
        else:
            raise SimulationError(f"stream model: instance {name} of kind {inst.kind} cannot drive "
                                  f"a signal")
        busy.discard(name)

    result: dict[str, np.ndarray] = {}
    for oname in p.outputs:
        out = sched.stages[oname]
        b = out.box
        img = np.zeros((b.height, b.width), np.int64)
        seen = np.zeros((b.height, b.width), bool)
        for inst in nl.instances.values():
            if inst.kind != "io_out" or inst.config["stage"] != oname:
                continue
            v, ok = get((inst.name, "in"))
            c, _ = program_events(inst.config["program"])
            lane = inst.config["lane"]
            n_xo = out.extents[0]
            k = np.arange(len(c))
            xo = out.xo_range[0] + k % n_xo
            y = b.y0 + k // n_xo
            x = u * xo + lane
            sel = (x >= b.x0) & (x < b.x1)
            cs = c[sel]
            if (cs >= T).any():
                raise SimulationError(f"stream model: output {inst.name} samples past the "
                                      f"horizon")
            bad = ~ok[cs]
            if bad.any():
                j = int(np.argmax(bad))
                raise SimulationError(f"stream model: output pixel ({int(x[sel][j])}, "
                                      f"{int(y[sel][j])}) of {oname} lane {lane} at cycle "
                                      f"{int(cs[j])} is not valid (wrong schedule, distance or "
                                      f"port program)")
            img[y[sel] - b.y0, x[sel] - b.x0] = v[cs]
            seen[y[sel] - b.y0, x[sel] - b.x0] = True
        if not seen.all():
            raise SimulationError(f"stream model: {int((~seen).sum())} output pixels of {oname} "
                                  f"were never produced")
        res = img.astype(np.uint16)
        result[oname] = res.view(np.int16) if p.stage(oname).signed else res
    return result
