"""What the default golem loads: the RPC mode's stacks stay out of a simulated golem's
process (each costs RSS for as long as the daemon runs: web3 ~11 MB, aiohttp and
websockets ~8 MB, pylance ~85 MB of code), and the embedder runs its graph without
fastembed (~18 MB with what it pulls in: loguru, Pillow, huggingface_hub's client)."""

from __future__ import annotations

import json
import subprocess
import sys

# The modules `golem run` imports for the simulated chain, Gamma's capture, Theta's
# executor and the stores; run in a fresh interpreter (this one has imported everything).
SIMULATED_GOLEM = """
import json, sys
import golem.wiring, golem.cli
import golem.gamma.capture, golem.chain.source, golem.actions.execution
import golem.grimoire.grimoire, golem.grimoire.episodes, golem.grimoire.embedder
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""
RPC_ONLY = {"web3", "aiohttp", "websockets", "lance"}
NOT_NEEDED = {"fastembed", "loguru", "PIL", "huggingface_hub"}


def test_a_simulated_golem_loads_no_rpc_stack_no_pylance_and_no_fastembed() -> None:
    done = subprocess.run([sys.executable, "-c", SIMULATED_GOLEM], capture_output=True,
                          text=True, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    # the script did import the golem and its embedder
    assert {"golem", "lancedb", "pyrevm", "onnxruntime", "tokenizers"} <= loaded
    assert loaded & RPC_ONLY == set()
    assert loaded & NOT_NEEDED == set()


def test_the_rpc_modules_still_load_their_stacks() -> None:
    """The other side: RPC mode's modules do import them (the test above is not
    vacuous because of a renamed package)."""
    code = ("import json, sys, golem.chain.rpc, golem.chain.rpc_evm; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert {"web3", "aiohttp", "websockets"} <= loaded
