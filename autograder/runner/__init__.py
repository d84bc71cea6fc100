"""The runner: the grader's kernel, a program that runs inside the sandbox (see __main__.py).

The grader imports only `autograder.runner.protocol` from this folder."""
