"""Mortality: vitality and phases, acting on chain, the Thanatopsis death protocol, testament and succession."""
