"""The models the course ships (with their hashes), the Hugging Face Hub, whole training runs, text sources."""

SENTENCE_TASKS = ("sentences-en-de",)  # the generated tasks of chapter 12 (here: the command line's help reads it
# without importing a room)
