"""Android phones over adb (``runner=adb``): TFLite's ``benchmark_model`` runs the model on the device.

``benchmark_model`` maps our delegate config to its registrar flags and parses its log;
``adb`` wraps the adb client; ``runner`` is the model object the run loop drives in batches.
"""
