"""Learn: the active-learning loop around the model.

Query strategies (modAL), the model registry and its retrain policy,
self-training, TBED rule learning (paper 003), and the simulation that replays the loop on a labelled pool.

May import ``deid_core.engine``, ``store``, ``formats``, ``evaluation``,
``synthetic`` and the shared ground; never ``protect``, ``ui`` or ``cli``.
"""
