"""The course's tools: what checks, grades and builds the course (learners never need to open these)."""
