"""Example PE specs: the PEak paper toy PE and the default CGRA PE."""
