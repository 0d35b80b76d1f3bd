"""The dataflow compiler (SARA): nested-loop programs lowered to virtual units (VUs), which are
split and merged to fit the physical units (PUs) of the array (Zhang et al., ISCA 2021)."""
