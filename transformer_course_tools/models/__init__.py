"""models: see transformer_course_tools/__init__.py."""
