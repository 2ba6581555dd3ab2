"""The one run loop: input pipeline, invoke, every clock, output checks, scoring in blocks.

May import: core, rundir, data, stats, decoders, runtime, tasks.
"""
