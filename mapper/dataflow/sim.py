"""A token-level simulator of the virtual-unit dataflow graph (VUDFG) with CMMC tokens.

Source: the execution model of Zhang et al., "SARA: Scaling a Reconfigurable Dataflow
Accelerator", ISCA 2021, §III-A (a VCU is enabled when its input streams and tokens are valid
and its outputs ready; counters push and pop tokens at the done of their levels; memories
serve requests in order per stream and acknowledge writes; a not-taken clause is done at
once); the project's SARA notes §2.3-2.5 and §4.1 item 3.

Semantics, one clock cycle at a time (:func:`simulate`):

* Every **stream** is a FIFO of ``fifo_depth`` messages (token and credit streams are
  counters without a bound); a pushed message arrives after a latency drawn uniformly from
  ``latency`` (inclusive, cycles) by a seeded :class:`numpy.random.Generator`, never before
  the message ahead of it (streams stay in order). A full stream back-pressures its source.
* Every **VCU** walks its control path (its counter chain, branches and clauses) like the
  sequential program: a loop's bounds come from its control VCU's ``bound`` stream (or are
  computed from the counters), a branch or do-while condition from its ``cond`` stream; a
  not-taken clause is skipped (done at once). One leaf iteration is a **fire**; a unit fires
  at most ``par`` times per cycle (its lanes), and stalls when an input is empty or an output
  full. A compute VCU evaluates its statements with :func:`~mapper.dataflow.program.apply_op`
  in the interpreter's order, takes each read's data from the memory's stream (sending the
  address to the read's request VCU first when it depends on loaded data), and sends each
  write's address and data to the write's response VCU. An accumulator
  (``VUDFG.promoted``) is read from its memory when its loop starts, kept in the compute
  VCU and written back when the loop ends. A request VCU generates addresses
  from its own counters (or forwards the compute VCU's), a response VCU forwards writes;
  both send them on to the memory and count its acknowledgements. A control VCU
  broadcasts bounds and conditions.
* **Tokens** (:mod:`mapper.dataflow.cmmc`): the requester of an access waits, before its
  first request inside the window of the token's pop level, until the token is there; it
  pops the token at the done of that level (waiting for it if no request happened). A port
  pushes its tokens at the done of their push level once the memory acknowledged all its
  requests and it holds its own incoming tokens popped at that level or an enclosing one
  (so a site skipped by a not-taken clause still forwards the order it was given). Credits start with their
  initial count (``credits`` overrides them).
* **Control tokens** of a sequential loop or do-while (cmmc's ``Tokens.control``, Spatial's
  ``Sequential``, PLDI'18 §3): a unit inside stage s of sequential controller S pops one
  token from every unit of the stage before (the last stage's credit for the first stage)
  before it starts s in each iteration of S, and once done with s (a port: once the
  memory acknowledged all its requests) pushes one to every unit of the next stage. So the
  stages of one iteration run one after the other and iteration i + 1 starts after
  iteration i is done.
* A **VMU / DRAM interface** serves each input stream in order, up to the source's lanes per
  cycle: a read returns the data, a write updates the memory and returns an ack; a FIFO
  read waits for data, a write for room. A multi-buffered SRAM (cmmc gave it credit > 1)
  keeps one copy per buffer (the final contents take each word from its latest write). Each
  access's unit counts its **phases**, the completed executions of the access's phase level
  (cmmc's ``MemoryDeps.phases``: the child of ``buffer_loop``, or its branch clause), and
  sends phase k to buffer k mod ``buffers``: writer and reader keep separate pointers, so a
  write phase fills the buffer that the matching read phase reads even when they run on
  different iterations of the loop (SARA Fig. 4, an outer branch alternating its clauses).
* **Deadlock**: when no unit moves and no message is in flight,
  :class:`cgra.errors.SimulationError` names the waits-for cycle.

Errors: :class:`SimulationError` for a deadlock, an out-of-range address (a wrong order of
accesses can produce one), more than ``max_cycles`` cycles, or a bad ``credits`` key;
:class:`cgra.errors.ProgramError` for a bad input (as :func:`mapper.dataflow.interp.interpret`)
or a non-positive loop step.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cgra.errors import ProgramError, SimulationError
from mapper.dataflow.cmmc import Tokens
from mapper.dataflow.interp import final_state, initial_state
from mapper.dataflow.lower import VUDFG, Leaf, leaf_accesses
from mapper.dataflow.program import (
    FIFO,
    Block,
    Const,
    DoWhile,
    Index,
    Let,
    Load,
    Op,
    Reg,
    Store,
    Temp,
    apply_op,
    cast,
    walk,
)

_BLOCK = object()
_FIRE = object()
_INF = float("inf")


@dataclass
class SimResult:
    """``memories``: memory name -> final contents, as :func:`mapper.dataflow.interp.interpret`
    returns them; ``cycles``: cycles until every unit finished; ``fires``: unit name ->
    fires (leaf iterations of a VCU, requests served by a VMU)."""
    memories: dict[str, np.ndarray]
    cycles: int
    fires: dict[str, int]


class _Chan:
    __slots__ = ("q", "cap", "src", "dst", "kind", "site", "last", "sim")

    def __init__(self, sim: "_Sim", src: str, dst: str, kind: str, site: str, cap: float):
        self.q: deque = deque()
        self.cap, self.src, self.dst, self.kind, self.site = cap, src, dst, kind, site
        self.last = 0
        self.sim = sim

    def can_pop(self) -> bool:
        return bool(self.q) and self.q[0][0] <= self.sim.now

    def can_push(self) -> bool:
        return len(self.q) < self.cap

    def push(self, v) -> None:
        t = max(self.sim.now + self.sim.draw(), self.last)
        self.last = t
        self.q.append((t, v))
        self.sim.progress = True

    def pop(self):
        self.sim.progress = True
        return self.q.popleft()[1]

    def __repr__(self) -> str:
        return f"{self.kind} {self.site}"


class _Unit:
    """A VCU as a generator over its control path."""

    def __init__(self, sim: "_Sim", vcu):
        self.sim = sim
        self.v = vcu
        self.name = vcu.name
        self.rate = vcu.par
        self.fires = 0
        self.wait: tuple[_Chan, str] | None = None
        self.done = False
        self.in_tokens: dict[str, list[_Chan]] = {}      # site -> chans to acquire
        self.pop_at: dict[str, list[_Chan]] = {}         # level -> chans to pop
        self.push_at: dict[str, list[_Chan]] = {}        # level -> chans to push
        self.acquired: set[int] = set()
        self.bound_in: dict[str, _Chan] = {}
        self.cond_in: dict[str, _Chan] = {}
        self.out: list[_Chan] = []                       # control VCU broadcasts
        self.addr_out: dict[str, _Chan] = {}
        self.data_in: dict[str, _Chan] = {}
        self.write_out: dict[str, _Chan] = {}
        self.seg_in: _Chan | None = None
        self.seg_out: _Chan | None = None
        self.gate_in: _Chan | None = None
        self.gate_out: _Chan | None = None
        self.ack_in: _Chan | None = None
        self.per_fire = 1
        self.promote_at: dict[str, list[tuple[str, list[str], list[str]]]] = {}
        self.promoted: dict[str, object] = {}
        self.load: Load | None = None                    # a read port's load
        self.outstanding = 0
        self.hold_at: dict[str, list[_Chan]] = {}        # push level -> in-tokens to hold
        self.iters: dict[str, int] = {}
        self.phase_count: dict[str, int] = {}           # phase level -> completed runs
        self.local_cond: dict[str, object] = {}
        self.ctl_pop: dict[str, list[_Chan]] = {}        # sequential controller -> chans
        self.ctl_push: dict[str, list[_Chan]] = {}
        self.gen = self.run()

    # ---- primitives (generators)
    def pop(self, ch: _Chan):
        while not ch.can_pop():
            self.wait = (ch, "pop")
            yield _BLOCK
        return ch.pop()

    def push(self, ch: _Chan, v):
        while not ch.can_push():
            self.wait = (ch, "push")
            yield _BLOCK
        ch.push(v)

    def acquire(self, site: str):
        for ch in self.in_tokens.get(site, ()):
            if id(ch) not in self.acquired:
                while not ch.can_pop():
                    self.wait = (ch, "pop")
                    yield _BLOCK
                self.acquired.add(id(ch))

    def level_done(self, label: str):
        if label in self.push_at:
            # a port forwards its tokens only once it holds its own (a skipped site too)
            for ch in self.hold_at.get(label, ()):
                if id(ch) not in self.acquired:
                    while not ch.can_pop():
                        self.wait = (ch, "pop")
                        yield _BLOCK
                    self.acquired.add(id(ch))
            while self.outstanding:
                yield from self.pop(self.ack_in)
                self.outstanding -= 1
        for ch in self.pop_at.get(label, ()):
            yield from self.pop(ch)
            self.acquired.discard(id(ch))
        for ch in self.push_at.get(label, ()):
            yield from self.push(ch, 1)

    # ---- control
    def run(self):
        yield from self.walk(0, {})
        self.done = True

    def walk(self, k: int, env: dict):
        path = self.v.path
        label = path[k]
        a = self.sim.tree.nodes[label]
        kind, obj = a["kind"], a["obj"]
        if k == len(path) - 1:
            yield from self.fire(env)
            self.fires += 1
            yield _FIRE
        elif kind == "loop":
            promote = self.promote_at.get(label, ())
            for reg, reads, _ in promote:         # accumulators: read once at loop start
                vals = []
                for r in reads:
                    vals.append((yield from self.pop(self.data_in[r])))
                self.promoted[reg] = vals[0]
            if label in self.bound_in:
                start, stop, step = yield from self.pop(self.bound_in[label])
            else:
                start, stop, step = (self.sim.eval_static(e, env)
                                     for e in (obj.start, obj.stop, obj.step))
            if step <= 0:
                raise ProgramError(f"loop {label}: step evaluates to {step}, must be positive")
            for i in range(start, stop, step):
                env[id(obj)] = i
                self.iters[label] = self.iters.get(label, 0) + 1
                yield from self.stage(label, k, env)
            env.pop(id(obj), None)
            for reg, _, writes in promote:        # ... written once at loop end
                val = self.promoted.pop(reg)
                for w in writes:
                    yield from self.push(self.write_out[w], (0, (), val, w))
        elif kind == "do_while":
            while True:
                self.iters[label] = self.iters.get(label, 0) + 1
                yield from self.stage(label, k, env)
                if label in self.local_cond:
                    c = self.local_cond.pop(label)
                else:
                    c = yield from self.pop(self.cond_in[label])
                if not c:
                    break
        elif kind == "branch":
            c = yield from self.pop(self.cond_in[label])
            taken = (path[k + 1] == obj.then.label) == bool(c)
            if taken:
                yield from self.walk(k + 1, env)
        else:
            yield from self.walk(k + 1, env)
        if label in self.sim.phase_levels:
            self.phase_count[label] = self.phase_count.get(label, 0) + 1
        yield from self.level_done(label)

    def stage(self, label: str, k: int, env: dict):
        """One iteration of loop / do-while ``label`` (``path[k]``): its child on this unit's
        path, between the control tokens of a sequential controller."""
        for ch in self.ctl_pop.get(label, ()):
            yield from self.pop(ch)
        yield from self.walk(k + 1, env)
        pushes = self.ctl_push.get(label, ())
        if pushes:
            while self.outstanding:
                yield from self.pop(self.ack_in)
                self.outstanding -= 1
            for ch in pushes:
                yield from self.push(ch, 1)

    # ---- leaf work
    def fire(self, env: dict):
        role = self.v.role
        if role in ("request", "response"):
            for _ in range(self.per_fire):
                if self.gate_in is None:        # addresses from the counters
                    a = (self.tag(self.v.memory, self.v.site),
                         tuple(self.sim.eval_static(x, env) for x in self.load.index))
                else:
                    a = yield from self.pop(self.gate_in)
                yield from self.acquire(self.v.site)
                yield from self.push(self.gate_out, a)
                self.outstanding += 1
            while self.outstanding and self.ack_in.can_pop():
                self.ack_in.pop()
                self.outstanding -= 1
        elif role == "control":
            leaf: Leaf = self.sim.tree.nodes[self.v.leaf]["obj"]
            memo: dict = {}
            vals = []
            for e in leaf.exprs():
                vals.append((yield from self.eval(e, memo, env, {})))
            msg = tuple(vals) if leaf.what == "bound" else vals[0]
            if isinstance(leaf.controller, DoWhile):
                self.local_cond[leaf.controller.label] = msg
            for ch in self.out:
                yield from self.push(ch, msg)
        else:
            yield from self.fire_block(env)

    def fire_block(self, env: dict):
        block: Block = self.sim.tree.nodes[self.v.leaf]["obj"]
        temps: dict = {}
        if self.seg_in is not None:
            temps = dict((yield from self.pop(self.seg_in)))
        for k in self.v.statements:
            s = block.statements[k]
            memo: dict = {}
            if isinstance(s, Let):
                temps[id(s.temp)] = yield from self.eval(s.value, memo, env, temps)
                continue
            m = s.mem
            idx = []
            if not isinstance(m, (Reg, FIFO)):
                for x in s.index:
                    idx.append((yield from self.eval(x, memo, env, temps)))
            v = cast((yield from self.eval(s.value, memo, env, temps)), m.dtype)
            if m.name in self.promoted:
                self.promoted[m.name] = v
            elif m.name in self.sim.local:
                self.sim.local[m.name] = v
            else:
                yield from self.acquire(s.label)
                yield from self.push(self.write_out[s.label],
                                     (self.tag(m.name, s.label), tuple(idx), v, s.label))
        if self.seg_out is not None:
            yield from self.push(self.seg_out, temps)

    def tag(self, mem: str, site: str) -> int:
        """The buffer of access ``site`` on ``mem``: its phases completed so far mod the
        buffers (0 for a single-buffered memory)."""
        level = self.sim.phase_of.get(site)
        if level is None:
            return 0
        return self.phase_count.get(level, 0) % self.sim.buffers[mem]

    def eval(self, e, memo: dict, env: dict, temps: dict):
        if isinstance(e, Op):
            args = []
            for x in e.args:
                args.append((yield from self.eval(x, memo, env, temps)))
            dt = e.args[1].dtype if e.op == "select" else e.args[0].dtype
            return apply_op(e.op, args, dt)
        if isinstance(e, Load):
            if id(e) in memo:
                return memo[id(e)]
            m = e.mem
            if m.name in self.promoted:
                v = self.promoted[m.name]
            elif m.name in self.sim.local:
                v = self.sim.local[m.name]
            else:
                idx = []
                if not isinstance(m, (Reg, FIFO)) and e.label in self.addr_out:
                    for x in e.index:
                        idx.append((yield from self.eval(x, memo, env, temps)))
                if e.label in self.addr_out:
                    yield from self.push(self.addr_out[e.label],
                                         (self.tag(m.name, e.label), tuple(idx)))
                v = yield from self.pop(self.data_in[e.label])
            memo[id(e)] = v
            return v
        if isinstance(e, Index):
            return env[id(e.loop)]
        if isinstance(e, Const):
            return cast(e.value, e.dtype)
        if isinstance(e, Temp):
            return temps[id(e)]
        raise ProgramError(f"cannot simulate expression {e!r}")


class _Memory:
    """A VMU or DRAM interface."""

    def __init__(self, sim: "_Sim", vmu, init):
        self.sim = sim
        self.name = vmu.name
        self.kind = vmu.kind
        self.shape = vmu.shape
        self.dtype = vmu.dtype
        self.buffers = sim.buffers.get(vmu.name, 1)
        if self.kind == "fifo":
            self.data = init
        else:
            self.data = np.stack([np.array(init, copy=True) for _ in range(self.buffers)])
            self.stamp = np.full(self.data.shape, -1, dtype=np.int64)
        self.ins: list[tuple] = []    # (requests, data out or None, acks, is_write, lanes)
        self.fires = 0
        self.clock = 0
        self.wait: tuple[_Chan, str] | None = None
        self.writers: list[str] = []

    def step(self) -> None:
        self.wait = None
        for cin, cout, ack, is_write, rate in self.ins:
            served = 0
            while served < rate and cin.can_pop():
                if cout is not None and not cout.can_push():
                    self.wait = (cout, "push")
                    break
                msg = cin.q[0][1]
                if self.kind == "fifo":
                    if is_write and len(self.data) >= self.shape[0]:
                        self.wait = (cin, "room")
                        break
                    if not is_write and not self.data:
                        self.wait = (cin, "fifo")
                        break
                cin.pop()
                if is_write:
                    tag, idx, v, label = msg
                    if self.kind == "fifo":
                        self.data.append(v)
                    else:
                        self._check(idx, label)
                        self.data[(tag, *idx)] = v
                        self.clock += 1
                        self.stamp[(tag, *idx)] = self.clock
                else:
                    tag, idx = msg
                    if self.kind == "fifo":
                        v = self.data.popleft()
                    else:
                        self._check(idx, cin.site)
                        v = self.data[(tag, *idx)]
                        v = int(v) if self.dtype == "i32" else np.float32(v)
                    cout.push(v)
                ack.push(1)
                served += 1
                self.fires += 1

    def _check(self, idx: tuple, label: str) -> None:
        if self.kind == "reg":
            return
        if len(idx) != len(self.shape) or not all(0 <= i < n for i, n in zip(idx, self.shape,
                                                                             strict=True)):
            raise SimulationError(f"{label}: {self.kind} {self.name!r} index {list(idx)} is "
                                  f"outside its shape {self.shape} at cycle {self.sim.now}; the "
                                  f"accesses ran out of program order (a missing token?)")

    def final(self):
        if self.kind == "fifo" or self.buffers == 1:
            return self.data if self.kind == "fifo" else self.data[0]
        best = np.argmax(self.stamp, axis=0)
        return np.take_along_axis(self.data, best[None, ...], axis=0)[0]


class _Sim:
    def __init__(self, vudfg: VUDFG, tokens: Tokens, inputs, seed: int,
                 latency: tuple[int, int], fifo_depth: int, credits: Mapping | None):
        lo, hi = int(latency[0]), int(latency[1])
        if not 0 <= lo <= hi:
            raise SimulationError(f"latency {latency}: need 0 <= low <= high cycles")
        if fifo_depth < 1:
            raise SimulationError(f"fifo_depth {fifo_depth}: need at least 1")
        self.lat = (lo, hi)
        self.rng = np.random.default_rng(seed)
        self.now = 0
        self.progress = False
        self.v = vudfg
        self.tree = vudfg.tree
        p = vudfg.program
        state = initial_state(p, inputs or {})
        self.state = state
        self.local = {n: cast(state[n][()], p.memories[n].dtype) for n in vudfg.local_regs}
        multi = [d for d in tokens.memories.values() if d.buffer_loop is not None]
        self.buffers = {d.memory: vudfg.vmus[d.memory].buffers for d in multi}
        self.phase_of = {site: level for d in multi for site, level in d.phases}
        self.phase_levels = frozenset(self.phase_of.values())
        self.units = {n: _Unit(self, u) for n, u in vudfg.vcus.items()}
        self.mems = {n: _Memory(self, m, state[n]) for n, m in vudfg.vmus.items()}
        self.chans: list[_Chan] = []
        self._wire(fifo_depth)
        self._tokens(tokens, credits)

    def draw(self) -> int:
        lo, hi = self.lat
        return lo if lo == hi else int(self.rng.integers(lo, hi + 1))

    def chan(self, src, dst, kind, site, cap) -> _Chan:
        c = _Chan(self, src, dst, kind, site, cap)
        self.chans.append(c)
        return c

    def _wire(self, depth: int) -> None:
        v = self.v
        to_mem: dict[str, _Chan] = {}
        from_mem: dict[str, _Chan] = {}
        for s in v.streams:
            cap = _INF if s.kind == "ack" else depth
            c = self.chan(s.src, s.dst, s.kind, s.site, cap)
            if s.kind in ("bound", "cond"):
                self.units[s.src].out.append(c)
                (self.units[s.dst].bound_in if s.kind == "bound"
                 else self.units[s.dst].cond_in)[s.site] = c
            elif s.kind == "ack":
                self.units[s.dst].ack_in = c
            elif s.dst in self.mems:                               # port -> memory
                self.units[s.src].gate_out = c
                to_mem[s.site] = c
            elif s.src in self.mems:                               # read data
                self.units[s.dst].data_in[s.site] = c
                from_mem[s.site] = c
            elif s.dst in self.units and self.units[s.dst].v.role in ("request", "response"):
                if s.kind == "addr":
                    self.units[s.src].addr_out[s.site] = c
                else:
                    self.units[s.src].write_out[s.site] = c
                self.units[s.dst].gate_in = c
            else:                                                  # block segments
                self.units[s.src].seg_out = c
                self.units[s.dst].seg_in = c
        for site, cin in to_mem.items():
            port = self.units[cin.src]
            is_write = port.v.role == "response"
            self.mems[cin.dst].ins.append((cin, None if is_write else from_mem[site],
                                           port.ack_in, is_write, port.rate))
        # accumulators kept in their compute VCU for a run of a loop
        groups: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}
        for site, loop in v.promoted.items():
            _, mem, rw = v.sites[site]
            g = groups.setdefault((v.compute_of[site], loop, mem), ([], []))
            g[0 if rw == "R" else 1].append(site)
        for (cu, loop, mem), (reads, writes) in groups.items():
            self.units[cu].promote_at.setdefault(loop, []).append((mem, reads, writes))
        # requests per fire of a read port: statements that evaluate the load
        for u in self.units.values():
            if u.v.role != "request":
                continue
            obj = self.tree.nodes[u.v.leaf]["obj"]
            u.load = next(x for _, x in leaf_accesses(obj) if x.label == u.v.site)
            if isinstance(obj, Block) and u.v.site not in v.promoted:
                cu = self.units[v.compute_of[u.v.site]]
                n = 0
                for k in cu.v.statements:
                    st = obj.statements[k]
                    exprs = (*st.index, st.value) if isinstance(st, Store) else (st.value,)
                    if any(isinstance(x, Load) and x.label == u.v.site
                           for e in exprs for x in walk(e)):
                        n += 1
                u.per_fire = n

    def _tokens(self, tokens: Tokens, credits: Mapping | None) -> None:
        credits = dict(credits or {})
        deps = tokens.deps()
        known = ({f"{d.src}->{d.dst}" for d in deps} | {d.memory for d in deps} | {"*"}
                 | {c.key for c in tokens.control})
        bad = sorted(set(credits) - known)
        if bad:
            raise SimulationError(f"credits: {', '.join(bad)} name no credit edge or memory "
                                  f"with tokens; use '<src>-><dst>', a memory name, "
                                  f"'<controller>:<src>-><dst>' or '*'")
        for c in tokens.control:
            n = int(credits.get(c.key, c.credit))
            for a in c.push_units:
                for b in c.pop_units:
                    ch = self.chan(a, b, "credit" if c.backward else "token", c.key, _INF)
                    ch.q.extend((0, 1) for _ in range(n))
                    self.units[a].ctl_push.setdefault(c.controller, []).append(ch)
                    self.units[b].ctl_pop.setdefault(c.controller, []).append(ch)
        for d in deps:
            key = f"{d.src}->{d.dst}"
            c = self.chan(d.push_unit, d.pop_unit, "credit" if d.backward else "token",
                          key, _INF)
            if d.backward:
                n = credits.get(key, credits.get(d.memory, credits.get("*", d.credit)))
                c.q.extend((0, 1) for _ in range(int(n)))
            self.units[d.push_unit].push_at.setdefault(d.push_level, []).append(c)
            u = self.units[d.pop_unit]
            u.pop_at.setdefault(d.pop_level, []).append(c)
            u.in_tokens.setdefault(d.dst, []).append(c)
        # a port holds, before pushing at level P, its in-tokens popped at P or above
        for u in self.units.values():
            path = u.v.path
            for lvl in u.push_at:
                depth = path.index(lvl)
                u.hold_at[lvl] = [c for pl, chans in u.pop_at.items()
                                  if path.index(pl) <= depth for c in chans]

    # ---- helpers
    def eval_static(self, e, env: dict):
        if isinstance(e, Op):
            args = [self.eval_static(x, env) for x in e.args]
            dt = e.args[1].dtype if e.op == "select" else e.args[0].dtype
            return apply_op(e.op, args, dt)
        if isinstance(e, Index):
            return env[id(e.loop)]
        if isinstance(e, Const):
            return cast(e.value, e.dtype)
        raise ProgramError(f"a loop bound reads {type(e).__name__} without a control VCU")

    # ---- the clock
    def run(self, max_cycles: int) -> SimResult:
        units = list(self.units.values())
        mems = list(self.mems.values())
        live = list(units)
        while True:
            self.progress = False
            for m in mems:
                m.step()
            for u in live:
                u.wait = None
                n = 0
                while True:
                    try:
                        y = u.gen.send(None)
                    except StopIteration:
                        u.done = True
                        self.progress = True
                        break
                    if y is _BLOCK:
                        break
                    self.progress = True
                    n += 1
                    if n >= u.rate:
                        break
            live = [u for u in live if not u.done]
            if not live and all(not c.q for m in mems for c, *_ in m.ins):
                break
            if self.now >= max_cycles:
                raise SimulationError(f"program {self.v.program.name!r} did not finish within "
                                      f"max_cycles={max_cycles}; raise max_cycles")
            if self.progress:
                self.now += 1
                continue
            future = [c.q[0][0] for c in self.chans if c.q and c.q[0][0] > self.now]
            if future:
                self.now = min(future)
                continue
            raise SimulationError(self._deadlock(live))
        for name, m in self.mems.items():
            self.state[name] = m.final()
        for name, val in self.local.items():
            self.state[name] = np.array(val)
        fires = {n: u.fires for n, u in self.units.items()}
        fires.update({n: m.fires for n, m in self.mems.items()})
        return SimResult(final_state(self.v.program, self.state), self.now + 1, fires)

    def _deadlock(self, live: list[_Unit]) -> str:
        """The one-line message of a deadlock: the waits-for graph has a node per unit and
        one per (memory, access site) ``m3[R3]``; the first cycle found is named."""
        g = nx.DiGraph()

        def node(ch: _Chan, end: str) -> str:
            return f"{end}[{ch.site}]" if end in self.mems else end

        for u in live:
            if u.wait is None:
                continue
            ch, how = u.wait
            other = ch.src if how == "pop" else ch.dst
            g.add_edge(u.name, node(ch, other), why=f"{ch.kind} {ch.site}")
        for m in self.mems.values():
            for cin, cout, _, is_write, _ in m.ins:
                at = f"{m.name}[{cin.site}]"
                if not cin.q:                      # the memory waits for requests of that site
                    g.add_edge(at, cin.src, why=f"{'data' if is_write else 'addr'} {cin.site}")
                elif cout is not None and not cout.can_push():
                    g.add_edge(at, cout.dst, why=f"room on {cout.kind} {cout.site}")
                elif m.kind == "fifo":
                    for win, _, _, w, _ in m.ins:
                        if w != is_write:
                            g.add_edge(at, win.src, why=f"fifo {'room' if is_write else 'data'} "
                                       f"{win.site}")
        try:
            cyc = nx.find_cycle(g)
            parts = [f"{u} -[{g.edges[u, w]['why']}]->" for u, w in cyc]
            text = " ".join(parts) + f" {cyc[0][0]}"
            return (f"deadlock at cycle {self.now} in {self.v.program.name!r}: waits-for "
                    f"cycle {text}")
        except nx.NetworkXNoCycle:
            waits = "; ".join(f"{u} -[{d['why']}]-> {w}" for u, w, d in g.edges(data=True))
            return (f"deadlock at cycle {self.now} in {self.v.program.name!r} without a "
                    f"waits-for cycle (a token is never produced): {waits or 'no waits'}")


def simulate(vudfg: VUDFG, tokens: Tokens, inputs: Mapping[str, np.ndarray] | None = None, *,
             seed: int = 0, latency: tuple[int, int] = (1, 1), fifo_depth: int = 16,
             credits: Mapping[str, int] | None = None,
             max_cycles: int = 1_000_000) -> SimResult:
    """Simulate ``vudfg`` with the tokens of ``tokens`` (module docstring) on ``inputs``
    (DRAM name -> array, as :func:`mapper.dataflow.interp.interpret`).

    ``seed``: the link-latency generator's seed; ``latency``: (low, high) cycles per message,
    inclusive; ``fifo_depth``: messages per data/address/ack/bound/cond stream;
    ``credits``: initial credits overriding cmmc's, keyed by ``"<src>-><dst>"`` (a credit
    edge), a memory name (all its credit edges), ``"*"`` (all memory credit edges) or a
    control token's ``"<controller>:<src>-><dst>"`` (``ControlDep.key``; only by that key);
    ``max_cycles``: give up
    after that many cycles. Returns a :class:`SimResult`.

    Raises :class:`SimulationError` on a deadlock (the one-line message names the waits-for
    cycle: unit -[what it waits for]-> unit ...), an out-of-range address, exceeding
    ``max_cycles`` or a bad argument; :class:`ProgramError` for bad inputs.
    """
    return _Sim(vudfg, tokens, inputs, seed, latency, fifo_depth, credits).run(max_cycles)


__all__ = ["SimResult", "simulate"]
