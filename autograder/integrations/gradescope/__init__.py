"""Gradescope: the autograder zip of one notebook, and what runs in Gradescope's container for each submission.

    autograder gradescope 02_dot_product_attention --out autograder.zip     # upload it to the assignment

Gradescope's autograder specification (gradescope-autograders.readthedocs.io, "Autograder Specifications";
docs/specs.md of github.com/gradescope/autograder_samples): the zip holds `setup.sh` and `run_autograder` at its
root. Gradescope unpacks it into /autograder/source and runs setup.sh once, as root, when it builds the image
(Ubuntu); for each submission it puts the student's files in /autograder/submission and runs
/autograder/run_autograder (a copy of ours) as root in /autograder; what the student gets is
/autograder/results/results.json (score, and one test per graded cell), what run_autograder prints goes to the
instructor only (/autograder/results/stdout).

Two sides of one contract, which meet only in gradescope.json (`settings`, the record both read):
- `package`: on the instructor's machine, the zip (setup.sh, run_autograder, requirements.txt, the grader's code,
  the notebook's tests);
- `container`: in Gradescope's container, setup.sh's checks and run_autograder's grading of one submission into
  results.json. The scripts call it as `python -m autograder.integrations.gradescope` (`__main__`).
docs/grading.md's "Using it with ... Gradescope" says what holds in each case.
"""

from autograder.integrations.gradescope.package import build_zip
from autograder.integrations.gradescope.settings import Settings, gradescope_limits

__all__ = ["Settings", "build_zip", "gradescope_limits"]
