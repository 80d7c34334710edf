"""Making the course: ``make exercises`` (build), the links, notebook pairs, readability. Not in the student edition."""
