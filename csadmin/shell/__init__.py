"""The interactive `cs>` shell (prompt_toolkit), one small module per concern."""
