"""Measurement: compile the real kernels, run, verify, time (pycuda is imported lazily)."""
