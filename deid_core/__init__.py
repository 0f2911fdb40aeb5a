"""deid-workbench core library: everything the app, CLI and benchmarks share."""

from deid_core.spans import Document, Span

__all__ = ["Document", "Span"]
__version__ = "0.1.0"
