"""The shared leaves: what every layer may import — csd, the model, the client, the console,
the launchers and cstorch. Stdlib only, pure (no sockets; files only where named), and they
import nothing of ours but each other and csadmin/errors.py.

    states.py           the vocabulary: lifecycle states, execution modes, health, severity
    protocol.py         the wire format: frames, replies, events
    ops.py              every op declared once (its arguments from opargs.py)
    opargs.py           an op's arguments as data, and their validation
    programs.py         a run's mode and a program's descriptor, checked
    connection.py       where csd listens, and its connection file
    keyfile.py          CURVE key files (read without zmq.auth)
    atomic_write.py     replacing a file whole and durably: every file csadmin writes
    scenario_limits.py  how large and deep a fault scenario may be (checked before parsing)
    scenario_file.py    the bounded read of a scenario file (csd and `cs` alike)
    rendezvous.py       where a csrun_wse job's training process and input workers meet
    pipes.py            stopping quietly when the reader of our output goes away

csadmin/errors.py is a leaf too, kept beside csadmin/client.py because runtimes import it by
that name. The model imports only errors, states, scenario_limits, programs and opargs of these
(tests/test_layers.py).
"""
