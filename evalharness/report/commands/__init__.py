"""The report commands: what ``evalharness report SUBCOMMAND`` runs (diff, sweep, rescore,
merge, export, index, analysis), the ``--fail-if`` gates and the Hydra callbacks that write a
sweep's report when a multirun ends. Each reads run directories and asks the task definitions;
what a result looks like is :mod:`evalharness.report.views`'."""
