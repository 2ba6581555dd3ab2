"""Detector output decoders: raw output tensors -> boxes normalised to the model input. The
contract and registry are in :mod:`evalharness.decoders.base`; one module per decoder family.

May import: core, rundir, data, stats.
"""
