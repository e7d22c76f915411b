"""GPU and host memory of a verl run, per GPU and per phase.

``terms`` has every term of the estimate and the constants it uses, each with its source; ``config`` reads
the keys the estimate needs; ``estimate`` adds the terms per GPU and phase; ``host`` sizes host RAM per node;
``fixes`` ranks the cheapest changes that bring a peak down; ``report`` is the one call for ``plan`` and the
GUI (compose, place, estimate); ``board`` is what the placement board shows of a plan (the placement, each
GPU's estimate, the ok / tight / OOM verdict and the headline).
"""
