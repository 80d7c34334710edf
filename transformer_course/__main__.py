"""``python -m transformer_course <command>``: see :mod:`transformer_course_tools.cli`."""

import sys

from transformer_course_tools.cli import main

sys.exit(main())
