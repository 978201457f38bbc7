"""Several CS-2 systems at once, each through its own csd (one csd per system; no layer of our
own between them): the inventory's systems queried together (query.py), their events merged
(events.py), and a change rolled across them (rolling.py). Above the client, below the console."""
