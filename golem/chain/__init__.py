"""Chain access: the simulated market's contracts, their artifacts and decoders."""
