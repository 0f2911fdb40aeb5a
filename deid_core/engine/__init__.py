"""Detect: find PHI spans in a note.

Tokenizer, features, gazetteers, regex rules and validators, the token and
character CRFs and their decoder, the merge of rule and CRF spans, TBED
transformations (applied here, learned in ``learning``), post-filters, and
the model directory that bundles them. Pure functions over text and spans.

May import only the shared ground (``deid_core.errors``, ``spans``,
``schemes``, ``corpus``). Everything else sits above it.
"""
