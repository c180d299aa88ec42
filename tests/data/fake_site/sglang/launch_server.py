"""`python -m sglang.launch_server ARGS` for tests: the process looks like a real launch
(its /proc/PID/cmdline holds the real flags) and runs envguard's stand-in server tree.
It runs $STANDIN_SCHEDULERS schedulers (2 by default) and serves HTTP on --port only when
$STANDIN_HTTP is set (the tuned profile's port 8000 may be taken);
/server_info then answers $STANDIN_SERVER_INFO."""

import os
import sys

from envguard.testing.standin import main

if __name__ == "__main__":  # spawned workers import this module again
    argv = sys.argv[1:]
    standin = ["--schedulers", os.environ.get("STANDIN_SCHEDULERS", "2")]
    if "--port" in argv and os.environ.get("STANDIN_HTTP"):
        standin += ["--port", argv[argv.index("--port") + 1]]
    if os.environ.get("STANDIN_SERVER_INFO"):
        standin += ["--server-info", os.environ["STANDIN_SERVER_INFO"]]
    main(standin)
