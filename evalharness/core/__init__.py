"""The core every room stands on: errors, the one registry style, settings schemas, the file guard,
checksums, number formatting, tables and the error boundary of every entry point.

May import: nothing else of evalharness.
"""
