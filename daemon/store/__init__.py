"""The state store: one SQLite database (WAL, synchronous=FULL) in the state directory, the log
of record of what csd acknowledged, and the checks that refuse a database that is not the one
csd was using, or is damaged.

    store.py         the Store: open, commit a change, read events, runs, replies and audit
    checked_reads.py every row read checked against its checksum; damage refused
    schema.py        the tables, and bringing an older csd's store up to date
    rows.py          every row's checksum, checked whenever it is read
    identity.py      csd.identity: which database this is, how far it got, a clean stop
    progress.py      csd.progress: the newest acknowledged commit, written per commit
    provenance.py    the refusals at open: empty, replaced or behind database
    wal.py           the write-ahead log, checked before SQLite opens it
    damage.py        one message for a damaged store, never SQLite's words
    trim.py          keeping events, replies and audit records at their limits, in bounded steps
    event_filter.py  an events query's filter in SQL (pure)

It imports only the shared leaves and the model's Event record:
nothing of serving, keys or metrics (tests/test_layers.py).
"""
