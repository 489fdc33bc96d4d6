"""Chain access: EVM adapters, RPC, the reader, follower and reorg window, and the
simulated market."""
