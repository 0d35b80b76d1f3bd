"""The PE family built from the default PE's units (issue 38): a variant's spec hash reads
the module of every sub-PE at any depth, so editing the shared units (or ``peak/bf16.py``,
used inside the bf16 PE's ALU) marks every design of the family stale; the Python model's
per-instruction specialisation, which specialises sub-PEs too and skips what only feeds
inputs they ignore, computes what the generic normal form computes."""
from __future__ import annotations

import inspect
import random
from pathlib import Path

import pytest

from peak import load_spec, normal_form, spec_hash
from peak.assembler import assembler
from peak.model import evaluate, evaluate_specialized

ROOT = Path(__file__).resolve().parents[2]
NOMUL = f"{ROOT / 'tests' / 'mapper' / 'mapper_pe_nomul.py'}:PE"


@pytest.mark.parametrize("ref, module", [
    ("peak.examples.cgra_pe:PE", "peak.examples.cgra_pe"),
    ("peak.examples.cgra_pe_bf16:PE", "peak.examples.cgra_pe"),
    ("peak.examples.cgra_pe_bf16:PE", "peak.bf16"),            # two sub-PE levels down
    ("peak.examples.cgra_pe_d2:PE", "peak.examples.cgra_pe"),
    ("peak.examples.cgra_pe_d3:PE", "peak.examples.cgra_pe"),
    (NOMUL, "peak.examples.cgra_pe"),
])
def test_a_variant_changes_with_the_shared_units(ref, module, monkeypatch):
    spec = load_spec(ref)
    before = spec_hash.__wrapped__(spec)              # uncached
    assert before == spec_hash(spec)
    real = inspect.getsource

    def edited(obj):
        src = real(obj)
        return src + "\n# edited\n" if getattr(obj, "__name__", None) == module else src

    monkeypatch.setattr(inspect, "getsource", edited)
    assert spec_hash.__wrapped__(spec) != before


def test_the_variants_are_the_default_frame_and_units():
    """bf16 and nomul are the default PE's frame (same ports and state) around their own
    ALU; d2 and d3 reuse its units for everything but their inputs."""
    default = normal_form(load_spec("peak.examples.cgra_pe:PE"))
    for ref in ("peak.examples.cgra_pe_bf16:PE", NOMUL):
        nf = normal_form(load_spec(ref))
        assert (nf.inputs, nf.outputs) == (default.inputs, default.outputs)
        assert [(s.name, s.T) for s in nf.state] == [(s.name, s.T) for s in default.state]
        assert set(nf.subs) == set(default.subs)
    core = default.subs["core"]
    d2 = normal_form(load_spec("peak.examples.cgra_pe_d2:PE"))
    assert d2.subs["core"].subs["alu"].spec is core.subs["alu"].spec       # the same ALU
    assert d2.subs["bit0_in"].spec is default.subs["bit0_in"].spec
    d3 = normal_form(load_spec("peak.examples.cgra_pe_d3:PE"))
    assert d3.subs["cond"].spec is core.subs["cond"].spec
    assert d3.subs["lut"].spec is core.subs["lut"].spec
    assert [s.name for s in d3.state] == ["data0_reg", "data1_reg", "data2_reg", "bit0_reg",
                                          "bit1_reg", "bit2_reg"]


FAMILY = ["peak.examples.cgra_pe:PE", "peak.examples.cgra_pe:make_pe(32)",
          "peak.examples.cgra_pe_bf16:PE", "peak.examples.cgra_pe_d2:PE",
          "peak.examples.cgra_pe_d3:PE", NOMUL]


@pytest.mark.parametrize("ref", FAMILY)
def test_specialised_model_equals_the_generic_one(ref):
    spec = load_spec(ref)
    nf = normal_form(spec)
    asm = assembler(nf.isa)
    rng = random.Random(5)
    for _ in range(150):
        inst = asm.random_encoding(rng)
        inputs = [rng.getrandbits(getattr(T, "size", 1)) for _, T in nf.inputs]
        state = [rng.getrandbits(getattr(leaf.T, "size", 1)) for leaf in nf.state]
        outs, nxt = evaluate(spec, inst, inputs, state)
        sp_outs, sp_nxt = evaluate_specialized(spec, inst, inputs, state)
        assert [int(x) for x in sp_outs + sp_nxt] == [int(x) for x in outs + nxt], \
            (asm.decode(inst), inputs, state)
