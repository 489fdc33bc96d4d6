"""Mortality: vitality and phases, acting on chain, Thanatopsis, testament, succession."""
