"""Statistics with no runtime and no task behind them: intervals, paired tests, box matching, decoded
comparisons, latency summaries and speed-up intervals, COCO official stats, bootstrap and the TFLite
tool's AP. Task definitions and reports call these.

May import: core, rundir, data.
"""
