"""Pure ranking maths: fusion, priors (freshness, authority, pins), metrics, simhash.

No I/O here: no database, no files, no model. Inputs are arrays and plain values.
"""
