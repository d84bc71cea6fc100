"""The judge: a clean interpreter that decides hidden tests' verdicts from the plain data their probes
hand over (`python -m autograder.judge`, one warm process per grading process: grading/judging.py).

It never imports or runs anything a student wrote: it reads the probe's data with runner.plain (JSON and
raw tensor bytes), rebuilds the test's inputs from their seeds, computes the references itself and
compares. Like the runner, it is a program of the standard library, torch and numpy, and of the runner's
`plain` and `protocol` modules (the format and the messages, defined once)."""
