"""The one exception type the CLI turns into a one-line message and exit status 2, and the readers
that turn a bad input file into one (which file, what kind of problem, what is expected)."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path


class UserError(Exception):
    """Bad input from the user: the message names what is wrong and what is allowed."""


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of a file the user named ('device file', 'calibration file', ...), or UserError."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{what} {p} is a folder, not a file")
    if not p.exists():
        raise UserError(f"{what} {p} does not exist")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise UserError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise UserError(f"{what} {p} is not a text file (expected UTF-8 text)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} {p} is not UTF-8 text (byte {exc.start}); expected UTF-8 text") from None


def read_toml(path: str | Path, what: str) -> dict:
    """A TOML file as a dict, or UserError naming the file and the line."""
    try:
        return tomllib.loads(read_text(path, what))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{what} {path} is not valid TOML: {exc}") from None


def read_json(path: str | Path, what: str):
    """A JSON file, or UserError naming the file and where it breaks."""
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise UserError(f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None


def validation_message(err) -> str:
    """The first problem of a pydantic ValidationError in one line: 'field.path: message (and N more)'."""
    e = err.errors()[0]
    loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"{loc}: {e['msg']}{more}"
