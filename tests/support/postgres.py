"""A throw-away PostgreSQL server for the tests: Debian's `postgresql` package, run as an
unprivileged user in a temporary data dir, reachable only through a Unix socket in that dir.

`.ci/run` installs the package; on a machine without it the tests that need a server fail with
how to install it (they are not skipped: the PostgreSQL gradebook is a feature, not an option).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def _binary(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or ""]
    if not found[-1]:
        raise RuntimeError(
            f"PostgreSQL's {name} was not found: install the server (apt-get install postgresql), as .ci/run does"
        )
    return found[-1]  # the newest version installed


class Server:
    """Start with `Server()`, stop with `.stop()`; `.url(database)` creates a database and names it."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="autograder-pg-"))
        self.data = self.root / "data"
        prefix: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            name = "postgres" if _user_exists("postgres") else "nobody"
            entry = pwd.getpwnam(name)
            os.chmod(self.root, 0o755)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
        self.prefix = prefix
        self._run(_binary("initdb"), "-D", str(self.data), "-U", "grader", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-k {self.root} -c listen_addresses='' -p 5432 -F"
        self._run(_binary("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def _run(self, *cmd: str) -> None:
        proc = subprocess.run([*self.prefix, *cmd], capture_output=True, text=True, timeout=120, cwd=self.root)
        if proc.returncode:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stdout}{proc.stderr}{log}")

    def url(self, database: str | None = None) -> str:
        """A new, empty database on this server, as the SQLAlchemy URL `grade --db` takes."""
        import psycopg2

        database = database or f"gradebook_{uuid.uuid4().hex[:8]}"
        connection = psycopg2.connect(host=str(self.root), user="grader", dbname="postgres")
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'create database "{database}"')
        connection.close()
        return f"postgresql+psycopg2://grader@/{database}?host={self.root}"

    def stop(self) -> None:
        try:
            self._run(_binary("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
