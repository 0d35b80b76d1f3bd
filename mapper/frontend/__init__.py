"""Front ends: the embedded DSL (:mod:`mapper.frontend.dsl`) and the CoreIR JSON importer
(:mod:`mapper.frontend.coreir`)."""
