"""Control hardware as PEak components (peak.control, issue 35 item 1): known answers from
SARA §III-A, Python = SMT = RTL on seeded random stimulus, z3 properties, parameter errors,
pe.json and the resource vector."""
import json
import random

import pytest
import z3
from hwtypes import Bit, BitVector
from hwtypes.adt import Product

from cgra.errors import ConfigError, SpecError
from peak.assembler import assembler
from peak.collateral import PEInfo, control_components, pe_json
from peak.control import (KINDS, counter_chain_inst, counter_chain_trips, credit_counter_inst,
                          input_fifo_inst, make_counter_chain, make_credit_counter,
                          make_input_fifo, make_token_fifo, token_fifo_inst)
from peak.examples.cgra_pe import PE as DefaultPE
from peak.examples.control_pe import ControlPE, make_control_pe
from peak.normalize import normal_form
from peak.resources import CONTROL_KEYS, PEResources, pe_resources
from peak.sim import RTLSim, model_outputs
from peak.smt import symbolic
from peak.spec import Peak, name_outputs

CHAIN_3X2 = [(0, 1, 3), (0, 1, 2)]


def _ints(r):
    return tuple(int(x) for x in (r if isinstance(r, tuple) else (r,)))


def test_counter_chain_3x2_done_pulses():
    Chain = make_counter_chain(2, 8)
    ctr = Chain()
    inst = counter_chain_inst(Chain, CHAIN_3X2)
    rows = [_ints(ctr(inst, 1)) for _ in range(12)]
    index = [(i & 0xFF, i >> 8) for i, _ in rows]
    assert index[:7] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]
    assert [t for t, (_, d) in enumerate(rows) if d & 1] == [2, 5, 8, 11]
    assert [t for t, (_, d) in enumerate(rows) if d & 2] == [5, 11]
    # en = 0 holds every level and raises no done
    ctr.reset()
    assert _ints(ctr(inst, 1)) == (0, 0)
    assert [_ints(ctr(inst, 0)) for _ in range(3)] == [(1, 0)] * 3
    assert _ints(ctr(inst, 1)) == (1, 0) and _ints(ctr(inst, 1)) == (2, 1)


def test_counter_chain_min_stride_max():
    Chain = make_counter_chain(2, 8)
    ctr = Chain()
    levels = [(2, 3, 9), (5, 10, 26)]       # 2, 5, 8 inside 5, 15, 25
    assert counter_chain_trips(levels) == [3, 3]
    inst = counter_chain_inst(Chain, levels)
    rows = [_ints(ctr(inst, 1)) for _ in range(9)]
    assert [(i & 0xFF, i >> 8) for i, _ in rows] == [
        (a, b) for b in (5, 15, 25) for a in (2, 5, 8)]
    assert [d for _, d in rows] == [0, 0, 1, 0, 0, 1, 0, 0, 3]
    # a bound at the top of the range: 250, 254 (254 + 4 does not wrap to 2)
    top = counter_chain_inst(Chain, [(250, 4, 255), (0, 1, 1)])
    ctr.reset()
    assert [_ints(ctr(top, 1)) for _ in range(3)] == [(250, 0), (254, 3), (250, 0)]


def test_token_fifo_and_credit_counter():
    Tok = make_token_fifo(2)
    tok = Tok()
    i0 = token_fifo_inst(Tok, 0)
    # (valid, full, count, overflow, valid_next) for push, push, push (refused), pop, pop, pop
    got = [_ints(tok(i0, p, q)) for p, q in [(1, 0), (1, 0), (1, 0), (0, 1), (0, 1), (0, 1)]]
    assert got == [(0, 0, 0, 0, 1), (1, 0, 1, 0, 1), (1, 1, 2, 1, 1), (1, 1, 2, 0, 1),
                   (1, 0, 1, 0, 0), (0, 0, 0, 0, 0)]
    tok.reset()
    assert _ints(tok(token_fifo_inst(Tok, 2), 1, 1)) == (1, 1, 2, 1, 1)   # full: pop only
    # a credit counter with initial credit 2 blocks the third push until a pop
    Cr = make_credit_counter(4)
    cr = Cr()
    c2 = credit_counter_inst(Cr, 2)
    steps = [(1, 0), (1, 0), (1, 0), (1, 0), (0, 1), (1, 0), (1, 0)]
    rows = [_ints(cr(c2, take, give)) for take, give in steps]
    assert [r[0] for r in rows] == [1, 1, 0, 0, 0, 1, 0]          # grant
    assert [r[2] for r in rows] == [2, 1, 0, 0, 0, 1, 0]          # credits
    cr.reset()
    c4 = credit_counter_inst(Cr, 4)
    assert _ints(cr(c4, 0, 1)) == (0, 1, 4, 1, 1)                 # a fifth credit: refused


def test_input_fifo_dequeue_levels():
    Chain = make_counter_chain(2, 8)
    Fifo = make_input_fifo(4, 16, 2)
    ci = counter_chain_inst(Chain, CHAIN_3X2)

    def heads(level):
        ctr, fifo = Chain(), Fifo()
        fi = input_fifo_inst(Fifo, level)
        for w in (10, 11, 12, 13):
            fifo(fi, 1, w, 0, 0)
        out = []
        for _ in range(7):
            _, done = ctr(ci, 1)
            head, valid, *_ = _ints(fifo(fi, 0, 0, 1, done))
            out.append(head if valid else None)
        return out

    assert heads(0) == [10, 11, 12, 13, None, None, None]     # every firing
    assert heads(1) == [10, 10, 10, 11, 11, 11, 12]           # per inner-loop iteration
    assert heads(2) == [10] * 6 + [11]                        # per outer-loop iteration
    # full: a fifth word is refused, ready drops; wrap-around keeps the order
    fifo = Fifo()
    fi = input_fifo_inst(Fifo, 0)
    assert [_ints(fifo(fi, 1, w, 0, 0))[2] for w in range(5)] == [1, 1, 1, 1, 0]
    seen = []
    for w in (20, 21, 22):              # enqueue while dequeuing: 20 meets a full FIFO
        seen.append(_ints(fifo(fi, 1, w, 1, 0))[:2])
    seen += [_ints(fifo(fi, 0, 0, 1, 0))[:2] for _ in range(4)]
    assert seen[:6] == [(0, 1), (1, 1), (2, 1), (3, 1), (21, 1), (22, 1)]
    assert seen[6][1] == 0                                    # empty (the head is stale)


def _control_inst(pe=ControlPE, credits=1, tok_init=0, level=1):
    Chain, Fifo, Tok, Cr = pe.parts
    return pe.Inst(counter_chain_inst(Chain, CHAIN_3X2), input_fifo_inst(Fifo, level),
                   token_fifo_inst(Tok, tok_init), credit_counter_inst(Cr, credits))


def test_control_pe_known_answer_and_flags():
    pe = ControlPE()
    inst = _control_inst()
    feed = {0: (7, 1, 1, 0, 1), 1: (9, 1, 0, 0, 1), 9: (0, 0, 0, 1, 1), 10: (5, 1, 1, 0, 1)}
    rows = []
    nf = normal_form(ControlPE)
    names = [leaf.name for leaf in nf.state]
    for t in range(16):
        rows.append(_ints(pe(inst, *feed.get(t, (0, 0, 0, 0, 1)))))
        # the registered flags equal the statuses of the components' new state
        st = dict(zip(names, map(int, pe.state()), strict=True))
        tokens = (0 + st["tok.delta[0]"]) % 4
        credits = (1 - st["cr.spent[0]"]) % 4
        assert st["flags[0]"] == (st["fifo.n[0]"] != 0) | (tokens != 0) << 1 | \
            (credits != 0) << 2 | 8
    fire = [t for t, r in enumerate(rows) if r[3]]
    # the second run has one word, dequeued when the inner loop completes: then it waits
    assert fire == [1, 2, 3, 4, 5, 6, 11, 12, 13]
    assert [rows[t][0] for t in range(1, 7)] == [7, 7, 7, 9, 9, 9]
    assert [t for t, r in enumerate(rows) if r[4]] == [6]           # token_out
    assert rows[11][0] == 5                                          # next word, next run


def test_control_pe_initial_state_from_config():
    pe = ControlPE()
    # no credit: the unit never fires, whatever arrives
    inst = _control_inst(credits=0, tok_init=1)
    assert [_ints(pe(inst, 3, 1, 0, 0, 1))[3] for _ in range(5)] == [0] * 5
    pe.reset()
    # one initial token: the first word fires the unit one cycle after it arrives
    inst = _control_inst(credits=2, tok_init=1, level=0)
    assert [_ints(pe(inst, 3, 1, 0, 0, 1))[3] for _ in range(3)] == [0, 1, 1]


def test_bad_parameters_are_one_line_errors():
    cases = [(lambda: make_counter_chain(0, 8), SpecError, "levels = 0 must be an int in 1..8"),
             (lambda: make_counter_chain(2, 33), SpecError, "width = 33"),
             (lambda: make_token_fifo(0), SpecError, "depth = 0 must be an int in 1..256"),
             (lambda: make_credit_counter(300), SpecError, "max_credits = 300"),
             (lambda: make_input_fifo(4, 16, 9), SpecError, "levels = 9"),
             (lambda: counter_chain_inst(make_counter_chain(2, 8), [(0, 1, 3)]), ConfigError,
              "1 (min, stride, max) triples given for 2 levels"),
             (lambda: counter_chain_inst(make_counter_chain(1, 8), [(3, 1, 3)]), ConfigError,
              "level 0 (min=3, stride=1, max=3) needs 0 <= min < max < 256"),
             (lambda: counter_chain_inst(make_counter_chain(1, 8), [(0, 0, 3)]), ConfigError,
              "1 <= stride < 256"),
             (lambda: token_fifo_inst(make_token_fifo(2), 3), ConfigError,
              "init = 3 tokens must be in 0..2"),
             (lambda: credit_counter_inst(make_credit_counter(2), -1), ConfigError,
              "credits = -1 must be in 0..2"),
             (lambda: input_fifo_inst(make_input_fifo(4, 16, 2), 3), ConfigError,
              "dequeue level 3 must be in 0..2"),
             (lambda: token_fifo_inst(make_credit_counter(2), 1), ConfigError,
              "'CreditCounter2' is not a token_fifo (a class made by "
              "peak.control.make_token_fifo)"),
             (lambda: make_control_pe(width=8, levels=3, ctr_width=4), SpecError,
              "levels * ctr_width = 12 bits do not fit the 8-bit index port")]
    for make, exc, text in cases:
        with pytest.raises(exc) as info:
            make()
        assert text in str(info.value) and "\n" not in str(info.value)


def test_pe_json_and_resources_count_the_components():
    doc = json.loads(json.dumps(pe_json(ControlPE)))
    assert doc["control"] == [
        {"name": "ctr", "kind": "counter_chain", "levels": 2, "width": 8},
        {"name": "fifo", "kind": "input_fifo", "depth": 4, "width": 16, "levels": 2},
        {"name": "tok", "kind": "token_fifo", "depth": 2},
        {"name": "cr", "kind": "credit_counter", "max_credits": 2}]
    res = pe_resources(PEInfo.from_json(doc), None)
    assert res["control"] == {"counter_chains": 1, "counter_levels": 2, "token_fifos": 1,
                              "token_slots": 2, "credit_counters": 1, "credits": 2,
                              "input_fifos": 1, "input_fifo_words": 4}
    # the state registers the components add: 16 (chain) + 4 x 16 + 2 + 2 + 3 (FIFO)
    # + 2 (tokens) + 2 (credits) + 4 (flags)
    assert sum(leaf.T.size for leaf in normal_form(ControlPE).state) == 95
    assert PEResources.from_json(json.loads(json.dumps(res))).control["input_fifo_words"] == 4
    assert {kind for _, kind, _ in CONTROL_KEYS} == set(KINDS)      # every kind is counted
    # a PE without control hardware counts zeros; a document without the key reads as zeros
    plain = pe_resources(PEInfo.of_spec(DefaultPE), None)
    assert set(plain["control"].values()) == {0}
    del plain["control"]
    assert PEResources.from_json(plain).control["counter_chains"] == 0
    # nested sub-PEs are found at any depth, by dotted name
    big = make_control_pe(width=8, levels=3, ctr_width=2, fifo_depth=2, token_depth=3,
                          max_credits=4)
    assert [(c["name"], c["kind"]) for c in control_components(normal_form(big))] == [
        ("ctr", "counter_chain"), ("fifo", "input_fifo"), ("tok", "token_fifo"),
        ("cr", "credit_counter")]


# -- Python = SMT = RTL --------------------------------------------------------------------
H_CHAIN = make_counter_chain(2, 4)
H_FIFO = make_input_fifo(3, 8, 2)
H_TOK = make_token_fifo(3)
H_CR = make_credit_counter(3)
H_UNIT = make_control_pe(width=8, levels=2, ctr_width=2, fifo_depth=2, token_depth=2,
                         max_credits=2)
Byte = BitVector[8]


class HarnessInst(Product):
    ctr = H_CHAIN.Inst
    fifo = H_FIFO.Inst
    tok = H_TOK.Inst
    cr = H_CR.Inst
    unit = H_UNIT.Inst


class ControlHarness(Peak):
    """Every control component with its inputs driven independently (random stimulus), and
    a small control PE (the composition) beside them."""

    def __init__(self):
        self.ctr = H_CHAIN()
        self.fifo = H_FIFO()
        self.tok = H_TOK()
        self.cr = H_CR()
        self.unit = H_UNIT()

    @name_outputs(index=Byte, done=BitVector[2], head=Byte, f_valid=Bit,
                  f_ready=Bit, f_count=BitVector[2], f_next=Bit, t_valid=Bit, t_full=Bit,
                  t_count=BitVector[2], t_over=Bit, t_next=Bit, grant=Bit, avail=Bit,
                  c_count=BitVector[2], c_over=Bit, c_next=Bit, u_out=Byte, u_index=Byte,
                  u_done=Byte, u_fire=Bit, u_token_out=Bit, u_in_ready=Bit)
    def __call__(self, inst: HarnessInst, en: Bit, enq: Bit, data: Byte, step: Bit,
                 push: Bit, pop: Bit, take: Bit, give: Bit, u_data: Byte, u_valid: Bit,
                 u_token: Bit, u_credit: Bit, u_run: Bit):
        index, done = self.ctr(inst.ctr, en)
        head, fv, fr, fc, fn = self.fifo(inst.fifo, enq, data, step, done)
        tv, tf, tc, to, tn = self.tok(inst.tok, push, pop)
        g, a, cc, co, cn = self.cr(inst.cr, take, give)
        uo, ui, ud, uf, ut, ur = self.unit(inst.unit, u_data, u_valid, u_token, u_credit,
                                           u_run)
        return (index, done, head, fv, fr, fc, fn, tv, tf, tc, to, tn, g, a, cc, co, cn,
                uo, ui, ud, uf, ut, ur)


def _random_chain(rng: random.Random, top: int) -> list:
    levels = []
    for _ in range(2):
        lo = rng.randrange(0, top - 1)
        levels.append((lo, rng.randrange(1, 3), rng.randrange(lo + 1, top)))
    return levels


def _harness_vectors(n: int, seed: int) -> list:
    rng = random.Random(seed)
    asm = assembler(HarnessInst)
    C, F, T, R = H_UNIT.parts
    vectors = []
    inst = None
    for t in range(n):
        if t % 50 == 0:            # a new legal configuration every 50 cycles
            unit = H_UNIT.Inst(counter_chain_inst(C, _random_chain(rng, 4)),
                               input_fifo_inst(F, rng.randrange(3)),
                               token_fifo_inst(T, rng.randrange(3)),
                               credit_counter_inst(R, rng.randrange(3)))
            inst = asm.encode(HarnessInst(counter_chain_inst(H_CHAIN, _random_chain(rng, 16)),
                                          input_fifo_inst(H_FIFO, rng.randrange(3)),
                                          token_fifo_inst(H_TOK, rng.randrange(4)),
                                          credit_counter_inst(H_CR, rng.randrange(4)), unit))
        ins = (rng.random() < 0.8, rng.random() < 0.5, rng.getrandbits(8), rng.random() < 0.6,
               rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.4,
               rng.getrandbits(8), rng.random() < 0.5, rng.random() < 0.3, rng.random() < 0.3,
               rng.random() < 0.9)
        vectors.append((inst, [int(x) for x in ins], int(rng.random() > 0.1)))
    return vectors


def test_python_smt_rtl_agree_on_random_stimulus(rtl_dir):
    vectors = _harness_vectors(400, seed=35)
    nf = normal_form(ControlHarness)
    sym = symbolic(ControlHarness)
    model = ControlHarness()
    names = [n for n, _ in nf.inputs]
    for inst, ins, en in vectors[:100]:     # SMT stepped on the Python model's state
        state = model.state()
        values = {"inst": inst, **dict(zip(names, ins, strict=True))}
        values.update({f"state.{leaf.name}": int(v)
                       for leaf, v in zip(nf.state, state, strict=True)})
        outs, nxt = sym.substitute(values)
        py = _ints(model(inst, *ins))
        assert tuple(int(o.constant_value()) for o in outs.values()) == py
        assert tuple(int(v.constant_value()) for v in nxt.values()) == tuple(map(int,
                                                                              model.state()))
        if not en:
            model.set_state(state)
    expected = model_outputs(ControlHarness, vectors)
    assert sum(r[1] != 0 for r in expected) > 40          # the stimulus reaches done pulses
    assert sum(r[10] for r in expected) > 5 and sum(r[12] for r in expected) > 50
    assert sum(r[20] for r in expected) > 50 and sum(r[21] for r in expected) > 10
    sim = RTLSim(ControlHarness, str(rtl_dir / "control_harness"))
    got = sim.run(vectors)
    bad = [i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    assert bad == [], f"RTL differs from the Python model first at cycle {bad[0]}"
    # the known answers, on the same Verilator build: the 3 x 2 chain stepping every cycle,
    # and initial credit 2 with a send every cycle and a credit back in cycle 4
    C, F, T, R = H_UNIT.parts
    inst = assembler(HarnessInst).encode(HarnessInst(
        counter_chain_inst(H_CHAIN, CHAIN_3X2), input_fifo_inst(H_FIFO, 0),
        token_fifo_inst(H_TOK, 0), credit_counter_inst(H_CR, 2),
        H_UNIT.Inst(counter_chain_inst(C, CHAIN_3X2), input_fifo_inst(F, 0),
                    token_fifo_inst(T, 0), credit_counter_inst(R, 1))))
    known = [(inst, [1, 0, 0, 0, 0, 0, int(t != 4), int(t == 4), 0, 0, 0, 0, 0])
             for t in range(12)]
    rtl = sim.run(known)
    assert rtl == model_outputs(ControlHarness, known)
    assert [t for t, r in enumerate(rtl) if r[1] & 1] == [2, 5, 8, 11]
    assert [t for t, r in enumerate(rtl) if r[1] & 2] == [5, 11]
    assert [r[12] for r in rtl[:7]] == [1, 1, 0, 0, 0, 1, 0]       # grant


def test_z3_properties():
    """For every configuration, state and input: an outer level's done implies the inner
    ones'; statuses do not depend on the same cycle's inputs; a grant needs a credit."""
    chain = symbolic(H_CHAIN).z3()
    done = chain["out.done"]
    s = z3.Solver()
    s.add(z3.Extract(1, 1, done) == 1, z3.Extract(0, 0, done) == 0)
    assert s.check() == z3.unsat
    s = z3.Solver()                     # and an outer done can happen at all
    s.add(z3.Extract(1, 1, done) == 1)
    assert s.check() == z3.sat
    tok = symbolic(H_TOK).z3()
    push, pop = tok["push"], tok["pop"]
    for out in ("out.valid", "out.full", "out.count"):
        s = z3.Solver()
        a = tok[out]
        b = z3.substitute(a, (push, z3.Not(push)), (pop, z3.Not(pop)))
        s.add(a != b)
        assert s.check() == z3.unsat, out
    cr = symbolic(H_CR).z3()
    s = z3.Solver()
    s.add(cr["out.grant"], z3.Not(cr["out.avail"]))
    assert s.check() == z3.unsat
