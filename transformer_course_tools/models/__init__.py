"""The models the course ships (with their hashes), the Hugging Face Hub, whole training runs, text sources."""
