"""Front ends: the embedded DSL (:mod:`mapper.frontend.dsl`), the CoreIR JSON importer
(:mod:`mapper.frontend.coreir`), the tensor programs of DNN layers
(:mod:`mapper.frontend.tensor`) and the BFloat16 decompositions the DSL lowers to
(:mod:`mapper.frontend.float_math`)."""
