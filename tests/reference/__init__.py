"""Independent references, gathered in one place.

Each module re-derives formulas from the papers (and, where the authors released code, from a
transcription of their formula) in plain float64 loops or NumPy, deliberately sharing no code
with ``hardneg``. Tests compare the library against these.
"""
