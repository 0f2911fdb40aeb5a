"""Protect: turn detected spans into a de-identified corpus, and export it.

Operators (surrogates, tags, redaction), date shifting, the surrogate mapping
(its logic here; its database table belongs to ``deid_core.store``), the leak
check, single-process and Dask de-identification, and the reviewed-corpus
export.

May import ``deid_core.engine``, ``store``, ``formats``, ``evaluation``,
``synthetic`` and the shared ground; never ``learning``, ``ui`` or ``cli``.
"""
