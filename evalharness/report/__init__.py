"""Reading and writing run outputs. Never imports the runtime, so reports work on any laptop.

May import: core, rundir, data, stats, decoders, tasks. Never ``runtime/`` or a live half, directly
or through another module."""
