"""A TFLite external delegate built from C by the tests (see build.py and test_delegate.c)."""
