"""The `envguard` console script and `python -m envguard`.

Kept tiny and handled first, before click and the commands are imported: a Ctrl-C in the
first ~100 ms (while imports run) exits 130 quietly, as a shell reports it, instead of
printing a KeyboardInterrupt traceback; and a reader that closed the pipe (`envguard check
| head -1`) does not turn into a traceback or exit 120 when Python flushes at exit
(https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        if sys.argv[1:2] == ["check"]:
            # The cron line, read without click where it can be (commands/check_argv.py).
            from envguard.commands.check_argv import main as check_main

            code = check_main(sys.argv[2:])
            if code is not None:
                _flush_or_drop()
                # The answer is out, so skip the interpreter's teardown: freeing every
                # module and object is ~10 ms of the cron line's ~95 here. A check leaves
                # nothing to finish: no file open for writing, no atexit handler, and
                # NVML's reader already reaped (checking.GpuCheck.close).
                os._exit(code)
        from envguard.cli import cli

        cli(prog_name="envguard")
    except KeyboardInterrupt:
        sys.exit(130)  # nothing was started: a started server's signals are handled by launch
    finally:
        _flush_or_drop()


def _flush_or_drop() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            # Nobody reads any more: send whatever is left nowhere, so the flush at exit
            # does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)


if __name__ == "__main__":
    main()
