"""What a chapter imports: its set-up, figures, diagrams, plots, claims checked with margins, experiments."""
