"""The one exception type the CLI turns into a one-line message and exit status 2."""


class UserError(Exception):
    """Bad input from the user: the message names what is wrong and what is allowed."""
