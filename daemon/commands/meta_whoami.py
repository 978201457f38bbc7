"""meta.whoami — who the daemon takes the caller to be.

args: none.
result: {name (the key name), role (admin, operator or viewer)}
"""

NAME = "meta.whoami"
MUTATING = False
ROLE = "viewer"  # the least role allowed (admin > operator > viewer)
ARGS = {}


def execute(ctx, args, caller):
    return {"name": caller.name, "role": caller.role}
