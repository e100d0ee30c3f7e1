"""Thin command-line stages: flags -> read artifacts -> call the algorithm -> atomic writes.

Run as ``python -m dpiw.stages.<name> --help``. Each ``main(argv)`` can be called in-process (tests).
"""
