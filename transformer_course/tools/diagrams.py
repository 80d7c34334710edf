"""Drawn diagrams of the book: shapes and steps a plot cannot show (what flows where, in which shape).

Each function draws one diagram with matplotlib and returns its figure; the chapter shows it and
gives its alt text. The diagrams are drawn, not computed: they take no model and train nothing.
"""

from __future__ import annotations

# -- chapters 01–05 ------------------------------------------------------------------------------


# -- chapters 06, 07, 09 -------------------------------------------------------------------------


# -- chapters 08, 10, 11 -------------------------------------------------------------------------
