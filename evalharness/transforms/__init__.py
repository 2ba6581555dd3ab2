"""Model transforms: a source model and typed settings in, a variant file, its provenance and its
cache key out (the contract and the registry of kinds: ``variant``). Quantization with every
``quant=`` recipe, integer inputs and its calibration (``quantized``, ``calibration``, the ``auto``
choice in ``calibration_choice``), pruning and clustering (``weight_variants``), the accuracy repair
(``repair``, scoring candidates with ``repair_eval``) and the layer search (``weight_search``);
``plan`` runs the one a plan asks for. The vendor calls and the flatbuffer-level edits stay in
``runtime/`` (``quantize``, ``weight_edit``, ``weights``); what decides, searches, caches and records
is here. ``run/`` enters through ``plan`` and ``variant`` only.

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report, settings.
"""
