"""Android phones over adb (``runner=adb``): TFLite's ``benchmark_model`` runs the model on the device.

``runner`` is the ``adb`` runner (its settings and delegate plans); ``benchmark_model`` maps
our delegate config to its registrar flags and parses its log; ``adb`` wraps the adb client;
``backend`` is the ``adb`` backend, the model object the run loop drives in batches.
"""
