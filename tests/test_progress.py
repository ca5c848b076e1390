"""Progress lines: rewritten in place on a terminal, a few whole lines in a log."""
import io
import subprocess
import sys
import tomllib
from pathlib import Path

from perfmodel.progress import counter


def test_a_log_gets_the_first_every_tenth_and_the_last_count():
    out = io.StringIO()
    p = counter("compiled {j}/{n} kernels", stream=out, tty=False)
    for j in range(1, 66):
        p(j, 65)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0].startswith("  compiled 1/65 kernels (") and lines[-1].startswith("  compiled 65/65 kernels (")
    # the first count, one line a tenth of the work (7, 13, 20, ..., 59) and the last
    assert [int(x.split()[1].split("/")[0]) for x in lines] == [1, 7, 13, 20, 26, 33, 39, 46, 52, 59, 65]


def test_a_terminal_gets_one_line_rewritten_and_a_newline_at_the_end():
    out = io.StringIO()
    p = counter("scored {j}/{n} runs", stream=out, tty=True)
    for j in range(1, 4):
        p(j, 3)
    text = out.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and text.endswith("runs (0 s)\n")


def test_disabled_writes_nothing():
    out = io.StringIO()
    p = counter("scored {j}/{n} runs", stream=out, enabled=False, tty=False)
    p(1, 1)
    assert out.getvalue() == ""


def test_a_piped_command_logs_whole_lines():
    # `perfmodel accuracy --published` with stderr to a pipe: its progress arrives as whole lines
    r = subprocess.run([sys.executable, "-m", "perfmodel", "accuracy", "--published"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if "predicted" in x]
    assert "\r" not in r.stderr and 2 <= len(lines) <= 12, r.stderr
    n = len(tomllib.loads((Path(__file__).resolve().parent.parent / "published" / "sgemm.toml").read_text())["point"])
    assert lines[-1].startswith(f"  predicted {n}/{n} points")
