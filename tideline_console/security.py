"""Who may use the console: Host/Origin checks, logins kept as server-side sessions, and a CSRF token per session."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tideline_core.settings import Settings, is_loopback

COOKIE = "tideline_console"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000  # each login holds a few hundred bytes; a flood of logins cannot grow the process without end
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


@dataclass(frozen=True)
class Login:
    """A session: the agents it may see (None: every agent), its CSRF token and when it lapses."""

    agents: frozenset[str] | None
    csrf: str
    expires: float
    who: str = "local user"

    def may_see(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents


@dataclass
class Gate:
    """The console's rules for one process: whether a login is needed, what logs in, and the sessions it gave out."""

    host: str
    tokens: Mapping[str, str] = field(default_factory=dict)
    password: str | None = None
    _sessions: dict[str, Login] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_settings(cls, settings: Settings) -> Gate:
        settings.check_console_login()
        tokens = settings.http_token_map()
        return cls(host=settings.console_host, tokens=tokens, password=settings.console_password)

    @property
    def login_required(self) -> bool:
        return bool(self.tokens or self.password)

    # --- requests ---------------------------------------------------------------------------

    def host_refused(self, host_header: str) -> str | None:
        """Why a request's Host is refused (DNS rebinding: a page on another name reaching a loopback console)."""
        if not is_loopback(self.host):
            return None
        name = _host_name(host_header)
        if name in LOOPBACK_NAMES or name == self.host:
            return None
        return f"Host {host_header!r} is not this console's (it serves loopback names only)"

    def origin_refused(self, origin: str | None, host_header: str, method: str) -> str | None:
        """Why a request from another page is refused: a change must come from the console's own pages."""
        if origin is None:
            # Browsers send Origin on every cross-site POST; a request without one is not a page's.
            return None
        if origin == "null":
            return "a change from an opaque origin is refused" if method != "GET" else None
        parts = urlsplit(origin)
        if parts.netloc.lower() == host_header.lower():
            return None
        if (
            is_loopback(self.host)
            and _host_name(parts.netloc) in LOOPBACK_NAMES
            and _host_name(host_header) in (LOOPBACK_NAMES)
        ):
            return None
        return None if method in ("GET", "HEAD") else f"Origin {origin!r} is not this console"

    # --- sessions --------------------------------------------------------------------------------

    def session(self, cookie: str | None) -> Login | None:
        if not cookie:
            return None
        with self._lock:
            login = self._sessions.get(cookie)
            if login is not None and login.expires < time.time():
                del self._sessions[cookie]
                return None
            return login

    def open_local(self) -> tuple[str, Login]:
        """A session for the local user where no login is asked: it sees every agent and carries a CSRF token."""
        return self._open(Login(agents=None, csrf=secrets.token_urlsafe(24), expires=time.time() + SESSION_SECONDS))

    def log_in(self, secret: str) -> tuple[str, Login] | None:
        """A session for a token (its agent only) or the password (every agent); None for anything else."""
        presented = secret.strip().encode()
        agent: str | None = None
        for token, owner in self.tokens.items():
            if hmac.compare_digest(presented, token.encode()):
                agent = owner
        everyone = self.password is not None and hmac.compare_digest(presented, self.password.encode())
        if agent is None and not everyone:
            return None
        agents = None if everyone else frozenset({agent}) if agent else None
        who = "password" if everyone else f"token of agent {agent}"
        expires = time.time() + SESSION_SECONDS
        return self._open(Login(agents=agents, csrf=secrets.token_urlsafe(24), expires=expires, who=who))

    def log_out(self, cookie: str | None) -> None:
        with self._lock:
            self._sessions.pop(cookie or "", None)

    def _open(self, login: Login) -> tuple[str, Login]:
        sid = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                for key in [k for k, v in self._sessions.items() if v.expires < now] or [next(iter(self._sessions))]:
                    del self._sessions[key]
            self._sessions[sid] = login
        return sid, login


def csrf_matches(login: Login, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(login.csrf.encode(), presented.encode())


def _host_name(host_header: str) -> str:
    """The name of a Host header or an origin's netloc, without its port."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value.split("]")[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value
