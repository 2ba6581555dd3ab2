"""The core every room stands on: errors, the one registry style and discovery path, settings
schemas, the typed documents, the file guard and the one reader of untrusted files, the one
read-or-rebuild rule of derived state, the interrupt policy of the process tree, checksums, number
formatting, tables, the Markdown renderer, escaping for each medium and the error boundary of every
entry point.

May import: nothing else of evalharness.
"""
