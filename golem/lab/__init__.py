"""The lab: seeded ablation experiments over whole golem lives (docs/lab/README.md).

Arms are configuration overlays (``arms/``), a design pairs every arm with every market
seed (``design``), each life runs as its own ``golem run`` process (``runner``), its
measures are read from its data dir (``measures``), and the report gives paired effects
with bootstrap intervals and Wilcoxon tests (``effects``, ``report``).
"""
