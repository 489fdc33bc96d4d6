"""Gamma: the capture stage (chain logs and reverts in, faithful episodes out)
and its hand-off to Theta."""
