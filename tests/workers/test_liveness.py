"""Telling a dead worker's tasks from a live one's, and sending the dead one's again under their own ids."""

from __future__ import annotations

import redis

from workers.liveness import HELD_PREFIX, Heartbeat, HeldTask, sweep

EMBED = HeldTask("task-1", "tideline.ingest.embed_pending", kwargs={"agent_id": "alice"})


def test_a_task_held_by_a_worker_that_is_gone_is_sent_again_once_under_its_own_id(redis_client: redis.Redis) -> None:
    redis_client.sadd(HELD_PREFIX + "ingest@gone#1", EMBED.dumps())
    sent: list[HeldTask] = []
    assert sweep(redis_client, sent.append, span=30) == 1
    assert sent == [EMBED]
    assert sweep(redis_client, sent.append, span=30) == 0  # its record went with it


def test_a_task_a_live_worker_holds_is_never_sent_again(redis_client: redis.Redis) -> None:
    heartbeat = Heartbeat(redis_client, "ingest@here", ["ingest"], lambda task: None, span=30)
    heartbeat.start()
    try:
        heartbeat.hold(EMBED)
        sent: list[HeldTask] = []
        assert sweep(redis_client, sent.append, span=30) == 0
        assert sent == []
    finally:
        heartbeat.stop()


def test_a_worker_stopped_gracefully_leaves_nothing_to_send_again(redis_client: redis.Redis) -> None:
    heartbeat = Heartbeat(redis_client, "ingest@here", ["ingest"], lambda task: None, span=30)
    heartbeat.start()
    heartbeat.hold(EMBED)
    heartbeat.stop()
    assert sweep(redis_client, lambda task: None, span=30) == 0


def test_a_task_keeps_its_chain_through_the_record() -> None:
    stage = HeldTask("t", "tideline.dream.refresh", kwargs={"agent_id": "a"}, options={"chain": [{"task": "next"}]})
    assert HeldTask.loads(stage.dumps()) == stage
