"""Acting on chain: proposals, the policy cage, wallet, signer, plans, positions and execution."""
