"""A logger that records what csd's parts log, for the unit tests of one part (no structlog)."""


class Log:
    """Records (level, event, fields) for every line logged."""

    def __init__(self):
        self.lines = []

    def __getattr__(self, level):
        return lambda event, **fields: self.lines.append((level, event, fields))
