"""Learners' mistakes written by two testers who had not seen the checks' tables (issue 30's measure of
unseen mistakes), kept as tests once measured: each must be caught with more than which values differ,
each correct alternative must pass. Left out of the student edition (the mistakes are close to the
solutions)."""
