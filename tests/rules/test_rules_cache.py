"""The rule cache (issue 12): entries keyed by spec hash, incremental == cold after an edit,
``--only`` / ``--force`` in place, concurrent writers, interrupts."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peak import spec_hash
from peak.examples import cgra_pe
from peak.examples.cgra_pe_edits import ADD_ABSD, NO_MUL, write_edited
from peak.rules import build_table, load_spec
from peak.rules.format import (CACHE_DIR, cached_tables, entry_dir, read_table, rule_filename,
                               table_path)

ROOT = Path(__file__).resolve().parents[2]
CGRA = [sys.executable, "-c", "from cgra.cli import main; main()"]
TOY = "peak.examples.toy_pe:make_toy_pe(8)"

#: a new instruction field: ``negate`` (1 bit) negates the ALU result; 0 = today's PE
ADD_FIELD = [
    ('        fields[f"bit{k}_const"] = Bit\n',
     '        fields[f"bit{k}_const"] = Bit\n    fields["negate"] = Bit\n'),
    ("            res, C, V = self.alu(inst.alu, inst.signed, a, b, d)\n",
     "            res, C, V = self.alu(inst.alu, inst.signed, a, b, d)\n"
     "            res = (-res) if inst.negate else res\n"),
]
#: a third data input and an opcode using it: ``Add3`` (res = a + b + data2)
ADD_INPUT = [
    ("    XOR = 13\n", "    XOR = 13\n    Add3 = 14\n"),
    ("bit0: Bit, bit1: Bit, bit2: Bit):", "bit0: Bit, bit1: Bit, bit2: Bit, data2: Data):"),
    ("            return self.core(inst, a, b, d, e, f)\n",
     "            res, res_p = self.core(inst, a, b, d, e, f)\n"
     "            if inst.alu == ALU.Add3:\n                res = a + b + data2\n"
     "            return res, res_p\n"),
]
#: targets an edit of the ALU can change, plus unrelated ones (reused after the edit)
EDITED = ["commonlib.absd", "coreir.sub", "coreir.sub[in0=const]", "coreir.sub[in1=const]",
          "commonlib.abs", "coreir.mul", "coreir.mul[in1=const]", "commonlib.mult_middle"]
UNRELATED = ["coreir.add", "coreir.ult", "corebit.and", "coreir.mux"]


def _edited_pe(tmp_path: Path, name: str, edits: list[tuple[str, str]]) -> type:
    return load_spec(f"{write_edited(tmp_path / f'{name}.py', edits)}:PE")


def _cost(table) -> dict[str, tuple[str, int | None]]:
    return {e.target: (e.status, e.rule.cost if e.rule else None) for e in table.entries}


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*.json"))}


def _incremental_and_cold(default_table, tmp_path, pe):
    _, out = default_table
    inc_dir = tmp_path / "incremental"
    shutil.copytree(out, inc_dir)
    before = _files(out / CACHE_DIR)
    inc = build_table(pe, inc_dir, only=EDITED + UNRELATED)
    cold = build_table(pe, tmp_path / "cold", only=EDITED + UNRELATED)
    assert _cost(inc) == _cost(cold)
    # the edited PE (also named PE) got its own cache entry; the default PE's is intact
    assert len(list((inc_dir / CACHE_DIR).iterdir())) == 2
    assert {k: v for k, v in _files(inc_dir / CACHE_DIR).items() if k in before} == before
    return inc, cold


def test_absd_op_edit_incremental_equals_cold(default_table, tmp_path):
    """A new 1-PE Absd op: the cached 2-PE absd rule still verifies, but a cheaper rule
    exists; the incremental table finds it as the cold one does."""
    table, _ = default_table
    assert table.rule("commonlib.absd").cost == 2
    pe = _edited_pe(tmp_path, "cgra_pe_absd", ADD_ABSD)
    inc, cold = _incremental_and_cold(default_table, tmp_path, pe)
    absd = inc.entry("commonlib.absd")
    assert absd.status == "found" and absd.rule.cost == 1 and absd.action == "improved"
    assert cold.entry("commonlib.absd").rule.cost == 1
    assert absd.rule.instances[0].inst["alu"] == 14                     # the new opcode
    for k in UNRELATED + ["coreir.sub", "commonlib.abs", "coreir.mul"]:
        assert inc.entry(k).action == "reused", inc.entry(k)
    # the view of the shared directory is the edited PE's table, readable as before
    view = read_table(tmp_path / "incremental")
    assert view.spec_hash == spec_hash(pe)
    assert view.path == table_path(tmp_path / "incremental", "PE")


def test_no_multiplier_edit_incremental_equals_cold(default_table, tmp_path):
    pe = _edited_pe(tmp_path, "cgra_pe_nomul", NO_MUL)
    inc, cold = _incremental_and_cold(default_table, tmp_path, pe)
    for k in ("coreir.mul", "coreir.mul[in1=const]", "commonlib.mult_middle"):
        assert inc.entry(k).status == "none" and inc.entry(k).action == "synthesised"
    assert inc.entry("commonlib.absd").rule.cost == 2
    assert inc.entry("coreir.add").action == "reused"


def test_new_instruction_field_keeps_the_rules(default_table, tmp_path):
    """Adding an instruction field (off = code 0) does not invalidate the table: reused
    rules get the field at its default code and are re-proved, not re-synthesised; the
    result equals a cold synthesis (sub of a constant may now use the negate bit: same
    cost)."""
    pe = _edited_pe(tmp_path, "cgra_pe_negate", ADD_FIELD)
    inc, _cold = _incremental_and_cold(default_table, tmp_path, pe)
    for k in UNRELATED + ["coreir.sub", "commonlib.abs", "coreir.mul"]:
        e = inc.entry(k)
        assert e.action == "reused" and e.rule.instances[0].inst["negate"] == 0, e


def test_new_pe_input_keeps_the_rules(default_table, tmp_path):
    """A new PE input (with an op that reads it): old rules get the input bound `free` and
    are re-proved (the old opcodes ignore it), not re-synthesised; costs equal cold."""
    pe = _edited_pe(tmp_path, "cgra_pe_add3", ADD_INPUT)
    inc, _cold = _incremental_and_cold(default_table, tmp_path, pe)
    for k in UNRELATED + ["coreir.sub", "commonlib.abs", "coreir.mul"]:
        e = inc.entry(k)
        assert e.action == "reused", e
        assert e.rule.instances[0].inputs["data2"].kind == "free"


def test_only_and_force_update_in_place(default_table, tmp_path):
    """`--only T --force` re-synthesises T; every other entry and rule file is kept."""
    table, out = default_table
    shared = tmp_path / "shared"
    shutil.copytree(out, shared)
    (entry,) = cached_tables(shared, "PE")
    before = _files(entry.parent)
    timing_before = json.loads((entry.parent / "PE.timing.json").read_text())["entries"]
    keys = ["coreir.add", "commonlib.absd"]
    t = build_table(cgra_pe.PE, shared, only=keys, force=True)
    assert [e.target for e in t.entries] == keys
    assert t.entry("coreir.add").action == "synthesised"
    assert t.entry("commonlib.absd").action == "decomposed"
    assert t.path == entry
    after = _files(entry.parent)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed <= {"PE.rules.json", "PE.timing.json"} | {
        f"PE/{rule_filename(k)}" for k in keys}
    for path in (entry, table_path(shared, "PE")):        # the entry and the view
        full = read_table(path)
        assert full.status() == {e.target: e.status for e in table.entries}
    timing = json.loads((entry.parent / "PE.timing.json").read_text())
    actions = {e["target"]: e["action"] for e in timing["entries"]}
    assert actions["coreir.add"] == "synthesised"
    # every other target keeps its timing record (how the shared cache got it: synthesised,
    # or cached by a later run that synthesised other targets)
    assert [e for e in timing["entries"] if e["target"] not in keys] == \
        [e for e in timing_before if e["target"] not in keys]
    assert len(actions) == len(table.entries)


def test_cache_is_keyed_by_spec_hash(tmp_path):
    """Two specs of the same class name (the toy PE and an edited copy) keep one entry
    each, found again by spec hash; the view is the last one built."""
    from peak.examples import toy_pe
    copy = tmp_path / "toy_pe_copy.py"
    copy.write_text(Path(toy_pe.__file__).read_text() + "\n# edited\n")
    a, b = load_spec(TOY), load_spec(f"{copy}:make_toy_pe(8)")
    assert a.__name__ == b.__name__ == "ToyPE8" and spec_hash(a) != spec_hash(b)
    out = tmp_path / "shared"
    ta = build_table(a, out, only=["coreir.add", "coreir.and"])
    tb = build_table(b, out, only=["coreir.add", "coreir.and"])
    assert {e.action for e in tb.entries} == {"reused"}
    assert ta.path != tb.path and ta.path.parent.parent == out / CACHE_DIR
    assert ta.path.parent == entry_dir(out, spec_hash(a), ta.ir_hash, 8, {"ties": "auto"})
    assert read_table(ta.path).spec_hash == spec_hash(a)
    assert read_table(tb.path).spec_hash == spec_hash(b)
    assert read_table(out).spec_hash == spec_hash(b)                  # the view
    again = build_table(a, out, only=["coreir.add", "coreir.and"])
    assert {e.action for e in again.entries} == {"cached"}
    assert read_table(out).spec_hash == spec_hash(a)


def test_concurrent_writers_keep_every_entry(tmp_path):
    """Two `cgra rules --only` on the same directory at once: the table has both sets."""
    out = tmp_path / "shared"
    sets = (["coreir.add", "coreir.and", "coreir.mul"], ["coreir.sub", "coreir.or",
                                                        "corebit.and"])
    procs = [subprocess.Popen(CGRA + ["rules", "--pe", TOY, "--out", str(out),
                                      *[a for k in keys for a in ("--only", k)]],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for keys in sets]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    want = set(sets[0]) | set(sets[1])
    for path in (*cached_tables(out, "ToyPE8"), table_path(out, "ToyPE8")):
        t = read_table(path)                  # every rule file present and parsed
        assert {e.target for e in t.entries} == want, path
        assert all((path.parent / f).is_file() for f in t.rule_files())
    assert len(cached_tables(out, "ToyPE8")) == 1


def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("jobs", [1, 2], ids=["jobs1", "jobs2"])
def test_interrupt_stops_workers_and_keeps_finished_rules(tmp_path, sig, code, jobs):
    out = tmp_path / "rules"
    p = subprocess.Popen(CGRA + ["rules", "--pe", "peak.examples.cgra_pe:PE", "--out",
                                 str(out), "--jobs", str(jobs)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while True:                     # until a few targets are in the cache entry
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline
        tables = list((out / CACHE_DIR).glob("*/PE.rules.json"))
        if tables and len(json.loads(tables[0].read_text() or "{}").get("entries", [])) >= 3:
            break
        time.sleep(0.02)
    workers = _children(p.pid)
    assert len(workers) == jobs
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 10
    assert p.returncode == code, err
    assert err.strip().splitlines() == ["aborted"]            # no traceback
    assert not any(_alive(w) for w in workers)
    t = read_table(tables[0])                                  # consistent
    assert len(t.entries) >= 3
    assert all((tables[0].parent / f).is_file() for f in t.rule_files())
    again = build_table(cgra_pe.PE, out, only=[e.target for e in t.entries])
    assert {e.action for e in again.entries} <= {"cached", "decomposed"}


def test_garnet_takes_only_a_complete_entry_from_the_cache(tmp_path):
    """An entry filled in part by `cgra rules --only` is completed by PEak, not copied."""
    from garnet.rules import provide_rules
    spec = load_spec(TOY)
    shared = tmp_path / "shared"
    part = build_table(spec, shared, only=["coreir.add"])
    calls = []

    def builder(s, d, jobs):
        calls.append(d)
        return part.path, {"coreir.add": "synthesised"}

    h = spec_hash(spec)
    r = provide_rules(spec, TOY, h, tmp_path / "d" / "rules", None, shared, builder=builder)
    assert calls == [shared] and r.source == "synthesised"
    assert (tmp_path / "d" / "rules" / "ToyPE8.rules.json").is_file()
    assert r.files[0] == "ToyPE8.rules.json" and "ToyPE8/coreir.add.json" in r.files


def test_terminate_leaves_no_pool_thread_behind():
    """After `_terminate` the pool's workers are dead and its manager thread has closed its
    wake-up pipe (else Python 3.11's exit hook can race it and print an OSError traceback
    after "aborted": seen once in CI on the SIGTERM test above)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from peak.rules.table import _terminate
    for _ in range(5):
        ex = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork"))
        futs = [ex.submit(time.sleep, 30) for _ in range(4)]
        time.sleep(0.2)
        procs = list(ex._processes.values())
        manager, wakeup = ex._executor_manager_thread, ex._executor_manager_thread_wakeup
        assert manager.is_alive() and len(procs) == 2
        _terminate(ex)
        assert not manager.is_alive()
        assert wakeup._closed
        assert not any(p.is_alive() for p in procs)
        assert all(f.cancelled() or f.done() for f in futs)
