"""The `cs>` shell on a real pty, as a person sees it: completion, events from other clients above
the prompt without breaking the line being typed, the live toolbar, Ctrl-C and Ctrl-D."""


def test_tab_completes_command_words(term):
    # (`sys` is unique now that the inventory's list is `inventory`, not `systems`: a unique word
    # gets its trailing space too: test_completer.py.)
    term.send("sys\t")
    term.wait_for(lambda t: t.prompt_line() == "cs> system", what="`sys` completed to `system `")
    term.send("sh\t")
    term.wait_for(lambda t: t.prompt_line() == "cs> system show", what="`system sh` completed")
    term.send("\r")
    term.wait_text("systemHealth   : OK")


def test_event_from_another_client_appears_above_a_half_typed_line(term, csd):
    term.send("config execmode sh")
    term.wait_for(lambda t: t.prompt_line() == "cs> config execmode sh", what="partial line")
    with csd.client() as other:
        other.system_standby()
    term.wait_text("EventStandbyIssued")
    term.wait_text("EventStandbyCompleted")
    screen = term.lines()
    issued = next(i for i, line in enumerate(screen) if "EventStandbyIssued" in line)
    prompt = max(i for i, line in enumerate(screen) if line.startswith("cs>"))
    assert issued < prompt, "the event is printed above the prompt"
    assert term.prompt_line() == "cs> config execmode sh", "the half-typed line is intact"
    term.send("ow\r")
    term.wait_text("Configured Execution Mode : PIPELINED")


def test_toolbar_follows_another_clients_standby(term, csd):
    assert "ACTIVE" in term.toolbar() and "systemHealth OK" in term.toolbar()
    with csd.client() as other:
        other.system_standby()
        other.wait_for(state="STANDBY", timeout=10)
    term.wait_for(lambda t: "│ STANDBY │" in t.toolbar() and "systemHealth STANDBY" in t.toolbar(),
                  what="toolbar showing STANDBY")


def test_own_commands_are_not_echoed_as_foreign_events(term):
    term.send("system standby --no-confirm\r")
    term.wait_text("System is in STANDBY.")
    term.send("system show\r")
    term.wait_text("systemHealth   : STANDBY")
    assert "EventStandbyIssued" not in term.text()


def test_ctrl_c_clears_the_line_and_ctrl_d_exits_zero(term):
    term.send("system standby")
    term.wait_for(lambda t: t.prompt_line() == "cs> system standby", what="typed line")
    term.send("\x03")
    term.wait_for(lambda t: t.prompt_line() == "cs>", what="line cleared by Ctrl-C")
    assert term.child.isalive()
    assert term.close() == 0


def test_lost_daemon_shows_in_toolbar_and_shell_reconnects(term, csd):
    csd.kill9()
    term.wait_for(lambda t: "unreachable" in t.toolbar(), what="toolbar showing the lost daemon")
    csd.start()
    term.wait_for(lambda t: "ACTIVE" in t.toolbar() and "unreachable" not in t.toolbar(), what="reconnected toolbar")
    term.send("system show\r")
    term.wait_text("systemHealth   : OK")


def test_toolbar_and_event_lines_follow_an_injected_fault_and_the_fault_name_completes(term, csd):
    with csd.client() as c:
        c.fault_inject("temperature-high-warn")
        term.wait_for(lambda t: "systemHealth DEGRADED (1 fault)" in t.toolbar(), what="DEGRADED in the toolbar")
        term.wait_text("EventSensorTemperatureHighWarn (injected)")
        c.fault_clear(all=True)
    term.wait_for(lambda t: "systemHealth OK" in t.toolbar() and "fault" not in t.toolbar(), what="OK again")
    term.send("system fault inject psu-h\t")
    term.wait_for(lambda t: t.prompt_line() == "cs> system fault inject psu-hardware-error",
                  what="the fault name completed from csd's catalogue")
