"""``python -m transformer_course <command>``: see :mod:`transformer_course.cli`."""

import sys

from .cli import main

sys.exit(main())
