"""The layering rule as a whitelist: an import-linter contract type.

CONVENTIONS.md: the mapper reads collateral only and never imports the hardware generators.
A *forbidden* list has to be edited each time a generator module is added; this contract
says instead what the source packages MAY depend on, so a new module is outside the rule
until someone decides it belongs to the collateral side.

Contract options (``[[tool.importlinter.contracts]]`` in pyproject.toml, ``type =
"allowed_imports"``):

* ``source_modules``: packages under the rule (``mapper``);
* ``allowed_modules``: module expressions (``peak.collateral``, ``cgra.*``, ``peak.ir.**``)
  the source packages may depend on, directly or through each other (every module of a
  project root package they reach, transitively, must match one);
* ``forbidden_external``: external packages that must not be reached at all (``magma``,
  ``fault``).

A broken contract lists each module outside the whitelist with the shortest import chain
that reaches it. Registered in pyproject.toml with ``contract_types``; run by ``make lint``
(``lint-imports``) and by tests/cgra/test_layering.py.
"""
from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.helpers import module_expressions_to_modules


class AllowedImportsContract(Contract):
    """Every project module the source packages reach must be whitelisted (module
    docstring)."""

    type_name = "allowed_imports"

    source_modules = fields.SetField(subfield=fields.ModuleField())
    allowed_modules = fields.SetField(subfield=fields.ModuleExpressionField())
    forbidden_external = fields.SetField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose: bool) -> ContractCheck:
        roots = {str(r) for r in self.session_options["root_packages"]}
        sources = {m.name for m in self.source_modules}  # type: ignore[attr-defined]
        allowed = {m.name for m in module_expressions_to_modules(
            graph, self.allowed_modules)}  # type: ignore[arg-type]
        forbidden_ext = set(self.forbidden_external or ())  # type: ignore[arg-type]

        def inside(module: str, packages: set[str]) -> bool:
            return any(module == p or module.startswith(p + ".") for p in packages)

        violations = []
        for src in sorted(sources):
            for mod in sorted(graph.find_upstream_modules(src, as_package=True)):
                top = mod.split(".")[0]
                if inside(mod, sources):
                    continue
                bad = (top in roots and mod not in allowed) or top in forbidden_ext
                if not bad:
                    continue
                chain = None
                for importer in sorted({src, *graph.find_descendants(src)}):
                    c = graph.find_shortest_chain(importer=importer, imported=mod)
                    if c is not None and (chain is None or len(c) < len(chain)):
                        chain = c
                violations.append({"source": src, "module": mod, "chain": list(chain or ())})
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for v in check.metadata["violations"]:
            what = ("a forbidden external package" if "." not in v["module"]
                    and v["module"] in (self.forbidden_external or ())
                    else "not in allowed_modules")
            output.print_error(f"{v['source']} reaches {v['module']} ({what}):", bold=True)
            output.new_line()
            output.indent_cursor()
            output.print_error(" -> ".join(v["chain"]))
            output.new_line()
