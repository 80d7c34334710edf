"""``python -m transformer_course <command>``: see :mod:`transformer_course.tools.cli`."""

import sys

from .tools.cli import main

sys.exit(main())
