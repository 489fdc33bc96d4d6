"""The Context Governor: what enters Theta's context window, and how that is learnt."""
