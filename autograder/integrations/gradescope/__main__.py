"""`python -m autograder.integrations.gradescope run|check`: what setup.sh and run_autograder call in the container."""

import sys

from autograder.integrations.gradescope.container import main

sys.exit(main())
