"""Key bindings of the `cs>` prompt."""

from prompt_toolkit.key_binding import KeyBindings


def shell_key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("c-c")
    def _clear_line(event):
        """Ctrl-C clears the line being typed (and stays in the shell), like bash."""
        event.app.current_buffer.reset()

    return kb
