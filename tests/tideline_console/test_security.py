"""Who may see and change what through the console: loopback without login, credentials elsewhere, CSRF, Host."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from console_helpers import AGENT, LOOPBACK, csrf_of
from starlette.testclient import TestClient

from tideline_core.domain.inputs import NarrativeIn
from tideline_core.errors import ConfigurationError
from tideline_core.service import Service

Make = Callable[..., tuple[Service, TestClient]]
PASSWORD = "correct horse battery staple"


def amendments(service: Service, agent: str, narrative_id: int) -> tuple[str, ...]:
    return service.memories_by_id(agent, [narrative_id])[narrative_id].amendments


def test_off_loopback_without_a_password_or_tokens_the_console_refuses_to_start(console_for: Make) -> None:
    with pytest.raises(ConfigurationError, match="without a login"):
        console_for(console_host="0.0.0.0")


def test_off_loopback_a_page_asks_for_a_login_and_a_change_without_one_is_refused(console_for: Make) -> None:
    service, client = console_for("http://tideline.example:8766", console_host="0.0.0.0", console_password=PASSWORD)
    memory = service.write_narrative(AGENT, NarrativeIn(gesture="周四晚上去游泳")).id
    asked = client.get("/memories")
    assert asked.status_code == 303 and asked.headers["location"].startswith("/login")
    assert "周四" not in asked.text
    refused = client.post(f"/memories/{memory}/amend", data={"note": "sneaked in", "agent": AGENT})
    assert refused.status_code == 401
    wrong = client.post("/login", data={"secret": "not the password", "next": "/memories"})
    assert wrong.status_code == 401
    logged_in = client.post("/login", data={"secret": PASSWORD, "next": "/memories"})
    assert logged_in.status_code == 303
    cookie = logged_in.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert "周四晚上去游泳" in client.get("/memories").text
    assert amendments(service, AGENT, memory) == ()


def test_a_tokens_login_sees_its_agent_only(console_for: Make) -> None:
    service, client = console_for(
        "http://tideline.example:8766", console_host="0.0.0.0", http_tokens="token-of-alice-0123:alice"
    )
    mine = service.write_narrative("alice", NarrativeIn(gesture="Alice note")).id
    theirs = service.write_narrative("bob", NarrativeIn(gesture="Bob secret")).id
    assert client.post("/login", data={"secret": "token-of-alice-0123", "next": "/memories"}).status_code == 303
    listing = client.get("/memories")
    assert "Alice note" in listing.text and "Bob" not in listing.text, "the switcher lists only its agent"
    assert client.get(f"/memories/{theirs}?agent=bob").status_code == 403
    assert client.get(f"/memories/{theirs}?agent=alice").status_code == 404
    assert client.get(f"/memories/{mine}?agent=alice").status_code == 200


def test_a_change_without_this_sessions_csrf_token_is_refused_and_stores_nothing(
    console: tuple[Service, TestClient],
) -> None:
    service, client = console
    memory = service.write_narrative(AGENT, NarrativeIn(gesture="Dentist on Friday")).id
    page = client.get(f"/memories/{memory}")
    assert page.status_code == 200
    for token in (None, "forged-token"):
        data = {"note": "moved to Monday", "agent": AGENT, **({"csrf": token} if token else {})}
        refused = client.post(f"/memories/{memory}/amend", data=data)
        assert refused.status_code == 403 and "CSRF" in refused.text
    assert amendments(service, AGENT, memory) == ()
    done = client.post(
        f"/memories/{memory}/amend", data={"note": "moved to Monday", "agent": AGENT, "csrf": csrf_of(page.text)}
    )
    assert done.status_code == 303
    assert amendments(service, AGENT, memory) == ("moved to Monday",)


def test_another_hosts_name_and_another_sites_change_are_refused(console: tuple[Service, TestClient]) -> None:
    service, client = console
    memory = service.write_narrative(AGENT, NarrativeIn(gesture="Private")).id
    rebound = client.get("/memories", headers={"host": "attacker.example"})
    assert rebound.status_code == 403 and "Private" not in rebound.text
    token = csrf_of(client.get(f"/memories/{memory}").text)
    foreign = client.post(
        f"/memories/{memory}/amend",
        data={"note": "from elsewhere", "agent": AGENT, "csrf": token},
        headers={"origin": "https://attacker.example"},
    )
    assert foreign.status_code == 403
    same = client.post(
        f"/memories/{memory}/amend",
        data={"note": "from here", "agent": AGENT, "csrf": token},
        headers={"origin": LOOPBACK},
    )
    assert same.status_code == 303
    assert amendments(service, AGENT, memory) == ("from here",)


def test_after_logging_out_the_session_no_longer_opens_pages(console_for: Make) -> None:
    _, client = console_for("http://tideline.example:8766", console_host="0.0.0.0", console_password=PASSWORD)
    client.post("/login", data={"secret": PASSWORD, "next": "/memories"})
    token = csrf_of(client.get("/memories").text)
    assert client.post("/logout", data={"csrf": token}).status_code == 303
    assert client.get("/memories").status_code == 303
