"""The injected clock of the model tests: milliseconds, advanced by hand."""

START_MS = 1_700_000_000_000


class FakeClock:
    def __init__(self, now: int = START_MS):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def tick(self, ms: int) -> None:
        self.now += ms
