"""Parameter names in messages: Python's spelling, or the command line's where it runs.

A message that advises a parameter names it through :func:`spelled`, so that the same error
raised under ``pkex-select`` says ``--value-function baseline`` where Python says
``value_function='baseline'``, and no one rewrites messages after they are raised.
"""

from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["command_line", "settable", "spelled"]

# Parameter name -> (flag, {Python value: the flag's value}) while the command line runs.
_FLAGS = ContextVar("pkex_select_flags", default=None)


def spelled(name, value=None):
    """``name`` (or ``name=value``) as the caller writes it: a Python keyword, or a flag."""
    flags = _FLAGS.get()
    if flags is None or name not in flags:
        return name if value is None else f"{name}={value!r}"
    flag, values = flags[name]
    return flag if value is None else f"{flag} {values.get(value, value)}"


def settable(name):
    """Whether the caller can set ``name``: always in Python; on the command line, when it
    has a flag (advice to change ``block_size`` means nothing to ``pkex-select``)."""
    flags = _FLAGS.get()
    return flags is None or name in flags


@contextmanager
def command_line(flags):
    """Spell the parameters in ``flags`` as the command line's flags inside the block."""
    token = _FLAGS.set(flags)
    try:
        yield
    finally:
        _FLAGS.reset(token)
