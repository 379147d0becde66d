"""Log records scrubbed before a handler writes them: what signaldesk logs is scrubbed.

A secret can reach a log line by many roads: a feed URL with a token in an error, a
title at debug level, a client-supplied path, a traceback's exception message. One
filter on the handler catches them all, whoever logged them.
"""

from __future__ import annotations

import logging

__all__ = ["ScrubbingFilter"]

_TRACEBACKS = logging.Formatter()


class ScrubbingFilter(logging.Filter):
    """Replaces each record's message (and its traceback text) with a scrubbed copy."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Imported here: the CLI installs the filter before it knows whether anything
        # will be logged, and the rules take a moment to compile.
        from signaldesk.retrieval.scrubber import scrub_text

        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let the handler report it as usual
            return True
        # The formatted message replaces msg and args: the arguments are where values are.
        record.msg, record.args = scrub_text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_text(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub_text(record.stack_info)
        return True
