"""The one run loop: input pipeline, invoke, every clock, output checks, scoring in blocks."""
