"""Delta: consolidation, the curator cycle, dreaming and the working-memory rewrite."""
